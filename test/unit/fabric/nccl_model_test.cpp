// NCCL's cost model (nccl_model.hpp), pinned to NCCL 2.30.7: the constant tables, the Ring and
// Tree latency formulas (src/tuning/ring.cc, tree.cc), the protocol bandwidths, and the protocol
// choice. Expected values are computed here by hand from NCCL's tables (µs, GB/s), so a wrong
// constant or formula in sim/fabric/nccl_tables.hpp, nccl_latency.cpp or nccl_cost.cpp changes a
// number and fails.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "gradsync/fabric/nccl_model.hpp"

using namespace gradsync;
using namespace gradsync::literals;

namespace {

constexpr NcclProtocol kLL = NcclProtocol::LL;
constexpr NcclProtocol kLL128 = NcclProtocol::LL128;
constexpr NcclProtocol kSimple = NcclProtocol::Simple;
constexpr CollectiveOp kAR = CollectiveOp::AllReduce;

double us(Seconds s) { return s.seconds() * 1e6; }
BytesPerSecond GBps(double v) { return BytesPerSecond(v * 1e9); }

// NCCL's predicted time in µs: lat + bytes / (1000 · algBw[GB/s]).
double nccl_time(double lat_us, double bytes, double alg_bw_gbps) {
  return lat_us + bytes / (1000.0 * alg_bw_gbps);
}

// The size where two (lat, algBw) lines cross.
double crossover(double lat_a, double bw_a, double lat_b, double bw_b) {
  return (lat_b - lat_a) * 1000.0 / (1.0 / bw_a - 1.0 / bw_b);
}

}  // namespace

TEST_CASE("the pinned version's base latencies (µs, LL/LL128/Simple)") {
  CHECK(kNcclModelVersion == "2.30.7");
  const std::array<double, 3> ring{6.6, 14.0, 8.4};
  const std::array<double, 3> tree{6.8, 14.0, 8.4};
  const std::array<NcclProtocol, 3> protos{kLL, kLL128, kSimple};
  for (std::size_t p = 0; p < 3; ++p) {
    CHECK(us(nccl_base_latency(Algorithm::Ring, protos[p])) == doctest::Approx(ring[p]));
    CHECK(us(nccl_base_latency(Algorithm::Tree, protos[p])) == doctest::Approx(tree[p]));
    // No NCCL counterpart: ring rows.
    CHECK(us(nccl_base_latency(Algorithm::Hierarchical, protos[p])) == doctest::Approx(ring[p]));
  }
}

TEST_CASE("the pinned version's per-hop latencies per link class (µs)") {
  struct Row {
    LinkClass link;
    std::array<double, 3> tree;
    std::array<double, 3> ring;
  };
  const std::array<Row, 3> rows{{
      {LinkClass::NvLink, {0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}},
      {LinkClass::Pci, {1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}},
      {LinkClass::Net, {5.0, 8.5, 14.0}, {2.7, 4.0, 14.0}},
  }};
  const std::array<NcclProtocol, 3> protos{kLL, kLL128, kSimple};
  for (const Row& r : rows)
    for (std::size_t p = 0; p < 3; ++p) {
      CAPTURE(to_string(r.link));
      CAPTURE(to_string(protos[p]));
      CHECK(us(nccl_hw_latency(r.link, Algorithm::Tree, protos[p])) == doctest::Approx(r.tree[p]));
      CHECK(us(nccl_hw_latency(r.link, Algorithm::Ring, protos[p])) == doctest::Approx(r.ring[p]));
    }
  CHECK(us(nccl_net_overhead(CpuVendor::Intel)) == doctest::Approx(1.0));
  CHECK(us(nccl_net_overhead(CpuVendor::Amd)) == doctest::Approx(2.0));
}

