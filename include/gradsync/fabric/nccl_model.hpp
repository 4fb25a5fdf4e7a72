// NCCL's software cost model for `software: nccl` (sim/fabric/README.md): the per-collective and
// per-step latencies, the protocol choice (LL, LL128, Simple) and each protocol's bandwidth
// relative to Simple, as NCCL's own tuner computes them. Pure model code (no SimGrid): the
// engine asks for one NcclStepCost per collective and then charges, per transfer, the
// per-step latency of the transfer's route class (see "How the engine applies it" below).
//
// Pinned version: NCCL 2.30.7. The constants and formulas are restated from
// NVIDIA/nccl's tuner; in 2.30 it lives in src/tuning/ (cost_model.cc: baseLatencies,
// hwLatencies, llMaxBws, per-channel caps, treeCorrectionFactor; ring.cc and tree.cc: the
// latency and bandwidth formulas; tuning_general.cc: t = lat + bytes / (1000 · algBw)); up to
// 2.28 the same numbers sat in src/graph/tuning.cc. Constants moved between releases (the
// 2.20-era tuning.cc had Tree/Simple base 0 and per-hop 28 µs, and Ring LL at busBw/4; 2.30 has
// 8.4, 4 µs and busBw/2), so a change of version means re-checking every table in
// sim/fabric/nccl_tables.hpp and the formulas of nccl_latency.cpp and nccl_cost.cpp.
//
// Units: NCCL's tables are in µs and GB/s (1e9 B/s); this API takes and returns Seconds,
// Bytes and BytesPerSecond.
//
// How the engine applies it (software: nccl only; software: none must not call any of this):
//   1. once per collective: NCCL's view of the plan's GPUs (nccl_tuner.hpp) gives the graph's
//      bus bandwidth and channels, the protocol (nccl_tune(): a tuner rule's, else NCCL's
//      fastest predicted) and the channels this size runs on; then
//      cost = nccl_cost(algorithm, protocol, op, ranks, nodes, intra, bytes, bus, options);
//   2. every transfer's bytes are scaled by 1 / cost.bandwidth_factor (protocol, Tree's
//      correction, the size's channels, NVLS's chunks: LL's flag words really do cross the
//      links), and flows carry no latency of their own;
//   3. the collective's latency, nccl_collective_latency(cost, longest intra route, longest
//      inter route), is added once to the bandwidth time, in step and in flow fidelity alike
//      (so both add the same latency; NCCL's model is also latency + bytes / bandwidth).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "gradsync/topology/fabric_registry.hpp"
#include "gradsync/collective/collective.hpp"
#include "gradsync/topology/topology.hpp"
#include "gradsync/units/units.hpp"

