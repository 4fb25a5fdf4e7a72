// NCCL's view of a topology and its tuner's choice (nccl_tuner.hpp), pinned to NCCL 2.30.7.
// The expected graphs, channels and chunks are worked out by hand below from NCCL's tables
// (src/graph/search.cc speed arrays, connect.cc, enqueue.cc, transport/nvls.cc), so a wrong
// array entry, duplication rule or threshold changes a number and fails. The tuner's choices
// at 8 x H100 (Ring/LL at 1 MiB, NVLS from 2 MiB) follow from NCCL's latency and bandwidth
// tables (LL's 15 us against NVLS's 25 us). The published AWS-p5x1 run agrees: 1 MiB took
// 28.6 us (gradsync's Ring/LL 28.0, its NVLS 35.5 on aws-p5-1node.yaml), 2 MiB 43.5 us (NVLS
// 43.9, Ring/LL 41.0).
#include <doctest/doctest.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "gradsync/topology/cluster_spec.hpp"
#include "gradsync/units/config_error.hpp"
#include "gradsync/engine/simulation.hpp"
#include "gradsync/fabric/nccl_model.hpp"
#include "gradsync/fabric/nccl_tuner.hpp"
#include "gradsync/topology/topology.hpp"
#include "gradsync/units/units.hpp"
#include "../exact_link_group.hpp"

using namespace gradsync;
using namespace gradsync::literals;

namespace {

constexpr CollectiveOp kAllReduce = CollectiveOp::AllReduce;
constexpr double kOneMiB = 1024.0 * 1024.0;


// `nodes` servers of `gpus` GPUs on one NVSwitch (`nvlink` per GPU per direction) with `nics`
// NICs of `nic` each, on one InfiniBand switch.
Topology nvswitch_cluster(int nodes, int gpus, BytesPerSecond nvlink, int nics,
                          BytesPerSecond nic) {
  ClusterSpec spec;
  spec.name = "tuner-test";
  spec.nodes = nodes;
  spec.node.gpus = gpus;
  spec.node.intra = exact_link_group(Fabric::NvLink, nvlink);
  spec.node.intra_shape = IntraShape::Switch;
  spec.node.nics = nics;
  spec.node.nic_bandwidth = nic;
  if (nics > 0) spec.node.pcie = exact_link_group(Fabric::Pcie, 64_GBps);
  spec.node.origin = SourceMark{"cluster.yaml", 3, 1};
  if (nodes > 1) {
    NetworkSpec net;
    net.fabric = Fabric::InfiniBand;
    net.shape = NetworkShape::SingleSwitch;
    net.efficiency = 1.0;
    net.link_latency = 500_ns;
    net.switch_latency = 300_ns;
    net.origin = SourceMark{"cluster.yaml", 9, 1};
    spec.network = net;
  }
  spec.origin = SourceMark{"cluster.yaml", 1, 1};
  return expand_cluster(spec);
}

NcclTunerRule rule(double min_bytes, double max_bytes, const char* algorithm,
                   const char* protocol) {
  NcclTunerRule r;
  r.min_bytes = min_bytes;
  r.max_bytes = max_bytes;
  r.algorithm = algorithm;
  r.protocol = protocol;
  return r;
}

NcclTopologyView view_of(const Topology& t, int gpus_per_node, std::optional<Algorithm> nvls) {
  return nccl_topology_view(t, t.gpus(), static_cast<std::uint32_t>(gpus_per_node), nvls);
}

// One H100 server with NCCL's search at 360 GB/s (its 18 x 20.6 = 370.8 gives the same 12 x 30).
NcclTopologyView h100_server(std::uint32_t ranks = 8) {
  NcclTopologyView v;
  v.gpu = GpuGeneration::Hopper;
  v.ranks = ranks;
  v.ring = nccl_search_graph(GpuGeneration::Hopper, false, 360.0, 360.0, 32);
  v.tree = v.ring;
  v.comm_channels = 2 * v.ring.channels;
  v.nvls = NcclGraph{ranks, 60.0, 60.0};
  v.nvls_channels = 16;
  return v;
}

}  // namespace

TEST_CASE("graph search: channels x speed per GPU generation, then NCCL's duplication") {
  struct Case {
    const char* why;
    GpuGeneration gpu;
    double total;  // GB/s, also the fastest single path (an NVSwitch)
    std::uint32_t channels;
    double speed;
  };
  const Case cases[] = {
      {"Hopper 360: 6 x 60 fills the links, >= 50 so duplicated to 12 x 30",
       GpuGeneration::Hopper, 360.0, 12, 30.0},
      {"Ampere 12 x 20 = 240: 6 x 40, duplicated to 12 x 20", GpuGeneration::Ampere, 240.0, 12,
       20.0},
      {"Blackwell 18 x 40 = 720: 8 x 90, duplicated to 16 x 45", GpuGeneration::Blackwell, 720.0,
       16, 45.0},
      {"Hopper 280: 4 x 60 (240), 5 x 50 (250), then 7 x 40 fills it; below 50 GB/s with more "
       "than 4 channels it is not duplicated",
       GpuGeneration::Hopper, 280.0, 7, 40.0},
      {"a PCIe-class path, Ampere array, 12 GB/s: 1 x 12, below 25 GB/s so not duplicated",
       GpuGeneration::Ampere, 12.0, 1, 12.0},
  };
  for (const Case& c : cases) {
    CAPTURE(c.why);
    const NcclGraph g = nccl_search_graph(c.gpu, false, c.total, c.total, 32);
    CHECK(g.channels == c.channels);
    CHECK(g.bw_intra == doctest::Approx(c.speed));
  }
}