TEST_CASE("link classes of fabrics and routes") {
  CHECK(link_class(Fabric::NvLink) == LinkClass::NvLink);
  CHECK(link_class(Fabric::Pcie) == LinkClass::Pci);
  CHECK(link_class(Fabric::Socket) == LinkClass::Pci);
  CHECK(link_class(Fabric::InfiniBand) == LinkClass::Net);
  CHECK(link_class(Fabric::Roce) == LinkClass::Net);
  CHECK(link_class(Fabric::Ethernet) == LinkClass::Net);
  const std::vector<Fabric> nvswitch{Fabric::NvLink, Fabric::NvLink};
  const std::vector<Fabric> pcie_only{Fabric::Pcie, Fabric::Pcie};
  const std::vector<Fabric> cross_socket{Fabric::Pcie, Fabric::Socket, Fabric::Pcie};
  const std::vector<Fabric> across{Fabric::Pcie, Fabric::InfiniBand, Fabric::InfiniBand,
                                   Fabric::Pcie};
  CHECK(route_link_class(nvswitch) == LinkClass::NvLink);
  CHECK(route_link_class(pcie_only) == LinkClass::Pci);
  CHECK(route_link_class(cross_socket) == LinkClass::Pci);
  CHECK(route_link_class(across) == LinkClass::Net);
  CHECK(route_link_class(std::vector<Fabric>{}) == LinkClass::NvLink);

  // The same on a topology's route: gpu0 -nvlink- sw -nvlink- gpu1, gpu1 -pcie- nic -ib- nic2.
  Topology t("classes");
  const DeviceId g0 = t.add_device(Device{"gpu0", DeviceKind::Gpu, 0});
  const DeviceId sw = t.add_device(Device{"nvs", DeviceKind::NvSwitch, 0});
  const DeviceId g1 = t.add_device(Device{"gpu1", DeviceKind::Gpu, 0});
  const DeviceId nic = t.add_device(Device{"nic", DeviceKind::Nic, 0});
  const DeviceId nic2 = t.add_device(Device{"nic2", DeviceKind::Nic, 1});
  const LinkId l0 = t.add_link(Link{g0, sw, Fabric::NvLink, 450_GBps});
  const LinkId l1 = t.add_link(Link{sw, g1, Fabric::NvLink, 450_GBps});
  const LinkId l2 = t.add_link(Link{g1, nic, Fabric::Pcie, 64_GBps});
  const LinkId l3 = t.add_link(Link{nic, nic2, Fabric::InfiniBand, 50_GBps});
  CHECK(route_link_class(t, Route{{g0, sw, g1}, {l0, l1}}) == LinkClass::NvLink);
  CHECK(route_link_class(t, Route{{g1, nic}, {l2}}) == LinkClass::Pci);
  CHECK(route_link_class(t, Route{{g1, nic, nic2}, {l2, l3}}) == LinkClass::Net);
}

