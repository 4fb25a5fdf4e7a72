// summarize(), format_summary() and to_dot() on small topologies built in code, whose numbers
// can be worked out by hand: a star, a 2:1 leaf-spine, an asymmetric 2-node cluster, and a
// graph where a GPU would be a shortcut if GPUs forwarded traffic.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <random>
#include <string>

#include "gradsync/topology/cluster_spec.hpp"
#include "gradsync/topology/topology.hpp"
#include "gradsync/topology/topology_summary.hpp"
#include "gradsync/units/units.hpp"
#include "topology_fixtures.hpp"

using namespace gradsync;
using namespace gradsync::literals;
using gradsync::test::add;
using gradsync::test::dgx_cluster;

namespace {

void wire(Topology& t, DeviceId a, DeviceId b, Fabric fabric, BytesPerSecond rate,
             Duplex duplex = Duplex::Full) {
  Link link;
  link.a = a;
  link.b = b;
  link.fabric = fabric;
  link.bandwidth = rate;
  link.latency = 1_us;
  link.duplex = duplex;
  t.add_link(link);
}

double gbs(BytesPerSecond r) { return r.gigabytes_per_second(); }

// n GPUs (no node: each its own server) on one switch, 25 GB/s each.
Topology hub(std::size_t n, Duplex duplex = Duplex::Full) {
  Topology t("star");
  const DeviceId sw = add(t, "sw0", DeviceKind::Switch);
  for (std::size_t i = 0; i < n; ++i) {
    wire(t, add(t, "gpu" + std::to_string(i), DeviceKind::Gpu), sw, Fabric::InfiniBand,
            25_GBps, duplex);
  }
  return t;
}

// 4 servers of 2 GPUs (NVSwitch 450 GB/s, one 50 GB/s NIC per GPU over 64 GB/s PCIe).
// Servers 0-1 hang off leaf0, servers 2-3 off leaf1: 4 NICs x 50 GB/s = 200 GB/s down per
// leaf, one 50 GB/s uplink to each of 2 spines = 100 GB/s up: 2:1.
Topology leaf_spine_2to1() {
  Topology t("leaf-spine-2to1");
  const DeviceId leaves[2] = {add(t, "leaf0", DeviceKind::Switch),
                              add(t, "leaf1", DeviceKind::Switch)};
  const DeviceId spines[2] = {add(t, "spine0", DeviceKind::Switch),
                              add(t, "spine1", DeviceKind::Switch)};
  for (int node = 0; node < 4; ++node) {
    const std::string prefix = "n" + std::to_string(node) + ".";
    const DeviceId nvswitch = add(t, prefix + "nvswitch", DeviceKind::NvSwitch, node);
    for (int g = 0; g < 2; ++g) {
      const DeviceId gpu = add(t, prefix + "gpu" + std::to_string(g), DeviceKind::Gpu, node);
      const DeviceId nic = add(t, prefix + "nic" + std::to_string(g), DeviceKind::Nic, node);
      wire(t, gpu, nvswitch, Fabric::NvLink, 450_GBps);
      wire(t, gpu, nic, Fabric::Pcie, 64_GBps);
      wire(t, nic, leaves[node / 2], Fabric::InfiniBand, 50_GBps);
    }
  }
  for (const DeviceId leaf : leaves) {
    for (const DeviceId spine : spines) wire(t, leaf, spine, Fabric::InfiniBand, 50_GBps);
  }
  return t;
}

// Two 8-GPU servers on one switch; server 0 has 4 NICs, server 1 only 2 (400 Gbps each).
Topology two_nodes_asymmetric() {
  Topology t("two-nodes");
  const DeviceId sw = add(t, "switch", DeviceKind::Switch);
  const int nics_of[2] = {4, 2};
  for (int node = 0; node < 2; ++node) {
    const std::string prefix = "n" + std::to_string(node) + ".";
    const DeviceId nvswitch = add(t, prefix + "nvswitch", DeviceKind::NvSwitch, node);
    const DeviceId pcie = add(t, prefix + "pcie0", DeviceKind::PcieSwitch, node);
    for (int g = 0; g < 8; ++g) {
      const DeviceId gpu = add(t, prefix + "gpu" + std::to_string(g), DeviceKind::Gpu, node);
      wire(t, gpu, nvswitch, Fabric::NvLink, 450_GBps);
      wire(t, gpu, pcie, Fabric::Pcie, 32_GBps);
    }
    for (int k = 0; k < nics_of[node]; ++k) {
      const DeviceId nic = add(t, prefix + "nic" + std::to_string(k), DeviceKind::Nic, node);
      wire(t, nic, pcie, Fabric::Pcie, 64_GBps);
      wire(t, nic, sw, Fabric::InfiniBand, 400_Gbps);
    }
  }
  return t;
}

// The longest GPU-to-GPU route by Router, pair by pair: the reference for the diameter.
std::size_t router_diameter(const Topology& t) {
  const Router router(t);
  std::size_t longest = 0;
  for (const DeviceId x : t.gpus()) {
    for (const DeviceId y : t.gpus()) {
      if (x != y) longest = std::max(longest, router.hops(x, y));
    }
  }
  return longest;
}

// A random connected switch graph; every GPU on one or two switches, some GPU-GPU links.
Topology random_topology(unsigned seed) {
  std::mt19937 rng(seed);
  const auto pick = [&](std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
  };
  Topology t("random" + std::to_string(seed));
  const std::size_t switches = 2 + pick(8);
  const std::size_t gpus = 2 + pick(12);
  std::vector<DeviceId> sw;
  for (std::size_t i = 0; i < switches; ++i) {
    sw.push_back(add(t, "sw" + std::to_string(i), DeviceKind::Switch));
    if (i > 0) wire(t, sw[i], sw[pick(i)], Fabric::Ethernet, 10_GBps);  // spanning tree
  }
  for (std::size_t extra = pick(switches); extra > 0; --extra) {
    const std::size_t a = pick(switches);
    const std::size_t b = pick(switches);
    if (a != b) wire(t, sw[a], sw[b], Fabric::Ethernet, 10_GBps);
  }
  std::vector<DeviceId> gpu;
  for (std::size_t i = 0; i < gpus; ++i) {
    gpu.push_back(add(t, "gpu" + std::to_string(i), DeviceKind::Gpu));
    wire(t, gpu[i], sw[pick(switches)], Fabric::Ethernet, 10_GBps);
    if (pick(3) == 0) wire(t, gpu[i], sw[pick(switches)], Fabric::Ethernet, 10_GBps);
    if (i > 0 && pick(3) == 0) wire(t, gpu[i], gpu[pick(i)], Fabric::NvLink, 100_GBps);
  }
  return t;
}

std::size_t count_of(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("summary of a star of 8 GPUs") {
  const TopologySummary s = summarize(hub(8));
  CHECK(s.name == "star");
  CHECK(s.gpus == 8);
  CHECK(s.nodes == 8);  // GPUs without a node are servers of their own
  CHECK(s.devices.at(DeviceKind::Gpu) == 8);
  CHECK(s.devices.at(DeviceKind::Switch) == 1);
  CHECK(s.devices.size() == 2);
  CHECK(s.links.at(Fabric::InfiniBand).count == 8);
  CHECK(gbs(s.links.at(Fabric::InfiniBand).total_bandwidth) == doctest::Approx(200.0));
  CHECK(gbs(s.gpu_port_bandwidth) == doctest::Approx(25.0));
  CHECK(gbs(s.gpu_network_bandwidth) == doctest::Approx(25.0));  // its own IB link
  // 4 GPUs send to the other 4 through the switch: 4 x 25 GB/s.
  CHECK(gbs(s.bisection_bandwidth) == doctest::Approx(100.0));
  CHECK(s.oversubscription == doctest::Approx(1.0));  // no switch-to-switch links
  CHECK(s.diameter_hops == 2);
}

TEST_CASE("bisection of a star: odd sizes, one GPU, half duplex") {
  CHECK(gbs(summarize(hub(7)).bisection_bandwidth) == doctest::Approx(75.0));  // 3 | 4 ranks
  CHECK(gbs(summarize(hub(2)).bisection_bandwidth) == doctest::Approx(25.0));
  const TopologySummary one = summarize(hub(1));
  CHECK(one.bisection_bandwidth.bytes_per_second() == 0.0);
  CHECK(one.diameter_hops == 0);
  // One direction of traffic: a shared half-duplex line rate gives the same max-flow.
  CHECK(gbs(summarize(hub(8, Duplex::Half)).bisection_bandwidth) == doctest::Approx(100.0));
}

TEST_CASE("2:1 leaf-spine: oversubscription, bisection = leaf uplinks, diameter") {
  const TopologySummary s = summarize(leaf_spine_2to1());
  CHECK(s.gpus == 8);
  CHECK(s.nodes == 4);
  CHECK(s.devices.at(DeviceKind::Switch) == 4);
  CHECK(s.devices.at(DeviceKind::Nic) == 8);
  CHECK(s.links.at(Fabric::InfiniBand).count == 12);
  CHECK(s.links.at(Fabric::NvLink).count == 8);
  CHECK(gbs(s.links.at(Fabric::Pcie).total_bandwidth) == doctest::Approx(8 * 64.0));
  CHECK(s.oversubscription == doctest::Approx(2.0));
  // Ranks 0-3 are on leaf0, ranks 4-7 on leaf1: everything crosses leaf0's 2 x 50 GB/s.
  CHECK(gbs(s.bisection_bandwidth) == doctest::Approx(100.0));
  CHECK(gbs(s.gpu_port_bandwidth) == doctest::Approx(450.0 + 64.0));
  CHECK(gbs(s.gpu_network_bandwidth) == doctest::Approx(50.0));  // 2 NICs / 2 GPUs
  // gpu - nic - leaf0 - spine - leaf1 - nic - gpu
  CHECK(s.diameter_hops == 6);
}

TEST_CASE("non-blocking leaf-spine reports 1:1 and bisection = half the NICs") {
  Topology t = leaf_spine_2to1();
  // Two more uplinks per leaf: 200 GB/s up for 200 GB/s down.
  const DeviceId leaf0 = *t.find_device("leaf0");
  const DeviceId leaf1 = *t.find_device("leaf1");
  const DeviceId spine0 = *t.find_device("spine0");
  const DeviceId spine1 = *t.find_device("spine1");
  wire(t, leaf0, spine0, Fabric::InfiniBand, 50_GBps);
  wire(t, leaf0, spine1, Fabric::InfiniBand, 50_GBps);
  wire(t, leaf1, spine0, Fabric::InfiniBand, 50_GBps);
  wire(t, leaf1, spine1, Fabric::InfiniBand, 50_GBps);
  const TopologySummary s = summarize(t);
  CHECK(s.oversubscription == doctest::Approx(1.0));
  CHECK(gbs(s.bisection_bandwidth) == doctest::Approx(200.0));  // 4 NICs x 50 GB/s
}

TEST_CASE("2-node cluster: per-GPU network bandwidth is the worst server's NICs / GPUs") {
  const TopologySummary s = summarize(two_nodes_asymmetric());
  CHECK(s.gpus == 16);
  CHECK(s.nodes == 2);
  CHECK(s.devices.at(DeviceKind::Nic) == 6);
  CHECK(s.links.at(Fabric::InfiniBand).count == 6);
  CHECK(gbs(s.links.at(Fabric::InfiniBand).total_bandwidth) == doctest::Approx(6 * 50.0));
  // Server 1: 2 x 400 Gbps = 100 GB/s for 8 GPUs (server 0 would give 200 / 8 = 25).
  // The PCIe links of the NICs are not network links.
  CHECK(gbs(s.gpu_network_bandwidth) == doctest::Approx(12.5));
  CHECK(gbs(s.gpu_port_bandwidth) == doctest::Approx(450.0 + 32.0));
  // Ranks 0-7 are server 0, 8-15 server 1: limited by server 1's two NICs.
  CHECK(gbs(s.bisection_bandwidth) == doctest::Approx(100.0));
  CHECK(s.oversubscription == doctest::Approx(1.0));  // one switch, no uplinks
  CHECK(s.diameter_hops == 6);  // gpu - pcie - nic - switch - nic - pcie - gpu
  // NIC rails: server 0's GPUs split their traffic over its 4 NICs, server 1's over 2; every
  // NIC serves the 8 GPUs of its PCIe switch. No switch reduces in the network.
  CHECK(s.rail_nics_min == 2);
  CHECK(s.rail_nics_max == 4);
  CHECK(s.gpus_per_nic_max == 8);
  CHECK(s.sharp_switches == 0);
}

TEST_CASE("single server: no network bandwidth") {
  Topology t("one-node");
  const DeviceId nvswitch = add(t, "n0.nvswitch", DeviceKind::NvSwitch, 0);
  for (int g = 0; g < 4; ++g) {
    wire(t, add(t, "n0.gpu" + std::to_string(g), DeviceKind::Gpu, 0), nvswitch,
            Fabric::NvLink, 450_GBps);
  }
  const TopologySummary s = summarize(t);
  CHECK(s.nodes == 1);
  CHECK(s.gpu_network_bandwidth.bytes_per_second() == 0.0);
  CHECK(gbs(s.bisection_bandwidth) == doctest::Approx(900.0));
  CHECK(s.diameter_hops == 2);
}

TEST_CASE("GPUs do not forward: the diameter ignores routes through a GPU") {
  // a - b - c joined by NVLink; a and c also reach each other over three switches.
  // Through b, a -> c would be 2 hops; without GPU forwarding it is 4.
  Topology t("no-forwarding");
  const DeviceId a = add(t, "a", DeviceKind::Gpu);
  const DeviceId b = add(t, "b", DeviceKind::Gpu);
  const DeviceId c = add(t, "c", DeviceKind::Gpu);
  const DeviceId s0 = add(t, "s0", DeviceKind::Switch);
  const DeviceId s1 = add(t, "s1", DeviceKind::Switch);
  const DeviceId s2 = add(t, "s2", DeviceKind::Switch);
  wire(t, a, b, Fabric::NvLink, 100_GBps);
  wire(t, b, c, Fabric::NvLink, 100_GBps);
  wire(t, a, s0, Fabric::Ethernet, 10_GBps);
  wire(t, s0, s1, Fabric::Ethernet, 10_GBps);
  wire(t, s1, s2, Fabric::Ethernet, 10_GBps);
  wire(t, s2, c, Fabric::Ethernet, 10_GBps);
  const TopologySummary s = summarize(t);
  CHECK(s.diameter_hops == 4);

  // The same number Router::hops() gives, pair by pair.
  const Router router(t);
  std::size_t longest = 0;
  for (const DeviceId x : t.gpus()) {
    for (const DeviceId y : t.gpus()) {
      if (x != y) longest = std::max(longest, router.hops(x, y));
    }
  }
  CHECK(longest == s.diameter_hops);
  // Rank 0 = a sends to b and c: a's own links, 100 + 10 GB/s.
  CHECK(gbs(s.bisection_bandwidth) == doctest::Approx(110.0));
}

TEST_CASE("diameter: a switch that does not reach every GPU gives no bound") {
  // Switch chain A = s0-s1-s2 holds a (on s0), c (on s2) and t (on s1); chain B = b0..b4
  // joins t to u. u also has NVLinks to a and c. Searching a first finds 4 hops (a to c) and
  // makes s1 a pivot, which cannot see u (GPUs do not forward): the t-u route of 6 hops must
  // still be found.
  Topology t("two-switch-islands");
  const DeviceId a = add(t, "a", DeviceKind::Gpu);
  const DeviceId c = add(t, "c", DeviceKind::Gpu);
  const DeviceId mid = add(t, "t", DeviceKind::Gpu);
  const DeviceId u = add(t, "u", DeviceKind::Gpu);
  DeviceId chain_a[3];
  for (int i = 0; i < 3; ++i) chain_a[i] = add(t, "s" + std::to_string(i), DeviceKind::Switch);
  wire(t, chain_a[0], chain_a[1], Fabric::Ethernet, 10_GBps);
  wire(t, chain_a[1], chain_a[2], Fabric::Ethernet, 10_GBps);
  wire(t, a, chain_a[0], Fabric::Ethernet, 10_GBps);
  wire(t, c, chain_a[2], Fabric::Ethernet, 10_GBps);
  wire(t, mid, chain_a[1], Fabric::Ethernet, 10_GBps);
  DeviceId previous = mid;
  for (int i = 0; i < 5; ++i) {
    const DeviceId b = add(t, "b" + std::to_string(i), DeviceKind::Switch);
    wire(t, previous, b, Fabric::Ethernet, 10_GBps);
    previous = b;
  }
  wire(t, previous, u, Fabric::Ethernet, 10_GBps);
  wire(t, u, a, Fabric::NvLink, 100_GBps);
  wire(t, u, c, Fabric::NvLink, 100_GBps);
  CHECK(summarize(t).diameter_hops == 6);
  CHECK(router_diameter(t) == 6);
}

TEST_CASE("diameter agrees with Router::hops pair by pair") {
  CHECK(summarize(leaf_spine_2to1()).diameter_hops == router_diameter(leaf_spine_2to1()));
  CHECK(summarize(two_nodes_asymmetric()).diameter_hops ==
        router_diameter(two_nodes_asymmetric()));
  // Random graphs exercise the eccentricity bounds where pivots fail to reach every GPU.
  for (unsigned seed = 1; seed <= 200; ++seed) {
    CAPTURE(seed);
    const Topology t = random_topology(seed);
    CHECK(summarize(t).diameter_hops == router_diameter(t));
  }
}

TEST_CASE("diameter agrees with Router::hops on template clusters") {
  for (const NetworkShape shape : {NetworkShape::SingleSwitch, NetworkShape::LeafSpine,
                                   NetworkShape::RailOptimized, NetworkShape::FatTree}) {
    CAPTURE(to_string(shape));
    const Topology t = expand_cluster(dgx_cluster(6, shape));
    CHECK(summarize(t).diameter_hops == router_diameter(t));
  }
  ClusterSpec pcie = dgx_cluster(3, NetworkShape::SingleSwitch);
  pcie.node.intra = LinkGroupSpec{Fabric::Pcie, 32_GBps, 1_us, std::nullopt, {}};
  pcie.node.intra_shape = IntraShape::RootComplex;
  pcie.node.sockets = 2;
  pcie.node.socket_link = LinkGroupSpec{Fabric::Socket, 40_GBps, 1_us, std::nullopt, {}};
  pcie.node.nics = 2;
  const Topology t = expand_cluster(pcie);
  const TopologySummary s = summarize(t);
  CHECK(s.diameter_hops == router_diameter(t));
  // One NIC per socket: a cross-server route is gpu - cpu - nic - switch - nic - cpu - gpu.
  CHECK(s.diameter_hops == 6);
}

TEST_CASE("GPU <-> NIC without P2P: each uplink counted once, and said") {
  ClusterSpec spec = dgx_cluster(2, NetworkShape::SingleSwitch);
  const TopologySummary on = summarize(expand_cluster(spec));
  CHECK(on.shared_uplinks == 0);
  CHECK(format_summary(on).find("GPU <-> NIC") == std::string::npos);
  spec.node.nic_p2p = false;
  const Topology t = expand_cluster(spec);
  const TopologySummary off = summarize(t);
  // Per server, 8 switches (one per GPU/NIC pair), each with the GPU's half and the NIC's
  // half on one uplink: PCIe links 8 GPU + 8 NIC + 8 uplinks, not 32.
  CHECK(off.shared_uplinks == 16);
  CHECK(off.links.at(Fabric::Pcie).count == 2 * 24);
  CHECK(gbs(off.links.at(Fabric::Pcie).total_bandwidth) == doctest::Approx(2 * 24 * 64.0));
  CHECK(off.devices.at(DeviceKind::PcieSwitch) == 2 * 16);
  CHECK(format_summary(off).find("GPU <-> NIC             through the CPU, no peer to peer: 16 "
                                 "PCIe switch uplinks") != std::string::npos);
  // gpu - pcie - cpu - pcie.nics - nic - switch - nic - pcie.nics - cpu - pcie - gpu
  CHECK(off.diameter_hops == 10);
  CHECK(off.diameter_hops == router_diameter(t));
}

TEST_CASE("format_summary prints every figure with its unit") {
  const std::string text = format_summary(summarize(leaf_spine_2to1()));
  CHECK(text.find("leaf-spine-2to1") != std::string::npos);
  CHECK(text.find("8 GPUs") != std::string::npos);
  CHECK(text.find("4 nodes, 2 GPUs per node") != std::string::npos);
  CHECK(text.find("2:1") != std::string::npos);
  CHECK(text.find("6 hops") != std::string::npos);
  CHECK(text.find("12 links") != std::string::npos);
  CHECK(text.find(format_rate(100_GBps)) != std::string::npos);  // bisection
  CHECK(text.find(format_rate(514_GBps)) != std::string::npos);  // port
  CHECK(text.find("infiniband") != std::string::npos);
}

TEST_CASE("format_summary gives a memory link's DRAM peak: twice its line rate each way") {
  Topology t("staged");
  const DeviceId cpu = add(t, "cpu0", DeviceKind::Cpu, 0);
  const DeviceId ports = add(t, "rootports0", DeviceKind::PcieSwitch, 0);
  wire(t, ports, cpu, Fabric::Memory, 150_GBps);
  for (int g = 0; g < 2; ++g)
    wire(t, add(t, "gpu" + std::to_string(g), DeviceKind::Gpu, 0), ports, Fabric::Pcie,
            64_GBps);
  const std::string text = format_summary(summarize(t));
  CHECK(text.find(format_rate(150_GBps) + " total line rate each way (DRAM peak " +
                  format_rate(300_GBps)) != std::string::npos);
  CHECK(text.find(format_rate(128_GBps) + " total line rate\n") != std::string::npos);  // pcie
}

TEST_CASE("summary of NVLink meshes: peers per GPU and the share rings along NVLink use") {
  // Four GPUs in a square (0-1-2-3-0) of NVLinks, the diagonals on PCIe through a CPU: one
  // ring each way uses every NVLink. Without 3-0 no ring stays on NVLink.
  const auto square = [](bool closed) {
    Topology t(closed ? "square" : "path");
    const DeviceId cpu = add(t, "cpu0", DeviceKind::Cpu, 0);
    std::vector<DeviceId> g;
    for (int i = 0; i < 4; ++i) {
      g.push_back(add(t, "gpu" + std::to_string(i), DeviceKind::Gpu, 0));
      wire(t, g.back(), cpu, Fabric::Pcie, 32_GBps);
    }
    for (int i = 0; i < (closed ? 4 : 3); ++i) wire(t, g[i], g[(i + 1) % 4], Fabric::NvLink, 50_GBps);
    return t;
  };
  const TopologySummary s = summarize(square(true));
  CHECK(s.mesh_gpus == 4);
  CHECK(s.mesh_peers_min == 2);
  CHECK(s.mesh_peers_max == 2);
  CHECK(s.mesh_ring_share == doctest::Approx(1.0));
  CHECK(format_summary(s).find("NVLink mesh             2 of 3 peers per GPU, no NVSwitch; rings "
                               "along NVLink use 100 % of the NVLinks") != std::string::npos);
  const TopologySummary open = summarize(square(false));
  CHECK(open.mesh_peers_min == 1);
  CHECK(open.mesh_ring_share == 0.0);
  CHECK(format_summary(open).find("1-2 of 3 peers per GPU, no NVSwitch; no ring stays on NVLink")
        != std::string::npos);
  CHECK(summarize(leaf_spine_2to1()).mesh_gpus == 0);
}

TEST_CASE("dot output: every device, one cluster per server, every link labelled") {
  const Topology t = leaf_spine_2to1();
  const std::string dot = to_dot(t);
  CHECK(dot.rfind("graph \"leaf-spine-2to1\" {", 0) == 0);
  for (const Device& d : t.devices()) {
    CAPTURE(d.name);
    CHECK(dot.find("\"" + d.name + "\" [shape=") != std::string::npos);
  }
  for (int node = 0; node < 4; ++node) {
    CHECK(count_of(dot, "subgraph cluster_node" + std::to_string(node) + " {") == 1);
  }
  CHECK(count_of(dot, "subgraph cluster_") == 4);
  CHECK(count_of(dot, " -- ") == t.links().size());
  CHECK(count_of(dot, "[label=\"infiniband " + format_rate(50_GBps) + "\"]") == 12);
  CHECK(count_of(dot, "[label=\"nvlink " + format_rate(450_GBps) + "\"]") == 8);
  CHECK(dot.find("\"n0.gpu0\" [shape=box") != std::string::npos);
  CHECK(dot.find("\"leaf0\" [shape=octagon") != std::string::npos);
}

TEST_CASE("dot output escapes quotes in names") {
  Topology t("say \"hi\"");
  const DeviceId g0 = add(t, "g\"0", DeviceKind::Gpu);
  const DeviceId g1 = add(t, "g1", DeviceKind::Gpu);
  wire(t, g0, g1, Fabric::NvLink, 100_GBps, Duplex::Half);
  const std::string dot = to_dot(t);
  CHECK(dot.find("graph \"say \\\"hi\\\"\" {") != std::string::npos);
  CHECK(dot.find("\"g\\\"0\" -- \"g1\"") != std::string::npos);
  CHECK(dot.find("style=dashed") != std::string::npos);
}