TEST_CASE("two 8 x H100 servers, 8 NICs of 400 Gb/s: NCCL's graphs and channels") {
  const Topology t = nvswitch_cluster(2, 8, 450_GBps, 8, 400_Gbps);
  const NcclTopologyView v = view_of(t, 8, Algorithm::NvlsTree);
  CHECK(v.gpu == GpuGeneration::Hopper);
  CHECK(v.nodes == 2);
  CHECK(v.ranks == 16);
  CHECK(v.intra == LinkClass::NvLink);
  // NCCL's view comes from the hardware, not the links' own efficiency (1 here): a NIC is
  // 50 GB/s x 0.96 (InfiniBand's default share) = 48 GB/s, the GPU's NVLink 18 x 20.6 = 370.8
  // GB/s (topo.h SM90_NVLINK_BW). Ring:
  // 48 GB/s fits a NIC but 8 channels x 48 exceed 370.8 (7 x 48 = 336); 8 x 45 = 360 is the
  // most. No duplication (Hopper, < 50 GB/s, > 4 channels).
  CHECK(v.ring.channels == 8);
  CHECK(v.ring.bw_inter == doctest::Approx(45.0));
  // comm channels: 2 x 8 = 16, not doubled again (only below 16).
  CHECK(v.comm_channels == 16);
  // Tree: the ring's channels, intra speed raised to the fastest <= 2 x 45 the links allow
  // (370.8 x 8/7 over 8 channels -> 53 per channel at most; the SM90 inter array's top is 48).
  CHECK(v.tree.channels == 8);
  CHECK(v.tree.bw_intra >= v.ring.bw_inter);
  CHECK(v.tree.bw_intra <= 2.0 * v.ring.bw_inter);
  // NVLSTree: one head per NIC, 16 NVLS channels on Hopper.
  CHECK(v.nvls.channels == 8);
  CHECK(v.nvls_channels == 16);
  // Bus bandwidth NCCL's tuner reads on <= 2 nodes: channels x bwIntra.
  CHECK(nccl_bus_bandwidth(v, Algorithm::Ring).gigabytes_per_second() ==
        doctest::Approx(8 * v.ring.bw_intra));
}