TEST_CASE("ring latency = base + (nsteps - nInter)·max(intra, netOverhead) + nInter·inter") {
  // One node, 8 GPUs on NVLink: nsteps = 2(n-1) = 14, no network step.
  const auto one = [](NcclProtocol p) {
    return nccl_cost(Algorithm::Ring, p, kAR, 8, 1, LinkClass::NvLink, 1_MiB, GBps(360));
  };
  CHECK(us(one(kLL).latency) == doctest::Approx(6.6 + 14 * 0.6));      // 15.0
  CHECK(us(one(kLL128).latency) == doctest::Approx(14.0 + 14 * 1.9));  // 40.6
  CHECK(us(one(kSimple).latency) == doctest::Approx(8.4 + 14 * 3.4));  // 56.0
  CHECK(one(kLL).steps == 14);
  CHECK(one(kLL).inter_steps == 0);
  CHECK(us(one(kLL).base) == doctest::Approx(6.6));
  CHECK(us(one(kLL).per_step_intra) == doctest::Approx(0.6));

  // PCIe-only server: PCI row.
  const NcclStepCost pci =
      nccl_cost(Algorithm::Ring, kLL, kAR, 8, 1, LinkClass::Pci, 1_KiB, GBps(24));
  CHECK(us(pci.latency) == doctest::Approx(6.6 + 14 * 1.0));

  // 2 nodes x 8 GPUs: nsteps 30, nInter = 2(nodes-1) = 2; intra steps pay max(0.6, 1 µs net
  // overhead) for LL, max(3.4, 3 µs) for Simple.
  const NcclStepCost ll = nccl_cost(Algorithm::Ring, kLL, kAR, 16, 2, LinkClass::NvLink,
                                    Bytes(8), GBps(96));
  CHECK(ll.steps == 30);
  CHECK(ll.inter_steps == 2);
  CHECK(us(ll.per_step_intra) == doctest::Approx(1.0));
  CHECK(us(ll.per_step_inter) == doctest::Approx(2.7));
  CHECK(us(ll.latency) == doctest::Approx(6.6 + 28 * 1.0 + 2 * 2.7));  // 40.0
  CHECK(us(ll.per_step(LinkClass::Net)) == doctest::Approx(2.7));
  CHECK(us(ll.per_step(LinkClass::NvLink)) == doctest::Approx(1.0));

  // Simple below the plateau threshold (bytes / (channels · ranks) < 64) and above it (× 1.4
  // on Ampere and later, × 1.9 on Volta), the factor spread over base and steps.
  const NcclStepCost small = nccl_cost(Algorithm::Ring, kSimple, kAR, 16, 2, LinkClass::NvLink,
                                       Bytes(512), GBps(96));
  CHECK(us(small.latency) == doctest::Approx(8.4 + 28 * 3.4 + 2 * 14.0));  // 131.6
  const NcclStepCost big = nccl_cost(Algorithm::Ring, kSimple, kAR, 16, 2, LinkClass::NvLink,
                                     1_GiB, GBps(96));
  CHECK(us(big.latency) == doctest::Approx(1.4 * (8.4 + 28 * 3.4 + 2 * 14.0)));
  CHECK(us(big.base) == doctest::Approx(1.4 * 8.4));
  NcclOptions volta;
  volta.gpu = GpuGeneration::Volta;
  CHECK(us(nccl_cost(Algorithm::Ring, kSimple, kAR, 16, 2, LinkClass::NvLink, 1_GiB, GBps(96),
                     volta)
               .latency) == doctest::Approx(1.9 * (8.4 + 28 * 3.4 + 2 * 14.0)));
  // With 16 channels the threshold is 64·16·16 B = 16 KiB.
  NcclOptions ch16;
  ch16.channels = 16;
  CHECK(us(nccl_cost(Algorithm::Ring, kSimple, kAR, 16, 2, LinkClass::NvLink, 8_KiB, GBps(96),
                     ch16)
               .latency) == doctest::Approx(131.6));
  // AMD hosts post slower: the net overhead (2 µs) now exceeds the LL NVLink hop.
  NcclOptions amd;
  amd.cpu = CpuVendor::Amd;
  CHECK(us(nccl_cost(Algorithm::Ring, kLL, kAR, 16, 2, LinkClass::NvLink, Bytes(8), GBps(96), amd)
               .latency) == doctest::Approx(6.6 + 28 * 2.0 + 2 * 2.7));

  // 4 nodes x 8, LL128: 62 steps, 6 across nodes.
  CHECK(us(nccl_cost(Algorithm::Ring, kLL128, kAR, 32, 4, LinkClass::NvLink, Bytes(8), GBps(96))
               .latency) == doctest::Approx(14.0 + 56 * 1.9 + 6 * 4.0));
  // ReduceScatter / AllGather: n-1 steps, nodes-1 of them across nodes.
  const NcclStepCost rs = nccl_cost(Algorithm::Ring, kLL, CollectiveOp::ReduceScatter, 16, 2,
                                    LinkClass::NvLink, Bytes(8), GBps(96));
  CHECK(rs.steps == 15);
  CHECK(rs.inter_steps == 1);
  CHECK(us(rs.latency) == doctest::Approx(6.6 + 14 * 1.0 + 1 * 2.7));
  // Broadcast: nRanks steps of the intra-node hop (Simple takes Tree's hop: 4 µs on NVLink).
  CHECK(us(nccl_cost(Algorithm::Ring, kSimple, CollectiveOp::Broadcast, 8, 1, LinkClass::NvLink,
                     1_MiB, GBps(360))
               .latency) == doctest::Approx(8.4 + 8 * 4.0));
}

TEST_CASE("tree latency = base + 2·((ppn - 1)·intra + log2(nodes)·inter)") {
  const auto tree = [](NcclProtocol p, std::uint32_t ranks, std::uint32_t nodes) {
    return nccl_cost(Algorithm::Tree, p, kAR, ranks, nodes, LinkClass::NvLink, Bytes(8), GBps(96));
  };
  CHECK(us(tree(kLL, 16, 2).latency) == doctest::Approx(6.8 + 2 * (7 * 0.6 + 1 * 5.0)));  // 25.2
  CHECK(us(tree(kLL128, 16, 2).latency) == doctest::Approx(14.0 + 2 * (7 * 1.25 + 1 * 8.5)));
  CHECK(us(tree(kSimple, 32, 4).latency) == doctest::Approx(8.4 + 2 * (7 * 4.0 + 2 * 14.0)));
  // log2 is NCCL's floor: 3 nodes count one level.
  CHECK(us(tree(kLL, 24, 3).latency) == doctest::Approx(6.8 + 2 * (7 * 0.6 + 1 * 5.0)));
  // One node: a chain, no network level.
  CHECK(us(tree(kLL, 8, 1).latency) == doctest::Approx(6.8 + 2 * 7 * 0.6));  // 15.2
  const NcclStepCost t = tree(kLL, 32, 4);
  CHECK(t.steps == 2 * (7 + 2));
  CHECK(t.inter_steps == 4);
  CHECK(us(t.per_step_intra) == doctest::Approx(0.6));
  CHECK(us(t.per_step_inter) == doctest::Approx(5.0));
  CHECK_THROWS_AS((void)nccl_cost(Algorithm::Tree, kLL, CollectiveOp::AllGather, 16, 2,
                                  LinkClass::NvLink, Bytes(8), GBps(96)),
                  std::invalid_argument);
}