namespace gradsync {

inline constexpr std::string_view kNcclModelVersion = "2.30.7";

enum class NcclProtocol : std::uint8_t { LL, LL128, Simple };
// Rows of NCCL's per-architecture bandwidth caps: GpuGeneration (topology.hpp).
// Multi-node LL caps and the network post overhead depend on the host CPU.
enum class CpuVendor : std::uint8_t { Intel, Amd };

[[nodiscard]] std::string_view to_string(NcclProtocol protocol);  // "LL", "LL128", "Simple"
[[nodiscard]] std::string_view to_string(LinkClass link_class);   // "nvlink", "pci", "net"

// The class of one fabric (its fabric_registry() row): nvlink → NvLink; pcie, socket → Pci;
// infiniband, roce, ethernet, efa → Net.
[[nodiscard]] LinkClass link_class(Fabric fabric);
// The class of a route from its links' fabrics: Net if any link is a network fabric, else Pci
// if any is pcie/socket, else NvLink (an empty route — same device — is NvLink). O(links).
[[nodiscard]] LinkClass route_link_class(std::span<const Fabric> fabrics);
[[nodiscard]] LinkClass route_link_class(const Topology& topology, const Route& route);

// NVLS (NVLink SHARP, Algorithm::Nvls) bandwidth: the share of a GPU port's NVLink effective
// bandwidth (the Ring-calibrated default efficiency 0.80, fabric_defaults.cpp) that NVLS
// push/pull traffic gets; the engine scales NVLS transfers by it (NcclStepCost::
// bandwidth_factor). Hopper's is sourced from test/data/nccl-tests/published.csv: GTC-H100-NVLS busbw
// 480 GB/s (8× H100; NVIDIA GTC24 S62129 / GTC25 S72583 slide 12) and
// AWS-p5x1-8589934592 / -17179869184 (480.4 / 483.1 GB/s, NCCL's default is NVLS there). NVLS
// moves S each way per GPU port, so busbw = 2(n−1)/n · 450 · 0.80 · f: f = 480 / (1.75 · 360)
// = 0.762. A topology's nvls_efficiency (node.intra.nvls_efficiency) overrides it.
inline constexpr double kNvlsBandwidthFactor = 0.76;
// NCCL's own NVLS efficiency per architecture (2.30.7 src/tuning/nvls.cc, nvlsEfficiency:
// Hopper 0.85, Blackwell 0.74): the NVSwitch's reduction throughput grows less than NVLink5's
// line rate. gradsync keeps NCCL's ratio between generations, not its absolute value (NCCL
// applies it to its own channel bandwidth, gradsync to the calibrated port rate).
inline constexpr double kNcclNvlsEfficiencyHopper = 0.85;
inline constexpr double kNcclNvlsEfficiencyBlackwell = 0.74;
// The default NVLS factor of a GPU generation: kNvlsBandwidthFactor on Hopper (and on earlier
// generations, which have no NVLS); Blackwell 0.76 · 0.74 / 0.85 = 0.662, derived, not fitted
// on a Blackwell row: GTC-B200-NVLS 850 GB/s → 834 predicted (0.98×), GTC-GB200-NVL72-SHARP
// 850 → 940 (1.11×, 72 GPUs).
[[nodiscard]] double nvls_bandwidth_factor(GpuGeneration gpu);

// NCCL's log2i (floor(log2(n)), n >= 1) and a ring collective's steps (nsteps: AllReduce
// 2(n-1), ReduceScatter/AllGather n-1, Broadcast/Reduce n), as tuning.cc uses them.
[[nodiscard]] int nccl_log2i(std::uint64_t n);
[[nodiscard]] std::uint32_t nccl_nsteps(CollectiveOp op, std::uint32_t ranks);

// NVLS and NVLSTree move data per channel in chunks whose size NCCL lowers for smaller
// messages (2.30.7 src/enqueue.cc calcCollChunking; src/transport/nvls.cc: chunk 128 KiB,
// NVLSTree at most 64 KiB from 4 nodes). With c = channels × heads concurrent chunks:
//   NVLS:     128 KiB from 64·c·128 KiB, 64 KiB from 8·c·64 KiB, 32 KiB from 2·c·32 KiB, else 16 KiB;
//   NVLSTree: its maximum (128 or 64 KiB) from 4·c·that, 64 KiB from 1·c·64 KiB, else 32 KiB.
[[nodiscard]] Bytes nccl_nvls_chunk(Algorithm algorithm, Bytes bytes, std::uint32_t channels,
                                    std::uint32_t heads, std::uint32_t nodes);
inline constexpr double kNcclNvlsChunkBytes = 128.0 * 1024;  // NCCL_NVLS_CHUNKSIZE default
// Per-chunk overhead of an NVLS channel (the chunk's synchronisation through the NVSwitch,
// which its data cannot overlap): a channel moving chunks of c bytes at rate b delivers
// c / (c + overhead·b). Fitted on AWS-p5x1-2097152 .. -17179869184 (8× H100, NCCL's NVLS
// from 2 MiB) with NCCL's 25 µs NVLS latency and the chunk schedule above: 1.3 µs, every
// row within 15 % (median 4 %); the same NVLS factor then holds the 128 KiB plateau.
inline constexpr double kNvlsChunkOverheadUs = 1.3;
// The share of NVLS's plateau bandwidth (chunks of kNcclNvlsChunkBytes) that chunks of
// `chunk` bytes reach, for a channel whose plateau rate is `channel_rate`: (c/(c+c0)) /
// (cmax/(cmax+c0)), c0 = the overhead's bytes at the chunks' raw rate. 1 at the plateau.
// `overhead_us`: the per-chunk overhead (a topology's nccl.nvls_chunk_overhead).
[[nodiscard]] double nvls_chunk_efficiency(Bytes chunk, BytesPerSecond channel_rate,
                                           double overhead_us = kNvlsChunkOverheadUs);

struct NcclOptions {
  GpuGeneration gpu = GpuGeneration::Hopper;
  CpuVendor cpu = CpuVendor::Intel;
  // NCCL channels. 0 = unknown: the per-channel bandwidth caps are not applied and the Ring
  // "plateau" threshold (bytes / (channels · ranks) ≥ 64) is taken with one channel.
  std::uint32_t channels = 0;
  // NCCL_PROTO=^LL128 when false. LL128 is also off unless the intra-node class is NvLink
  // (NCCL enables it only up to PATH_NVB inside a node).
  bool allow_ll128 = true;
  bool allow_ll = true;      // NCCL_PROTO without LL when false
  bool allow_simple = true;  // NCCL_PROTO without Simple when false
  // NVLS / NVLSTree: the NVLink legs' share of the port (the topology's nvls_efficiency);
  // empty = nvls_bandwidth_factor(gpu).
  std::optional<double> nvls_efficiency;
  // NVLS / NVLSTree channels (comm->nvlsChannels) and heads per channel (the GPUs of a server
  // for NVLS, its NICs for NVLSTree): they set the chunk schedule (nccl_nvls_chunk); 0 = no
  // chunk model (the plateau bandwidth at every size).
  std::uint32_t nvls_channels = 0;
  std::uint32_t nvls_heads = 0;
  // Channels the collective runs on at this size (nccl_tune(): NCCL lowers them for small
  // messages so that every channel gets its threads' worth of work), and the communicator's
  // (comm->nChannels). 0 = unknown: no per-size channel limit. Each channel is one thread
  // block whose throughput is bounded (nccl_channel_bus_bandwidth()), so fewer channels bound
  // the collective's bandwidth; NCCL's own prediction ignores this (it reads the graph's
  // channels), so `predicted` and the protocol choice do not change.
  std::uint32_t run_channels = 0;
  std::uint32_t comm_channels = 0;
  // A machine's departures from NCCL's constants (the topology's nccl.latency_scale,
  // channel_scale, nvls_chunk_overhead; what `gradsync calibrate` fits). They change what
  // the collective costs (base, per-step latencies, channel_factor, the NVLS chunk share),
  // not NCCL's own prediction (`latency`, `predicted`), so not NCCL's choice either: NCCL's
  // tuner does not know its host is slower than its tables.
  double latency_scale = 1.0;
  double channel_scale = 1.0;
  double nvls_chunk_overhead_us = kNvlsChunkOverheadUs;