TEST_CASE("NVLS graph on one NVLink domain: pass 2 raises bwInter to twice bwIntra (NVL72 runs NVLS)") {
  // GB200 NVL72 as one NVLink domain: 72 GPUs, NVLink5 900 GB/s per GPU (18 x 40.1 = 721.8 GB/s
  // in NCCL's view). NVLS: min(32 heads, 72 GPUs) channels at the fastest SM100 speed with
  // (32 + 1) x s <= 721.8, i.e. 20 GB/s; pass 2 of search.cc then raises bwInter one speed at
  // a time (24, 30, 40) while it is below 2 x bwIntra, since nothing on one node charges it.
  const Topology nvl72 = nvswitch_cluster(1, 72, 900_GBps, 0, 400_Gbps);
  const NcclTopologyView v = view_of(nvl72, 72, Algorithm::Nvls);
  CHECK(v.gpu == GpuGeneration::Blackwell);
  CHECK(v.nvls.channels == 32);
  CHECK(v.nvls.bw_intra == doctest::Approx(20.0));
  CHECK(v.nvls.bw_inter == doctest::Approx(40.0));
  // tuning.cc: bw = min(bwIntra x 0.74 x 31/32 x 2, bwInter) = 28.7 per channel, bus 918 GB/s,
  // algbw 918 x 72/142 = 465.5 GB/s, above the ring's 16 x 45 x 72/142 = 365.1: NVLS at 4 GiB,
  // as the published NVL72 run's 839 GB/s busbw (above any NVLink5 ring) shows NCCL chose
  // (test/data/nccl-tests/unchecked/GH-cwnccltests43-gb200-nvl72-1rack.csv).
  const NcclTuning big = nccl_tune(v, kAllReduce, Bytes(4096 * kOneMiB));
  CHECK(big.algorithm == Algorithm::Nvls);
  for (const NcclCandidate& c : big.candidates)
    if (c.algorithm == Algorithm::Nvls)
      CHECK(c.bandwidth_GBps == doctest::Approx(32 * 20.0 * 0.74 * 31.0 / 32.0 * 2.0 * 72 / 142));
  // 8 x H100 (18 x 20.6 = 370.8 GB/s of NVLink each): 8 heads at 50 GB/s would need
  // (8 + 1) x 50 = 450 on a head's link (search.cc ncclTopoSearchTryNvls charges the head
  // twice), so 40; pass 2 raises bwInter to 60, the top of the SM90 intra array. NCCL's own
  // log on such a server (NVIDIA/nccl#1197, 18 x 20.0 links): "nChannels 8, bw
  // 40.000000/60.000000". The n/(n-1) bound alone (8 x 50 <= 423.8) would give 50.
  const NcclTopologyView h = view_of(nvswitch_cluster(1, 8, 450_GBps, 0, 400_Gbps), 8,
                                     Algorithm::Nvls);
  CHECK(h.nvls.channels == 8);
  CHECK(h.nvls.bw_intra == doctest::Approx(40.0));
  CHECK(h.nvls.bw_inter == doctest::Approx(60.0));
  // Ring and tree graphs of the same server, as the same log has them: "Pattern 4, crossNic 0,
  // nChannels 12, bw 30.000000/30.000000" and "Pattern 1, ... nChannels 12, bw 30/30": the tree
  // searches the ring's 12 channels (init.cc), not the 14 that 370.8 x 8/7 would hold at 30.
  CHECK(h.ring.channels == 12);
  CHECK(h.ring.bw_intra == doctest::Approx(30.0));
  CHECK(h.tree.channels == 12);
  CHECK(h.tree.bw_intra == doctest::Approx(30.0));
  CHECK(h.comm_channels == 24);
  // 4 GPUs of it: 5 x 60 = 300 fits, 60/60.
  const NcclTopologyView h4 = view_of(nvswitch_cluster(1, 4, 450_GBps, 0, 400_Gbps), 4,
                                      Algorithm::Nvls);
  CHECK(h4.nvls.channels == 4);
  CHECK(h4.nvls.bw_intra == doctest::Approx(60.0));
  // Across servers (one 400G NIC per GPU, 48 GB/s in NCCL's view): 48 gives 6 heads
  // (7 x 48 <= 370.8), 45 gives 7, 40 gives all 8 (more NVLS channels win, search.cc
  // ncclTopoCompareGraphs); pass 2 then raises bwInter to 48, what the NICs carry.
  const NcclTopologyView two = view_of(nvswitch_cluster(2, 8, 450_GBps, 8, 400_Gbps), 8,
                                       Algorithm::NvlsTree);
  CHECK(two.nvls.channels == 8);
  CHECK(two.nvls.bw_intra == doctest::Approx(40.0));
  CHECK(two.nvls.bw_inter == doctest::Approx(48.0));
  // Two GB200 NVL72 racks, a 400G NIC per GPU: the speed drops while more heads fit, to 32
  // heads at 20 GB/s (33 x 20 <= 721.8); bwInter rises to 40 = 2 x bwIntra, within the NICs.
  const NcclTopologyView racks = view_of(nvswitch_cluster(2, 72, 900_GBps, 72, 400_Gbps), 72,
                                         Algorithm::NvlsTree);
  CHECK(racks.nvls.channels == 32);
  CHECK(racks.nvls.bw_intra == doctest::Approx(20.0));
  CHECK(racks.nvls.bw_inter == doctest::Approx(40.0));
  // Fewer NICs than GPUs: one head per NIC, at the fastest speed (4 x 48, 5 x 48 <= 370.8).
  const NcclTopologyView four_nics = view_of(nvswitch_cluster(2, 8, 450_GBps, 4, 400_Gbps), 8,
                                             Algorithm::NvlsTree);
  CHECK(four_nics.nvls.channels == 4);
  CHECK(four_nics.nvls.bw_intra == doctest::Approx(48.0));
}

TEST_CASE("no NVLS graph without an NVSwitch domain: Ring and Tree only") {
  const Topology t = nvswitch_cluster(1, 8, 450_GBps, 0, 400_Gbps);
  const NcclTopologyView v = view_of(t, 8, std::nullopt);
  CHECK(v.nvls.channels == 0);
  const NcclTuning big = nccl_tune(v, kAllReduce, Bytes(1024 * kOneMiB));
  CHECK((big.algorithm == Algorithm::Ring || big.algorithm == Algorithm::Tree));
  for (const NcclCandidate& c : big.candidates)
    CHECK((c.algorithm == Algorithm::Ring || c.algorithm == Algorithm::Tree));
  CHECK_THROWS_AS((void)nccl_tune(v, kAllReduce, Bytes(kOneMiB), {Algorithm::Nvls}),
                  std::invalid_argument);
}