TEST_CASE("protocol bandwidth relative to Simple") {
  // Ring LL carries 8 B of data per 16 B line: half, unless llMaxBw caps it lower.
  const auto ring = [](NcclProtocol p, double bus, std::uint32_t nodes, Bytes bytes = 1_MiB) {
    return nccl_cost(Algorithm::Ring, p, kAR, 8 * nodes, nodes, LinkClass::NvLink, bytes,
                     GBps(bus));
  };
  CHECK(ring(kLL, 100, 1).protocol_factor == doctest::Approx(0.5));
  CHECK(ring(kLL, 100, 1).bandwidth_factor == doctest::Approx(0.5));
  CHECK(ring(kLL, 360, 1).bandwidth_factor == doctest::Approx(141.0 / 360.0));  // Hopper, 1 node
  CHECK(ring(kLL, 96, 2).bandwidth_factor == doctest::Approx(39.0 / 96.0));     // Intel, 2 nodes
  CHECK(ring(kLL, 96, 4).bandwidth_factor == doctest::Approx(20.4 / 96.0));     // Intel, >2 nodes
  NcclOptions ampere;
  ampere.gpu = GpuGeneration::Ampere;
  CHECK(nccl_cost(Algorithm::Ring, kLL, kAR, 8, 1, LinkClass::NvLink, 1_MiB, GBps(240), ampere)
            .bandwidth_factor == doctest::Approx(87.7 / 240.0));
  // LL128: 120 of 128 bytes per line, NCCL uses 0.92.
  CHECK(ring(kLL128, 360, 1).protocol_factor == doctest::Approx(0.92));
  NcclOptions ch4;
  ch4.channels = 4;  // 4 x 36.7 GB/s caps Hopper LL128
  CHECK(nccl_cost(Algorithm::Ring, kLL128, kAR, 8, 1, LinkClass::NvLink, 1_MiB, GBps(360), ch4)
            .protocol_factor == doctest::Approx(4 * 36.7 / 360.0));
  CHECK(ring(kSimple, 360, 1).bandwidth_factor == doctest::Approx(1.0));

  // Tree: 0.92 of the bus, LL a further 1/3.8, LL128 7/9 on one node and 120/128 across nodes,
  // times the size-dependent correction (1 GiB: none; 1 MiB = 64·2^14 B: LL .5, LL128 .6,
  // Simple .5).
  const auto tree = [](NcclProtocol p, std::uint32_t nodes, Bytes bytes) {
    return nccl_cost(Algorithm::Tree, p, kAR, 8 * nodes, nodes, LinkClass::NvLink, bytes,
                     GBps(96));
  };
  CHECK(tree(kSimple, 2, 1_GiB).bandwidth_factor == doctest::Approx(0.92));
  CHECK(tree(kLL, 2, 1_GiB).protocol_factor == doctest::Approx(1.0 / 3.8));
  CHECK(tree(kLL128, 2, 1_GiB).protocol_factor == doctest::Approx(120.0 / 128.0));
  CHECK(tree(kLL128, 1, 1_GiB).protocol_factor == doctest::Approx(7.0 / 9.0));
  CHECK(tree(kSimple, 2, 1_MiB).bandwidth_factor == doctest::Approx(0.92 * 0.5));
  CHECK(tree(kLL, 2, 1_MiB).bandwidth_factor == doctest::Approx(0.92 / 3.8 * 0.5));
  CHECK(tree(kLL128, 2, 1_MiB).bandwidth_factor == doctest::Approx(0.92 * 120.0 / 128.0 * 0.6));
}

