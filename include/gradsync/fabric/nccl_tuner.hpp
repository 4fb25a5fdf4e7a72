// What NCCL would run (`software: nccl`): its view of the topology (the graphs its search
// finds: channels and bandwidth per channel) and its tuner's choice per collective and size
// (algorithm, protocol, channels). `bench --algo auto` and the scenario runner's `auto` run
// this choice, as a real job does; the engine then charges that (algorithm, protocol)'s
// per-step costs (nccl_model.hpp). Pure model code.
//
// Pinned version: NCCL 2.30.7 (as nccl_model.hpp). Restated from NVIDIA/nccl:
//   - src/graph/search.cc (ncclTopoCompute): the speed arrays per GPU generation and the
//     search that takes the channel count × per-channel speed fitting the GPU's links (its
//     NVLink total, one NIC per channel across nodes), keeping a lower speed only when it
//     gives more bandwidth, then ncclTopoDupChannels (double the channels at half the speed
//     when the speed is >= 25 GB/s, except Hopper+ below 50 GB/s with more than 4 channels);
//   - src/graph/connect.cc (ncclTopoPostset): the communicator runs 2 × the ring graph's
//     channels (at most MAXCHANNELS 64), doubled again on Hopper+ across nodes when the ring
//     speed is above 45 GB/s and fewer than 16 channels;
//   - src/transport/nvls.cc (ncclNvlsTuning): NVLS channels 16 on Hopper, 24 (one node) or
//     32 on Blackwell, NVLS chunk 128 KiB;
//   - src/graph/tuning.cc (ncclTopoTuneModel, ncclTopoGetAlgoTime): latency and bandwidth of
//     every (algorithm, protocol); NVLS/NVLSTree busBw = channels × min(bwIntra · nvlsEff ·
//     (ch−1)/ch · 2, bwInter (× 2 for NVLSTree on ≤ 2 nodes), NVLSTree's per-channel cap);
//   - src/enqueue.cc (topoGetAlgoInfo): the fastest predicted (algorithm, protocol), then
//     Ring/Tree channels reduced while bytes < channels · threads · threadThreshold
//     (thresholds LL 8 × ranks for Ring, LL128 8, Simple 64 B per thread; threads 512, LL128
//     640, Simple Ring 256 on PCIe-class bandwidth), NVLS on nvlsChannels;
//     scheduleCollTasksToPlan: a channel gets at least 32 KiB of traffic (AllReduce moves 2 B
//     per byte, LL 4× that), so a small collective uses fewer channels still.
// What is approximated, and why: NCCL's search explores paths on the real PCI/NVLink tree;
// here the topology gives each GPU's NVLink (or PCIe) total, its fastest single path, and the
// NICs of its server, which is what the search's bandwidth bound depends on for the shipped
// shapes (NVSwitch servers, NVLink meshes, PCIe servers, one or more NICs per GPU).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "gradsync/collective/collective.hpp"
#include "gradsync/fabric/nccl_model.hpp"
#include "gradsync/topology/topology.hpp"
#include "gradsync/units/units.hpp"