TEST_CASE("8 x H100 tuner: Ring/LL at 1 MiB, NVLS from 2 MiB, on 16 NVLS channels") {
  const NcclTopologyView v = h100_server();
  const NcclTuning small = nccl_tune(v, kAllReduce, Bytes(kOneMiB));
  CHECK(small.algorithm == Algorithm::Ring);
  CHECK(small.protocol == NcclProtocol::LL);
  const NcclTuning two = nccl_tune(v, kAllReduce, Bytes(2 * kOneMiB));
  CHECK(two.algorithm == Algorithm::Nvls);
  CHECK(two.protocol == NcclProtocol::Simple);
  CHECK(two.channels == 16);
  // The choice is the fastest prediction among the candidates.
  for (const NcclCandidate& c : two.candidates) CHECK(two.predicted_us <= c.predicted_us + 1e-9);
  // An explicit algorithm restricts the candidates; the best protocol of it is taken.
  const NcclTuning ring = nccl_tune(v, kAllReduce, Bytes(2 * kOneMiB), {Algorithm::Ring});
  CHECK(ring.algorithm == Algorithm::Ring);
  CHECK(ring.predicted_us > two.predicted_us);
  // Other collectives have no Tree or NVLS here.
  const NcclTuning ag = nccl_tune(v, CollectiveOp::AllGather, Bytes(64 * kOneMiB));
  CHECK(ag.algorithm == Algorithm::Ring);
}

TEST_CASE("channels per size: NCCL lowers them until each gets its threads' work") {
  const NcclTopologyView v = h100_server();
  REQUIRE(v.comm_channels == 24);
  // 64 KiB, Ring/LL: threshold 8 x 8 ranks = 64 B/thread x 512 threads = 32 KiB per channel
  // -> 2 channels; the 32 KiB cell rule (2 B of traffic per byte, LL 4x) allows 16.
  const NcclTuning t64k = nccl_tune(v, kAllReduce, Bytes(64 * 1024.0), {Algorithm::Ring});
  REQUIRE(t64k.protocol == NcclProtocol::LL);
  CHECK(t64k.channels == 2);
  // 1 MiB, Ring/LL: 1 MiB / 32 KiB = 32 >= 24 channels: all of them.
  const NcclTuning t1m = nccl_tune(v, kAllReduce, Bytes(kOneMiB), {Algorithm::Ring});
  REQUIRE(t1m.protocol == NcclProtocol::LL);
  CHECK(t1m.channels == 24);
  // 4 KiB: one channel.
  CHECK(nccl_tune(v, kAllReduce, Bytes(4096.0), {Algorithm::Ring}).channels == 1);
}

TEST_CASE("a four-GPU Blackwell server: no NVLS at 1 GiB (NVLS's 3/4 port share loses)") {
  NcclTopologyView v;
  v.gpu = GpuGeneration::Blackwell;
  v.ranks = 4;
  v.ring = nccl_search_graph(GpuGeneration::Blackwell, false, 720.0, 720.0, 32);
  v.tree = v.ring;
  v.comm_channels = 2 * v.ring.channels;
  v.nvls = NcclGraph{4, 90.0, 90.0};
  v.nvls_channels = 24;
  const NcclTuning t = nccl_tune(v, kAllReduce, Bytes(1024 * kOneMiB));
  CHECK(t.algorithm != Algorithm::Nvls);
  // Eight GPUs on the same server: NVLS wins at 1 GiB.
  v.ranks = 8;
  v.nvls.channels = 8;
  CHECK(nccl_tune(v, kAllReduce, Bytes(1024 * kOneMiB)).algorithm == Algorithm::Nvls);
}

TEST_CASE("nccl.protocols and nccl.tuner: NCCL_PROTO and a tuner plugin's rules") {
  NcclTopologyView v = h100_server();
  // Without LL, 1 MiB runs LL128 or Simple.
  v.settings.ll = false;
  const NcclTuning no_ll = nccl_tune(v, kAllReduce, Bytes(kOneMiB), {Algorithm::Ring});
  CHECK(no_ll.protocol != NcclProtocol::LL);
  for (const NcclCandidate& c : no_ll.candidates) CHECK(c.protocol != NcclProtocol::LL);
  // Without Simple, NVLS (Simple only) cannot run.
  v.settings = NcclSettings{};
  v.settings.simple = false;
  for (const NcclCandidate& c : nccl_tune(v, kAllReduce, Bytes(64 * kOneMiB)).candidates) {
    CHECK(c.algorithm != Algorithm::Nvls);
    CHECK(c.protocol != NcclProtocol::Simple);
  }
  // A rule takes over NCCL's choice in its size range only.
  v.settings = NcclSettings{};
  v.settings.tuner.push_back(rule(4 * kOneMiB, 64 * kOneMiB, "tree", "simple"));
  const NcclTuning ruled = nccl_tune(v, kAllReduce, Bytes(16 * kOneMiB));
  CHECK(ruled.algorithm == Algorithm::Tree);
  CHECK(ruled.protocol == NcclProtocol::Simple);
  CHECK(nccl_tune(v, kAllReduce, Bytes(128 * kOneMiB)).algorithm == Algorithm::Nvls);
  // A rule naming an algorithm that cannot run here falls back to NCCL's own choice.
  v.settings.tuner = {rule(0.0, 1e18, "nvlstree", "")};
  CHECK(nccl_tune(v, kAllReduce, Bytes(128 * kOneMiB)).algorithm == Algorithm::Nvls);
  // nccl.algorithms (NCCL_ALGO; NCCL_NVLS_ENABLE=0 is [ring, tree]): NCCL chooses among those
  // only, so at 128 MiB, where it runs NVLS, it runs the faster of Ring and Tree instead.
  v.settings = NcclSettings{};
  v.settings.algorithms = {"ring", "tree"};
  const NcclTuning no_nvls = nccl_tune(v, kAllReduce, Bytes(128 * kOneMiB));
  CHECK((no_nvls.algorithm == Algorithm::Ring || no_nvls.algorithm == Algorithm::Tree));
  for (const NcclCandidate& c : no_nvls.candidates) CHECK(c.algorithm != Algorithm::Nvls);
  v.settings.algorithms = {"ring"};
  CHECK(nccl_tune(v, kAllReduce, Bytes(kOneMiB)).algorithm == Algorithm::Ring);
  CHECK(nccl_tune(v, kAllReduce, Bytes(128 * kOneMiB)).algorithm == Algorithm::Ring);
  // One algorithm named by the caller (bench --algo) runs whatever nccl.algorithms says.
  CHECK(nccl_tune(v, kAllReduce, Bytes(128 * kOneMiB), {Algorithm::Nvls}).algorithm ==
        Algorithm::Nvls);
  // Nothing of the list can run (NVLSTree needs several servers): an error at the key.
  v.settings.algorithms = {"nvlstree"};
  v.settings.algorithms_origin = SourceMark{"t.yaml", 9, 3};
  try {
    (void)nccl_tune(v, kAllReduce, Bytes(kOneMiB));
    FAIL("expected a ConfigError");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) ==
          "t.yaml:9:3: error: nccl.algorithms: none of nvlstree can run allreduce on these 8 "
          "GPUs (1 server)");
  }
}