TEST_CASE("predicted time = lat + bytes / (1000 · algBw)") {
  // Ring Simple, 8 ranks: algBw = busBw · n / (2(n-1)).
  const NcclStepCost c =
      nccl_cost(Algorithm::Ring, kSimple, kAR, 8, 1, LinkClass::NvLink, 1_GiB, GBps(360));
  CHECK(us(c.predicted) == doctest::Approx(nccl_time(56.0, 1073741824.0, 360.0 * 8 / 14)));
  // Tree Simple, 2 nodes: algBw = 0.92 · busBw · 0.5 (no correction at 1 GiB).
  const NcclStepCost t =
      nccl_cost(Algorithm::Tree, kSimple, kAR, 16, 2, LinkClass::NvLink, 1_GiB, GBps(96));
  CHECK(us(t.predicted) ==
        doctest::Approx(nccl_time(8.4 + 2 * (7 * 4.0 + 14.0), 1073741824.0, 0.92 * 96 * 0.5)));
}

TEST_CASE("ring on 8 NVLink GPUs switches LL -> LL128 -> Simple where NCCL's model does") {
  // H100-class node, busBw 360 GB/s (450 x 0.80). Lines (µs, GB/s of algBw):
  const double f = 8.0 / 14.0;
  const double ll_lat = 15.0, ll_bw = 141.0 * f;  // min(llMaxBw 141, 360/2)
  const double ll128_lat = 40.6, ll128_bw = 0.92 * 360.0 * f;
  const double simple_lat = 56.0, simple_bw = 360.0 * f;
  const double x1 = crossover(ll_lat, ll_bw, ll128_lat, ll128_bw);          // ≈ 3.59 MB
  const double x2 = crossover(ll128_lat, ll128_bw, simple_lat, simple_bw);  // ≈ 36.4 MB
  CHECK(x1 == doctest::Approx(3.59e6).epsilon(0.01));
  CHECK(x2 == doctest::Approx(3.64e7).epsilon(0.01));
  const auto pick = [](double bytes) {
    return nccl_cost(Algorithm::Ring, kAR, 8, 1, LinkClass::NvLink, Bytes(std::round(bytes)),
                     GBps(360))
        .protocol;
  };
  CHECK(pick(8) == kLL);
  CHECK(pick(65536) == kLL);
  CHECK(pick(x1 * 0.99) == kLL);
  CHECK(pick(x1 * 1.01) == kLL128);
  CHECK(pick(16.0 * 1048576) == kLL128);
  CHECK(pick(x2 * 0.99) == kLL128);
  CHECK(pick(x2 * 1.01) == kSimple);
  CHECK(pick(1073741824.0) == kSimple);

  // The chosen cost is that protocol's own.
  const NcclStepCost small =
      nccl_cost(Algorithm::Ring, kAR, 8, 1, LinkClass::NvLink, 64_KiB, GBps(360));
  CHECK(us(small.latency) == doctest::Approx(ll_lat));
  CHECK(small.bandwidth_factor == doctest::Approx(141.0 / 360.0));

  // Without LL128 (NCCL_PROTO=^LL128, or PCIe inside the node) LL hands over to Simple.
  NcclOptions no128;
  no128.allow_ll128 = false;
  const double x3 = crossover(ll_lat, ll_bw, simple_lat, simple_bw);
  CHECK(nccl_cost(Algorithm::Ring, kAR, 8, 1, LinkClass::NvLink, Bytes(std::round(x3 * 0.99)),
                  GBps(360), no128)
            .protocol == kLL);
  CHECK(nccl_cost(Algorithm::Ring, kAR, 8, 1, LinkClass::NvLink, Bytes(std::round(x3 * 1.01)),
                  GBps(360), no128)
            .protocol == kSimple);
  CHECK_FALSE(nccl_protocol_enabled(kLL128, LinkClass::Pci));
  CHECK(nccl_protocol_enabled(kLL128, LinkClass::NvLink));
  CHECK(nccl_cost(Algorithm::Ring, kAR, 8, 1, LinkClass::Pci, 16_MiB, GBps(24)).protocol !=
        kLL128);
}