  [[nodiscard]] double nvls_factor() const {
    return nvls_efficiency.value_or(nvls_bandwidth_factor(gpu));
  }
};

// NCCL's raw tables (2.30.7), for Ring and Tree (and NVLS: base 0, NVLink hop 25 µs, NET hop
// 18 µs; NVLSTree: base 0, NVLink 25 µs, NET 20.9 µs; both Simple only, other protocols or PCI
// give 0). Hierarchical and ParameterServer have no NCCL
// counterpart and use the Ring row (both are built from ring/point-to-point sends).
[[nodiscard]] Seconds nccl_base_latency(Algorithm algorithm, NcclProtocol protocol);
[[nodiscard]] Seconds nccl_hw_latency(LinkClass link, Algorithm algorithm, NcclProtocol protocol);
// Network post overhead per ring step across nodes: 1 µs (Intel and others), 2 µs (AMD).
[[nodiscard]] Seconds nccl_net_overhead(CpuVendor cpu);

// The bus bandwidth one channel (one thread block) of (algorithm, protocol) sustains, GB/s:
//   LL128: NCCL's per-channel caps (perChMaxRingLL128Bws, perChMaxTreeLL128Bws);
//   LL: the LL128 cap × (8/16) / (120/128): the same thread block storing 16-byte lines with 8
//       bytes of data (LL) instead of 128-byte lines with 120 (LL128) — derived from NCCL's
//       table, not fitted (NCCL has no per-channel LL cap; its llMaxBws cap the total);
//   Simple: Tree's perChMaxTreeBws; Ring: the bus bandwidth over the communicator's
//       channels (`bus` / comm_channels), its share when every channel runs.
[[nodiscard]] double nccl_channel_bus_bandwidth(Algorithm algorithm, NcclProtocol protocol,
                                                GpuGeneration gpu, std::uint32_t nodes,
                                                double bus_GBps, std::uint32_t comm_channels);

// Whether NCCL would consider `protocol` here (as NcclOptions says; LL128 needs NVLink too).
[[nodiscard]] bool nccl_protocol_enabled(NcclProtocol protocol, LinkClass intra,
                                         const NcclOptions& options = {});

struct NcclStepCost {
  NcclProtocol protocol = NcclProtocol::Simple;
  Seconds base{0.0};            // once per collective (NCCL baseLat; × the Ring plateau factor)
  Seconds per_step_intra{0.0};  // per algorithm step over an intra-node hop (NVLink or PCI)
  Seconds per_step_inter{0.0};  // per algorithm step over an inter-node (NET) hop
  // Bandwidth of this protocol relative to Simple for the same algorithm (LL ≤ 0.5, LL128
  // ≤ 0.92 for Ring; Tree LL 1/3.8, LL128 7/9 or 120/128), caps included.
  double protocol_factor = 1.0;
  // The share of that bandwidth the size's channels reach (options.run_channels × a
  // channel's bandwidth over the protocol's; 1 when every channel runs or unknown).
  double channel_factor = 1.0;
  // What to scale the simulated bandwidth by: this (algorithm, protocol)'s bus bandwidth in
  // NCCL's model divided by the bus bandwidth estimate given (Ring Simple = 1; Tree includes
  // NCCL's 0.92 and its size-dependent treeCorrectionFactor).
  double bandwidth_factor = 1.0;
  // The same for transfers whose route crosses the network; equal to bandwidth_factor except
  // for NVLSTree, whose NVLS legs (NVLink) and tree legs (network) differ.
  double bandwidth_factor_net = 1.0;
  std::uint32_t steps = 0;        // steps in NCCL's latency formula
  std::uint32_t inter_steps = 0;  // of which over the network
  // NCCL's latency term: base + (steps − inter_steps)·per_step_intra + inter_steps·per_step_inter.
  Seconds latency{0.0};
  // NCCL's predicted time for the whole collective: latency + bytes / (1000 · algBw).
  Seconds predicted{0.0};