TEST_CASE("NVLS chunk schedule (enqueue.cc calcCollChunking): 16 channels x 8 heads") {
  const auto chunk = [](Algorithm a, double bytes, std::uint32_t nodes, std::uint32_t heads) {
    return nccl_nvls_chunk(a, Bytes(bytes), 16, heads, nodes).bytes() / 1024.0;
  };
  // NVLS, 128 concurrent chunks: 16 KiB below 2·128·32 KiB = 8 MiB, 32 KiB below 64 MiB,
  // 64 KiB below 1 GiB, 128 KiB from there.
  CHECK(chunk(Algorithm::Nvls, 2 * kOneMiB, 1, 8) == 16.0);
  CHECK(chunk(Algorithm::Nvls, 16 * kOneMiB, 1, 8) == 32.0);
  CHECK(chunk(Algorithm::Nvls, 256 * kOneMiB, 1, 8) == 64.0);
  CHECK(chunk(Algorithm::Nvls, 1024 * kOneMiB, 1, 8) == 128.0);
  // NVLSTree on 2 nodes: 32 KiB below 8 MiB, 64 KiB below 64 MiB, 128 KiB from there.
  CHECK(chunk(Algorithm::NvlsTree, 4 * kOneMiB, 2, 8) == 32.0);
  CHECK(chunk(Algorithm::NvlsTree, 16 * kOneMiB, 2, 8) == 64.0);
  CHECK(chunk(Algorithm::NvlsTree, 128 * kOneMiB, 2, 8) == 128.0);
  // From 4 nodes NVLSTree's chunk is at most 64 KiB.
  CHECK(chunk(Algorithm::NvlsTree, 1024 * kOneMiB, 4, 8) == 64.0);
  // Chunk efficiency: 1 at the 128 KiB plateau, lower and monotone below.
  const BytesPerSecond rate = 20_GBps;
  CHECK(nvls_chunk_efficiency(Bytes(128 * 1024.0), rate) == doctest::Approx(1.0));
  const double e64 = nvls_chunk_efficiency(Bytes(64 * 1024.0), rate);
  const double e16 = nvls_chunk_efficiency(Bytes(16 * 1024.0), rate);
  CHECK(e64 < 1.0);
  CHECK(e16 < e64);
  // c0 = k·cmax/(cmax−k), k = 1.3 µs × 20 GB/s = 26,000 B.
  const double k = kNvlsChunkOverheadUs * 1e-6 * 20e9;
  const double c0 = k * 131072.0 / (131072.0 - k);
  CHECK(e16 == doctest::Approx((16384.0 / (16384.0 + c0)) / (131072.0 / (131072.0 + c0))));
}