namespace gradsync {

// One of NCCL's graphs, as its tuner reads it. Bandwidths in GB/s (1e9 B/s) per channel.
struct NcclGraph {
  std::uint32_t channels = 0;  // graph->nChannels; 0 = no such graph (the algorithm is off)
  double bw_intra = 0.0;       // graph->bwIntra
  double bw_inter = 0.0;       // graph->bwInter (= bw_intra on one node)
};

// NCCL's view of the ranks of one communicator on a topology.
struct NcclTopologyView {
  GpuGeneration gpu = GpuGeneration::Hopper;
  CpuVendor cpu = CpuVendor::Intel;
  LinkClass intra = LinkClass::NvLink;  // the graphs' typeIntra (NVLink or PCI)
  std::uint32_t ranks = 1;
  std::uint32_t nodes = 1;
  NcclGraph ring;                 // Ring graph (Tree uses the same channels in NCCL)
  NcclGraph tree;
  NcclGraph nvls;                 // channels = 0 where neither NVLS nor NVLSTree can run
  std::uint32_t comm_channels = 1;  // comm->nChannels: what a Ring/Tree collective may use
  std::uint32_t nvls_channels = 0;  // comm->nvlsChannels
  bool ll128 = true;                // LL128 enabled (NVLink inside nodes)
  // NVLS across servers with SHARP can run (nvls_sharp_devices() in rank_placement.hpp): NCCL's NVLS
  // algorithm on several nodes, which it offers only with CollNet.
  bool sharp = false;
  // CollNet can run (collnet_devices() in rank_placement.hpp: two servers or more whose GPU-l
  // NICs share a SHARP switch): NCCL's CollNetChain, with NCCL_COLLNET_ENABLE=1 and the SHARP
  // plugin, which network.sharp stands for. Its graph is the tree graph (search.cc pass 2
  // raises bwIntra "for trees (2 nodes or collnet)"), its bandwidth channels × bwIntra.
  bool collnet = false;
  // CollNetDirect's graph where it can run too (collnet and NVSwitch servers): one channel per
  // head GPU with a NIC, at most NCCL_MAX_DIRECT_ARITY + 1 = 8 (search.cc, as the NVLS heads
  // across nodes), at the speed the NICs and GPU links allow; channels = 0 elsewhere.
  NcclGraph collnet_direct;
  std::optional<double> nvls_efficiency;  // the topology's nvls_efficiency (nccl_model.hpp)
  NcclSettings settings;  // the topology's `nccl:` (protocols, tuner rules)
};

// NCCL's view of `rank_devices` (node-major, `ranks_per_node` per server when several) on
// `topology`. `in_switch`: NVLS (one NVSwitch domain) or NVLSTree (one per server) when the
// caller found it can run on these ranks (nvls_switch() / nvls_tree_devices()), else empty.
[[nodiscard]] NcclTopologyView nccl_topology_view(const Topology& topology,
                                                  const std::vector<DeviceId>& rank_devices,
                                                  std::uint32_t ranks_per_node,
                                                  std::optional<Algorithm> in_switch);

// The search of one graph, restated (see the header comment): the best channels × speed with
// speed ≤ max_path_bw and channels · speed ≤ total_bw, channels ≤ channel_limit, then the
// channel duplication. Exposed for tests. `inter`: the speed array across nodes.
[[nodiscard]] NcclGraph nccl_search_graph(GpuGeneration gpu, bool inter, double total_bw,
                                          double max_path_bw, std::uint32_t channel_limit);

struct NcclCandidate {
  Algorithm algorithm = Algorithm::Ring;
  NcclProtocol protocol = NcclProtocol::Simple;
  double latency_us = 0.0;        // NCCL's latency of this (algorithm, protocol)
  double bandwidth_GBps = 0.0;    // its algorithm bandwidth (busBw converted), 0 = disabled
  double predicted_us = 0.0;      // latency + bytes / (1000 · bandwidth)
};

struct NcclTuning {
  Algorithm algorithm = Algorithm::Ring;
  NcclProtocol protocol = NcclProtocol::Simple;
  std::uint32_t channels = 1;      // channels this collective runs on (after the reductions)
  double predicted_us = 0.0;       // NCCL's own prediction for the choice
  std::vector<NcclCandidate> candidates;  // every enabled (algorithm, protocol), NCCL's order
};

// NCCL's choice for one collective of `bytes` (the user's buffer: AllReduce's count × size).
// `allowed` restricts the algorithms (an explicit --algo); empty = NCCL's full set for `op`:
// Ring and Tree (AllReduce), NVLS on one NVSwitch domain, NVLSTree across such domains.
// Protocols are those of the topology's nccl.protocols; a matching nccl.tuner rule whose
// algorithm (and protocol) can run here is taken over NCCL's own choice, as a tuner plugin's.
// Throws std::invalid_argument when no allowed algorithm can run.
[[nodiscard]] NcclTuning nccl_tune(const NcclTopologyView& view, CollectiveOp op, Bytes bytes,
                                   const std::vector<Algorithm>& allowed = {});

// The graph an algorithm's bandwidth comes from: the tree graph for Tree, else the ring graph
// (Hierarchical and ParameterServer, which NCCL lacks, are costed as rings).
[[nodiscard]] const NcclGraph& nccl_graph(const NcclTopologyView& view, Algorithm algorithm);
// NCCL's bus bandwidth of that graph for nccl_cost(): channels × per-channel speed (bwIntra on
// ≤ 2 nodes, bwInter beyond, as ncclTopoTuneModel).
[[nodiscard]] BytesPerSecond nccl_bus_bandwidth(const NcclTopologyView& view, Algorithm algorithm);
// NcclOptions for nccl_cost() that match the view (generation, CPU, the graph's channels for
// the per-channel caps, LL128).
[[nodiscard]] NcclOptions nccl_options(const NcclTopologyView& view, Algorithm algorithm);

// Gives `request` NCCL's NVLS channels and heads of `view` (a view with NVLSTree in it), so
// that its NVLSTree plans pipeline in NCCL's loops (nvls_tree_pipeline_steps, collective.hpp).
void set_nvls_loops(CollectiveRequest& request, const NcclTopologyView& view);

}  // namespace gradsync