TEST_CASE("the collective's latency: never less than the wire, never the sum") {
  const NcclStepCost c = nccl_cost(Algorithm::Tree, kLL, kAR, 16, 2, LinkClass::NvLink, Bytes(8),
                                   GBps(50));
  // EFA-like crossing (73 µs) dominates NCCL's NET hop (5 µs); NVLink hops stay at 0.6 µs.
  CHECK(us(nccl_collective_latency(c, 0.6_us, 73.0_us)) ==
        doctest::Approx(6.8 + 2 * (7 * 0.6 + 73.0)));
  CHECK(us(nccl_collective_latency(c, Seconds(0), Seconds(0))) == doctest::Approx(us(c.latency)));
}

TEST_CASE("one rank costs nothing, bad input throws") {
  const NcclStepCost one = nccl_cost(Algorithm::Ring, kAR, 1, 1, LinkClass::NvLink, 1_MiB,
                                     GBps(360));
  CHECK(one.latency.seconds() == 0.0);
  CHECK(one.base.seconds() == 0.0);
  CHECK(one.bandwidth_factor == 1.0);
  CHECK(one.protocol == kSimple);
  CHECK_THROWS_AS((void)nccl_cost(Algorithm::Ring, kAR, 0, 1, LinkClass::NvLink, 1_MiB, GBps(1)),
                  std::invalid_argument);
  CHECK_THROWS_AS((void)nccl_cost(Algorithm::Ring, kAR, 8, 9, LinkClass::NvLink, 1_MiB, GBps(1)),
                  std::invalid_argument);
  CHECK_THROWS_AS((void)nccl_cost(Algorithm::Ring, kAR, 8, 1, LinkClass::NvLink, 1_MiB, GBps(0)),
                  std::invalid_argument);
  CHECK_THROWS_AS((void)nccl_cost(Algorithm::Ring, kAR, 8, 1, LinkClass::Net, 1_MiB, GBps(1)),
                  std::invalid_argument);
}

TEST_CASE("nccl_cost NVLSTree: 25 us NVLink hop over four legs, 20.9 us per tree level each way") {
  const BytesPerSecond bus(42e9);
  for (const std::uint32_t nodes : {2U, 4U, 5U, 16U}) {
    CAPTURE(nodes);
    const std::uint32_t ranks = 8 * nodes + nodes;  // GPUs and one NVSwitch rank per server
    const NcclStepCost c = nccl_cost(Algorithm::NvlsTree, CollectiveOp::AllReduce, ranks, nodes,
                                     LinkClass::NvLink, Bytes(1073741824.0), bus);
    const std::uint32_t levels = nodes >= 16 ? 4 : nodes >= 4 ? 2 : 1;  // log2i
    CHECK(c.protocol == NcclProtocol::Simple);
    CHECK(c.base.seconds() == 0.0);
    CHECK(c.per_step_intra.seconds() == doctest::Approx(6.25e-6));
    CHECK(c.per_step_inter.seconds() == doctest::Approx(20.9e-6));
    CHECK(c.inter_steps == 2 * levels);
    CHECK(c.steps == 4 + 2 * levels);
    CHECK(c.latency.seconds() == doctest::Approx((25.0 + 2 * levels * 20.9) * 1e-6));
    // NVLS's factor on the NVLink legs only; the tree between servers is plain network sends.
    CHECK(c.bandwidth_factor == doctest::Approx(kNvlsBandwidthFactor));
    CHECK(c.bandwidth_factor_net == 1.0);
  }
  CHECK(nccl_hw_latency(LinkClass::Net, Algorithm::NvlsTree, NcclProtocol::Simple).seconds() ==
        doctest::Approx(20.9e-6));
  CHECK(nccl_hw_latency(LinkClass::NvLink, Algorithm::NvlsTree, NcclProtocol::Simple).seconds() ==
        doctest::Approx(25e-6));
  // Other algorithms scale every leg alike.
  const NcclStepCost ring = nccl_cost(Algorithm::Ring, CollectiveOp::AllReduce, 16, 2,
                                      LinkClass::NvLink, Bytes(8.0), bus);
  CHECK(ring.bandwidth_factor_net == ring.bandwidth_factor);
  CHECK_THROWS_AS((void)nccl_cost(Algorithm::NvlsTree, NcclProtocol::LL128,
                                  CollectiveOp::AllReduce, 18, 2, LinkClass::NvLink, Bytes(8.0),
                                  bus),
                  std::invalid_argument);
  CHECK_THROWS_AS((void)nccl_cost(Algorithm::NvlsTree, CollectiveOp::AllReduce, 18, 2,
                                  LinkClass::Pci, Bytes(8.0), bus),
                  std::invalid_argument);
}