TEST_CASE("per-size channels bound a protocol's bandwidth (channel_factor)") {
  const NcclTopologyView v = h100_server();
  // Ring/LL at 64 KiB on 2 of 24 channels: LL's per-channel rate is the LL128 cap x 0.5 /
  // (120/128), against the Simple bus bandwidth of 12 x 30 = 360 GB/s.
  NcclOptions o = nccl_options(v, Algorithm::Ring);
  o.run_channels = 2;
  const double bus = nccl_bus_bandwidth(v, Algorithm::Ring).gigabytes_per_second();
  REQUIRE(bus == doctest::Approx(360.0));
  const double ll_channel = nccl_channel_bus_bandwidth(Algorithm::Ring, NcclProtocol::LL,
                                                       GpuGeneration::Hopper, 1, bus, 24);
  const double ll128_channel = nccl_channel_bus_bandwidth(Algorithm::Ring, NcclProtocol::LL128,
                                                          GpuGeneration::Hopper, 1, bus, 24);
  CHECK(ll_channel == doctest::Approx(ll128_channel * 0.5 / (120.0 / 128.0)));
  CHECK(nccl_channel_bus_bandwidth(Algorithm::Ring, NcclProtocol::Simple, GpuGeneration::Hopper,
                                   1, bus, 24) == doctest::Approx(15.0));
  const NcclStepCost two = nccl_cost(Algorithm::Ring, NcclProtocol::LL, kAllReduce, 8, 1,
                                     LinkClass::NvLink, Bytes(64 * 1024.0), 360_GBps, o);
  o.run_channels = 24;
  const NcclStepCost all = nccl_cost(Algorithm::Ring, NcclProtocol::LL, kAllReduce, 8, 1,
                                     LinkClass::NvLink, Bytes(64 * 1024.0), 360_GBps, o);
  CHECK(all.channel_factor == doctest::Approx(1.0));
  CHECK(two.channel_factor < 1.0);
  // Two channels can deliver at most 2 x the per-channel rate of LL's share of the bus.
  CHECK(two.channel_factor * two.protocol_factor * 360.0 <= 2.0 * ll_channel + 1e-9);
  // NCCL's own prediction does not see the per-size channels.
  CHECK(two.predicted.seconds() == doctest::Approx(all.predicted.seconds()));
}

namespace {

// `nodes` DGX-H100-like servers (8 GPUs, 8 x 400G NICs) on an InfiniBand network of `shape`.
Topology sharp_cluster(int nodes, NetworkShape shape, bool sharp, int hosts_per_leaf = 0,
                       GpuGeneration gpu = GpuGeneration::Hopper) {
  ClusterSpec spec;
  spec.name = "sharp-test";
  spec.nodes = nodes;
  spec.node.gpus = 8;
  spec.node.intra = exact_link_group(Fabric::NvLink, 450_GBps);
  spec.node.intra_shape = IntraShape::Switch;
  spec.node.nics = 8;
  spec.node.nic_bandwidth = 400_Gbps;
  spec.node.pcie = exact_link_group(Fabric::Pcie, 64_GBps);
  spec.node.origin = SourceMark{"cluster.yaml", 3, 1};
  NetworkSpec net;
  net.fabric = Fabric::InfiniBand;
  net.shape = shape;
  net.hosts_per_leaf = hosts_per_leaf;
  net.efficiency = 1.0;
  net.link_latency = 500_ns;
  net.switch_latency = 300_ns;
  net.sharp = sharp;
  net.origin = SourceMark{"cluster.yaml", 9, 1};
  spec.network = net;
  spec.gpu = gpu;
  spec.origin = SourceMark{"cluster.yaml", 1, 1};
  return expand_cluster(spec);
}

}  // namespace