  [[nodiscard]] Seconds per_step(LinkClass route_class) const {
    return route_class == LinkClass::Net ? per_step_inter : per_step_intra;
  }
};

// NCCL's cost for one (algorithm, protocol). `ranks` ≥ 1, 1 ≤ `nodes` ≤ ranks; `intra` is the
// class of the links inside a node (NvLink or Pci); `bus_bandwidth` is the Ring/Simple bus
// bandwidth the topology can sustain (NCCL's nChannels · bw; nccl_bus_bandwidth() in nccl_tuner.hpp).
// Tree supports AllReduce only (as NCCL). Nvls: AllReduce, Simple, NvLink, one node (else
// invalid_argument); base 0, per_step_intra = 12.5 µs per leg (push, pull: NCCL's 25 µs NVLink
// hop split over the two), steps 2, bandwidth_factor options.nvls_factor(), predicted = 25 µs +
// S / (bus · that factor). NvlsTree: AllReduce, Simple, NvLink; base 0, per_step_intra
// 6.25 µs (four NVLink legs share NCCL's 25 µs hop), per_step_inter 20.9 µs, steps 4 + 2·log2i
// (nodes), bandwidth_factor options.nvls_factor() on NVLink legs and 1 on network legs
// (bandwidth_factor_net), predicted = 25 + 2·log2i(nodes)·20.9 µs + S / (bus · that factor). Hierarchical and ParameterServer get Ring's constants
// and bandwidths with their own step counts (hierarchical 2(ppn−1) + 2(nodes−1), of which
// 2(nodes−1) across nodes; ps 2); their `predicted` is only indicative. One rank costs nothing.
// Throws std::invalid_argument on impossible input. Allocation-free, a few dozen flops: call it
// once per collective, then per transfer only cost.per_step(class of the transfer's route).
[[nodiscard]] NcclStepCost nccl_cost(Algorithm algorithm, NcclProtocol protocol, CollectiveOp op,
                                     std::uint32_t ranks, std::uint32_t nodes, LinkClass intra,
                                     Bytes bytes, BytesPerSecond bus_bandwidth,
                                     const NcclOptions& options = {});
// Same, with the protocol NCCL would pick: the enabled one with the lowest `predicted` time.
[[nodiscard]] NcclStepCost nccl_cost(Algorithm algorithm, CollectiveOp op, std::uint32_t ranks,
                                     std::uint32_t nodes, LinkClass intra, Bytes bytes,
                                     BytesPerSecond bus_bandwidth, const NcclOptions& options = {});


// The latency NCCL's model gives the collective, charged once (step and flow fidelity): base
// + (steps − inter_steps) · max(longest intra route latency, per_step_intra) + inter_steps ·
// max(longest inter route latency, per_step_inter). NCCL's per-hop latencies already include
// the wire, so a route's latency counts only where it exceeds them (never their sum).
[[nodiscard]] Seconds nccl_collective_latency(const NcclStepCost& cost, Seconds intra_route_latency,
                                              Seconds inter_route_latency);

}  // namespace gradsync