TEST_CASE("NVLS factor per GPU generation: Hopper's, scaled by NCCL's nvlsEfficiency ratio") {
  CHECK(nvls_bandwidth_factor(GpuGeneration::Hopper) == kNvlsBandwidthFactor);
  const double blackwell = nvls_bandwidth_factor(GpuGeneration::Blackwell);
  CHECK(blackwell == doctest::Approx(0.76 * 0.74 / 0.85));
  // 8x B200 (NVLink5 900 GB/s x 0.80): GTC-B200-NVLS 850 GB/s within 3 %, and GB200 NVL72
  // (72 GPUs) against GTC-GB200-NVL72-SHARP 850 within 15 %; neither row set the factor.
  CHECK(1.75 * 720.0 * blackwell == doctest::Approx(850.0).epsilon(0.03));
  CHECK(2.0 * 71.0 / 72.0 * 720.0 * blackwell == doctest::Approx(850.0).epsilon(0.15));
  // The engine takes the generation's default unless the topology sets nvls_efficiency.
  NcclOptions options;
  options.gpu = GpuGeneration::Blackwell;
  const BytesPerSecond bus(720e9);
  const auto nvls = [&] {
    return nccl_cost(Algorithm::Nvls, CollectiveOp::AllReduce, 9, 1, LinkClass::NvLink,
                     Bytes(1073741824.0), bus, options);
  };
  CHECK(nvls().bandwidth_factor == doctest::Approx(blackwell));
  options.nvls_efficiency = 0.5;
  CHECK(nvls().bandwidth_factor == doctest::Approx(0.5));
  CHECK(nccl_cost(Algorithm::NvlsTree, CollectiveOp::AllReduce, 18, 2, LinkClass::NvLink,
                  Bytes(1073741824.0), bus, options)
            .bandwidth_factor == doctest::Approx(0.5));
}

TEST_CASE("nccl_cost NVLS: base 0, 25 us NVLink hop split over push and pull, Simple only") {
  const BytesPerSecond bus(360e9);
  const NcclStepCost c = nccl_cost(Algorithm::Nvls, CollectiveOp::AllReduce, 9, 1,
                                   LinkClass::NvLink, Bytes(1073741824.0), bus);
  CHECK(c.protocol == NcclProtocol::Simple);
  CHECK(c.base.seconds() == doctest::Approx(0.0));
  CHECK(c.per_step_intra.seconds() == doctest::Approx(12.5e-6));
  CHECK(c.steps == 2);
  CHECK(c.latency.seconds() == doctest::Approx(25e-6));
  CHECK(c.bandwidth_factor == doctest::Approx(kNvlsBandwidthFactor));
  // 8x H100: 2(n-1)/n · 360 · factor lands on GTC-H100-NVLS 480 GB/s within 1 %.
  CHECK(1.75 * 360.0 * kNvlsBandwidthFactor == doctest::Approx(480.0).epsilon(0.01));
  CHECK(nccl_hw_latency(LinkClass::NvLink, Algorithm::Nvls, NcclProtocol::Simple).seconds() ==
        doctest::Approx(25e-6));
  CHECK(nccl_base_latency(Algorithm::Nvls, NcclProtocol::Simple).seconds() == 0.0);
  CHECK_THROWS_AS((void)nccl_cost(Algorithm::Nvls, NcclProtocol::LL, CollectiveOp::AllReduce, 9,
                                  1, LinkClass::NvLink, Bytes(8.0), bus),
                  std::invalid_argument);
  // Across servers (with SHARP): four NVLink legs of 25/4 us, two network legs of 18/2 us
  // (tuning.cc: intraLat + interLat), NVLS's factor on the NVLink legs only.
  const NcclStepCost m = nccl_cost(Algorithm::Nvls, CollectiveOp::AllReduce, 16, 2,
                                   LinkClass::NvLink, Bytes(1073741824.0), bus);
  CHECK(m.steps == 6);
  CHECK(m.inter_steps == 2);
  CHECK(m.per_step_intra.seconds() == doctest::Approx(6.25e-6));
  CHECK(m.per_step_inter.seconds() == doctest::Approx(9e-6));
  CHECK(m.latency.seconds() == doctest::Approx(43e-6));
  CHECK(m.bandwidth_factor == doctest::Approx(kNvlsBandwidthFactor));
  CHECK(m.bandwidth_factor_net == 1.0);
}