TEST_CASE("SHARP: where NVLS across servers can run, and which switch reduces each shard") {
  // Rail-optimized: GPU l's NIC on rail switch l of every server, one SHARP switch per rail.
  const Topology rails = sharp_cluster(4, NetworkShape::RailOptimized, true);
  const NvlsSharpDevices d = nvls_sharp_devices(rails, rails.gpus(), 8);
  REQUIRE(d.devices.size() == 32 + 4 + 8);
  CHECK(d.sharp_of_local == std::vector<std::uint32_t>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(rails.device(d.devices[32]).kind == DeviceKind::NvSwitch);
  CHECK(rails.device(d.devices[36]).kind == DeviceKind::Switch);
  CHECK(rails.device(d.devices[36]).sharp);
  // One switch: one SHARP switch for every shard.
  const Topology one = sharp_cluster(2, NetworkShape::SingleSwitch, true);
  const NvlsSharpDevices s = nvls_sharp_devices(one, one.gpus(), 8);
  CHECK(s.devices.size() == 16 + 2 + 1);
  CHECK(s.sharp_of_local == std::vector<std::uint32_t>(8, 0));
  // Switches that do not reduce, and servers on different leaves (a SHARP tree over several
  // switches is not modelled) are refused, saying why.
  CHECK_THROWS_WITH_AS((void)nvls_sharp_devices(sharp_cluster(2, NetworkShape::SingleSwitch,
                                                              false),
                                                one.gpus(), 8),
                       doctest::Contains("does not reduce in the network"), ConfigError);
  const Topology leaves = sharp_cluster(4, NetworkShape::LeafSpine, true, 2);
  CHECK_THROWS_WITH_AS((void)nvls_sharp_devices(leaves, leaves.gpus(), 8),
                       doctest::Contains("SHARP tree over several switches"), ConfigError);
  // One NVLink domain over several `node:` values (trays under one NVSwitch): plain NVLS.
  Topology trays("trays");
  trays.set_gpu_generation(GpuGeneration::Blackwell);
  const DeviceId nvs = trays.add_device(Device{"nvs", DeviceKind::NvSwitch, -1, 0_ns, {}});
  for (int k = 0; k < 8; ++k) {
    const DeviceId g = trays.add_device(
        Device{"t" + std::to_string(k / 4) + ".gpu" + std::to_string(k % 4), DeviceKind::Gpu,
               k / 4, 0_ns, {}});
    trays.add_link(Link{g, nvs, Fabric::NvLink, 900_GBps, 300_ns, 1.0, Duplex::Full, {}});
  }
  const NvlsSharpDevices one_domain = in_switch_devices(trays, trays.gpus(), 4, Algorithm::Nvls);
  CHECK(one_domain.devices.size() == 9);
  CHECK(one_domain.sharp_of_local.empty());
  // in_switch_devices: NVLS in one server is the NVSwitch, across servers SHARP.
  std::vector<DeviceId> first(rails.gpus().begin(), rails.gpus().begin() + 8);
  CHECK(in_switch_devices(rails, first, 8, Algorithm::Nvls).devices.size() == 9);
  CHECK(in_switch_devices(rails, rails.gpus(), 8, Algorithm::Nvls).sharp_of_local.size() == 8);
  // NCCL turns NVLS off where a node has 2 GPUs or fewer (ncclNvlsInit): two GPUs of one
  // domain, or NVLSTree over servers holding one GPU each (--placement strided --gpus 2).
  const std::vector<DeviceId> two(trays.gpus().begin(), trays.gpus().begin() + 2);
  CHECK_THROWS_WITH_AS((void)in_switch_devices(trays, two, 2, Algorithm::Nvls),
                       doctest::Contains("3 GPUs or more in each NVSwitch domain"), ConfigError);
  const std::vector<DeviceId> one_each{rails.gpus()[0], rails.gpus()[8]};
  CHECK_THROWS_WITH_AS((void)in_switch_devices(rails, one_each, 1, Algorithm::NvlsTree),
                       doctest::Contains("one here has 1"), ConfigError);
  const std::vector<DeviceId> three(trays.gpus().begin(), trays.gpus().begin() + 3);
  CHECK(in_switch_devices(trays, three, 3, Algorithm::Nvls).devices.size() == 4);
}

TEST_CASE("SHARP: NCCL's tuner offers NVLS across servers and prefers it to NVLSTree") {
  const Topology with = sharp_cluster(4, NetworkShape::RailOptimized, true);
  const Topology without = sharp_cluster(4, NetworkShape::RailOptimized, false);
  const NcclTopologyView v = view_of(with, 8, Algorithm::Nvls);
  const NcclTopologyView w = view_of(without, 8, Algorithm::NvlsTree);
  CHECK(v.sharp);
  CHECK_FALSE(w.sharp);
  // tuning.cc: NVLS across nodes costs intraLat + interLat = 25 + 18 us and min(NVLS intra,
  // NIC) per channel, NVLSTree 25 + 2 log2(4) x 20.9 us at the same bandwidth (> 2 nodes).
  const NcclTuning t = nccl_tune(v, kAllReduce, Bytes(1024 * kOneMiB));
  CHECK(t.algorithm == Algorithm::Nvls);
  double nvls = 0.0, tree = 0.0;
  for (const NcclCandidate& c : t.candidates) {
    if (c.algorithm == Algorithm::Nvls) nvls = c.latency_us;
    if (c.algorithm == Algorithm::NvlsTree) tree = c.latency_us;
  }
  CHECK(nvls == doctest::Approx(43.0));
  CHECK(tree == doctest::Approx(25.0 + 4 * 20.9));
  for (const NcclCandidate& c : nccl_tune(w, kAllReduce, Bytes(1024 * kOneMiB)).candidates)
    CHECK(c.algorithm != Algorithm::Nvls);
}

TEST_CASE("CollNet: NCCL's tuner offers CollNetChain where the servers' NICs share SHARP switches") {
  const Topology with = sharp_cluster(4, NetworkShape::RailOptimized, true);
  const Topology without = sharp_cluster(4, NetworkShape::RailOptimized, false);
  const NcclTopologyView v = view_of(with, 8, Algorithm::Nvls);
  CHECK(v.collnet);
  CHECK_FALSE(view_of(without, 8, Algorithm::NvlsTree).collnet);
  // collnet_devices: the GPUs, then one SHARP switch per rail (no NVSwitch).
  const NvlsSharpDevices d = collnet_devices(with, with.gpus(), 8);
  CHECK(d.devices.size() == 32 + 8);
  CHECK(d.sharp_of_local == std::vector<std::uint32_t>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(with.device(d.devices[32]).sharp);
  CHECK_THROWS_WITH_AS((void)collnet_devices(without, without.gpus(), 8),
                       doctest::Contains("CollNet needs SHARP"), ConfigError);
  std::vector<DeviceId> first(with.gpus().begin(), with.gpus().begin() + 8);
  CHECK_THROWS_WITH_AS((void)collnet_devices(with, first, 8), doctest::Contains("two or more"),
                       ConfigError);
  // 12 GPUs filling one server and half of the next: not whole servers.
  std::vector<DeviceId> twelve(with.gpus().begin(), with.gpus().begin() + 12);
  CHECK_THROWS_WITH_AS((void)collnet_devices(with, twelve, 1), doctest::Contains("whole servers"),
                       ConfigError);
  // tuning.cc: CollNetChain latency 2 (ppn - 1) x 2.8 + 30 us, bandwidth channels x bwIntra of
  // its graph (the tree graph) whatever the node count, algorithm bandwidth half of it.
  const NcclTuning t = nccl_tune(v, kAllReduce, Bytes(1024 * kOneMiB));
  const NcclCandidate* chain = nullptr;
  for (const NcclCandidate& c : t.candidates)
    if (c.algorithm == Algorithm::CollNetChain) chain = &c;
  REQUIRE(chain != nullptr);
  CHECK(chain->protocol == NcclProtocol::Simple);
  CHECK(chain->latency_us == doctest::Approx(2 * 7 * 2.8 + 30.0));
  CHECK(chain->bandwidth_GBps ==
        doctest::Approx(0.5 * v.tree.channels * v.tree.bw_intra).epsilon(1e-6));
  // On H100 servers NVLS across servers (with SHARP too) stays NCCL's pick at 1 GiB.
  CHECK(t.algorithm == Algorithm::Nvls);
  // Without NVLS (A100) NCCL's tuner weighs CollNet against Ring and Tree: CollNet wins at
  // 256 MiB, where one network round trip per server beats the ring's and tree's traffic.
  const Topology a100 = sharp_cluster(4, NetworkShape::RailOptimized, true, 0, GpuGeneration::Ampere);
  const NcclTopologyView va = view_of(a100, 8, std::nullopt);
  CHECK(va.collnet);
  const Algorithm big = nccl_tune(va, kAllReduce, Bytes(256 * kOneMiB)).algorithm;
  CHECK((big == Algorithm::CollNetChain || big == Algorithm::CollNetDirect));
  CHECK(nccl_tune(va, CollectiveOp::AllGather, Bytes(256 * kOneMiB)).algorithm == Algorithm::Ring);
  const NcclTopologyView vn = view_of(sharp_cluster(4, NetworkShape::RailOptimized, false, 0,
                                                    GpuGeneration::Ampere),
                                      8, std::nullopt);
  for (const NcclCandidate& c : nccl_tune(vn, kAllReduce, Bytes(256 * kOneMiB)).candidates)
    CHECK(c.algorithm != Algorithm::CollNetChain);
}

TEST_CASE("CollNet: CollNetDirect on NVSwitch servers, with NCCL's latency and GPU/NIC factor") {
  const Topology with = sharp_cluster(4, NetworkShape::RailOptimized, true);
  const NcclTopologyView v = view_of(with, 8, Algorithm::Nvls);
  // One head per GPU with its own NIC (8 x 400G here), at most 8.
  CHECK(v.collnet_direct.channels == 8);
  const NcclTuning t = nccl_tune(v, kAllReduce, Bytes(1024 * kOneMiB));
  const NcclCandidate* direct = nullptr;
  for (const NcclCandidate& c : t.candidates)
    if (c.algorithm == Algorithm::CollNetDirect) direct = &c;
  REQUIRE(direct != nullptr);
  // tuning.cc: 2 (min(1, 7) x 3.7 + 7 x 0.4) + 31 us; bandwidth channels x bwIntra / 1 (a head
  // per GPU) x 0.85 (Hopper), halved.
  CHECK(direct->latency_us == doctest::Approx(2 * (3.7 + 7 * 0.4) + 31.0));
  CHECK(direct->bandwidth_GBps ==
        doctest::Approx(0.5 * 0.85 * 8 * v.collnet_direct.bw_intra).epsilon(1e-6));
  CHECK(t.algorithm == Algorithm::Nvls);  // still NVLS with SHARP on H100 at 1 GiB
  // Fewer NICs than GPUs: NCCL divides by f - (f - 1)/2, f = GPUs per head.
  NcclOptions o = nccl_options(v, Algorithm::CollNetDirect);
  o.channels = 4;
  const NcclStepCost four = nccl_cost(Algorithm::CollNetDirect, NcclProtocol::Simple, kAllReduce,
                                      32, 4, LinkClass::NvLink, Bytes(1024 * kOneMiB), 400_GBps,
                                      o);
  const double alg = 0.5 * 0.85 * 400.0 / 1.5;
  CHECK(four.predicted.seconds() * 1e6 ==
        doctest::Approx(four.latency.seconds() * 1e6 + 1024 * kOneMiB / (1000.0 * alg)));
  // A100 servers with SHARP: NCCL's tuner runs CollNetDirect at 512 KiB (44 us of latency
  // against the chain's 69).
  const NcclTopologyView va = view_of(sharp_cluster(4, NetworkShape::RailOptimized, true, 0,
                                                    GpuGeneration::Ampere),
                                      8, std::nullopt);
  CHECK(nccl_tune(va, kAllReduce, Bytes(512 * 1024.0)).algorithm == Algorithm::CollNetDirect);
}
