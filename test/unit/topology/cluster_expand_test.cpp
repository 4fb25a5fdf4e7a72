// expand_cluster(): a cluster template (README.md, Cluster template) as devices and links.
//
// Every count below is worked out from the template by hand (servers x GPUs, NICs, switches
// per shape), every bandwidth from the sizing rules in cluster_expand.cpp (mesh = per-GPU
// NVLink / (G-1); leaf uplinks = downlink / oversubscription spread over the spines; a k-ary
// fat tree has (k/2)^2 cores and k^3/4 host ports). A miscount here means the simulator
// models a different cluster from the one the user described, with more or less capacity.
#include <doctest/doctest.h>

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gradsync/topology/cluster_spec.hpp"
#include "gradsync/units/config_error.hpp"
#include "gradsync/fabric/fabric_defaults.hpp"
#include "gradsync/topology/topology.hpp"
#include "gradsync/units/units.hpp"

using namespace gradsync;
using namespace gradsync::literals;

namespace {

LinkGroupSpec group(Fabric fabric, BytesPerSecond bandwidth, Seconds latency = 1_us,
                    int line = 0) {
  LinkGroupSpec g;
  g.fabric = fabric;
  g.bandwidth = bandwidth;
  g.latency = latency;
  g.origin = SourceMark{"cluster.yaml", line, 3};
  return g;
}

// A DGX-like server: G GPUs on one NVSwitch (450 GB/s per GPU per direction), K NICs of
// 400 Gbps behind 64 GB/s PCIe.
NodeSpec nvswitch_node(int gpus, int nics) {
  NodeSpec n;
  n.gpus = gpus;
  n.intra = group(Fabric::NvLink, 450_GBps, 1_us, 4);
  n.intra_shape = IntraShape::Switch;
  n.nics = nics;
  n.nic_bandwidth = 400_Gbps;
  if (nics > 0) n.pcie = group(Fabric::Pcie, 64_GBps, 1_us, 6);
  n.origin = SourceMark{"cluster.yaml", 3, 1};
  return n;
}

NetworkSpec network(NetworkShape shape, Fabric fabric = Fabric::InfiniBand) {
  NetworkSpec net;
  net.fabric = fabric;
  net.shape = shape;
  net.link_latency = 500_ns;
  net.switch_latency = 300_ns;
  net.origin = SourceMark{"cluster.yaml", 9, 1};
  return net;
}

ClusterSpec cluster_spec(int nodes, NodeSpec node, std::optional<NetworkSpec> net = std::nullopt) {
  ClusterSpec spec;
  spec.name = "test-cluster";
  spec.nodes = nodes;
  spec.node = std::move(node);
  spec.network = std::move(net);
  spec.origin = SourceMark{"cluster.yaml", 1, 1};
  return spec;
}

std::size_t count_kind(const Topology& t, DeviceKind kind) {
  std::size_t n = 0;
  for (const Device& d : t.devices()) n += d.kind == kind ? 1 : 0;
  return n;
}

std::vector<Link> links_of(const Topology& t, Fabric fabric) {
  std::vector<Link> out;
  for (const Link& l : t.links())
    if (l.fabric == fabric) out.push_back(l);
  return out;
}

DeviceId id_of(const Topology& t, const std::string& name) {
  const auto id = t.find_device(name);
  REQUIRE_MESSAGE(id.has_value(), "no device named " << name);
  return *id;
}

// Names of the devices linked to `name` by links of `fabric`.
std::set<std::string> neighbours(const Topology& t, const std::string& name, Fabric fabric) {
  std::set<std::string> out;
  const DeviceId d = id_of(t, name);
  for (LinkId id : t.links_of(d))
    if (t.link(id).fabric == fabric) out.insert(t.device(t.link(id).other(d)).name);
  return out;
}

std::size_t links_between(const Topology& t, const std::string& a, const std::string& b) {
  const DeviceId da = id_of(t, a);
  const DeviceId db = id_of(t, b);
  std::size_t n = 0;
  for (LinkId id : t.links_of(da)) n += t.link(id).other(da) == db ? 1 : 0;
  return n;
}

std::string route_names(const Topology& t, const Route& r) {
  std::string out;
  for (DeviceId d : r.devices) out += (out.empty() ? "" : " ") + t.device(d).name;
  return out;
}

// Names of the switches whose name starts with `prefix`.
std::size_t count_named(const Topology& t, const std::string& prefix) {
  std::size_t n = 0;
  for (const Device& d : t.devices()) n += d.name.rfind(prefix, 0) == 0 ? 1 : 0;
  return n;
}

double gbps(BytesPerSecond r) { return r.gigabytes_per_second(); }

}  // namespace

// ---------------------------------------------------------------------------------------
// Inside one server
// ---------------------------------------------------------------------------------------

TEST_CASE("NVSwitch server: 8 GPUs + 1 NVSwitch, 8 NVLink links of 450 GB/s") {
  const Topology t = expand_cluster(cluster_spec(1, nvswitch_node(8, 0)));
  CHECK(t.name() == "test-cluster");
  CHECK(t.devices().size() == 9);
  CHECK(count_kind(t, DeviceKind::Gpu) == 8);
  CHECK(count_kind(t, DeviceKind::NvSwitch) == 1);
  REQUIRE(t.gpu_count() == 8);
  for (std::size_t r = 0; r < 8; ++r) {
    CHECK(t.device(t.gpus()[r]).name == "n0.gpu" + std::to_string(r));  // rank order
    CHECK(t.device(t.gpus()[r]).node == 0);
  }
  CHECK(t.node_count() == 1);
  REQUIRE(t.links().size() == 8);
  for (const Link& l : t.links()) {
    CHECK(l.fabric == Fabric::NvLink);
    CHECK(gbps(l.bandwidth) == doctest::Approx(450.0));
    CHECK(l.latency.seconds() == doctest::Approx(1e-6));
    CHECK(l.duplex == Duplex::Full);
    CHECK(l.origin.line == 4);  // the intra group's declaration
  }
  CHECK(neighbours(t, "n0.nvswitch", Fabric::NvLink).size() == 8);
  const Router router(t);
  CHECK(router.hops(t.gpus()[0], t.gpus()[7]) == 2);
}

TEST_CASE("NVLink mesh: G(G-1)/2 direct links of bandwidth/(G-1) each") {
  for (const int g : {2, 4, 8}) {
    CAPTURE(g);
    NodeSpec node = nvswitch_node(g, 0);
    node.intra_shape = IntraShape::Mesh;
    const Topology t = expand_cluster(cluster_spec(1, node));
    CHECK(count_kind(t, DeviceKind::NvSwitch) == 0);
    CHECK(t.devices().size() == static_cast<std::size_t>(g));
    const auto nvlinks = links_of(t, Fabric::NvLink);
    REQUIRE(nvlinks.size() == static_cast<std::size_t>(g * (g - 1) / 2));
    for (const Link& l : nvlinks) CHECK(gbps(l.bandwidth) == doctest::Approx(450.0 / (g - 1)));
    // Each GPU: one link to every peer; its ports add up to the per-GPU NVLink bandwidth.
    double port = 0.0;
    for (LinkId id : t.links_of(t.gpus()[0])) port += gbps(t.link(id).bandwidth);
    CHECK(port == doctest::Approx(450.0));
    CHECK(neighbours(t, "n0.gpu0", Fabric::NvLink).size() == static_cast<std::size_t>(g - 1));
    const Router router(t);
    CHECK(router.hops(t.gpus()[0], t.gpus().back()) == 1);
  }
  // One GPU: nothing to link.
  NodeSpec one = nvswitch_node(1, 0);
  one.intra_shape = IntraShape::Mesh;
  const Topology t1 = expand_cluster(cluster_spec(1, one));
  CHECK(t1.links().empty());
  CHECK(t1.gpu_count() == 1);
}

namespace {

// An 8-GPU PCIe server on 2 sockets (32 GB/s per GPU, 40 GB/s between the CPUs), the GPUs under
// a switch per socket or on the root complex.
NodeSpec pcie_two_sockets(IntraShape shape, bool p2p = true) {
  NodeSpec node;
  node.gpus = 8;
  node.intra = group(Fabric::Pcie, 32_GBps);
  node.intra_shape = shape;
  node.pcie_p2p = p2p;
  node.sockets = 2;
  node.socket_link = group(Fabric::Socket, 40_GBps);
  return node;
}

}  // namespace

TEST_CASE("PCIe server, switch per socket, 2 sockets: GPUs split, socket link between CPUs") {
  const NodeSpec node = pcie_two_sockets(IntraShape::Switch);
  const Topology t = expand_cluster(cluster_spec(1, node));
  CHECK(count_kind(t, DeviceKind::Gpu) == 8);
  CHECK(count_kind(t, DeviceKind::Cpu) == 2);
  CHECK(count_kind(t, DeviceKind::PcieSwitch) == 2);
  CHECK(t.devices().size() == 12);
  // 8 GPU links + 2 switch uplinks to the root complexes.
  const auto pcie = links_of(t, Fabric::Pcie);
  CHECK(pcie.size() == 10);
  for (const Link& l : pcie) CHECK(gbps(l.bandwidth) == doctest::Approx(32.0));
  const auto socket = links_of(t, Fabric::Socket);
  REQUIRE(socket.size() == 1);
  CHECK(gbps(socket[0].bandwidth) == doctest::Approx(40.0));
  CHECK(links_between(t, "n0.cpu0", "n0.cpu1") == 1);
  CHECK(neighbours(t, "n0.pcie0", Fabric::Pcie) ==
        std::set<std::string>{"n0.gpu0", "n0.gpu1", "n0.gpu2", "n0.gpu3", "n0.cpu0"});
  CHECK(neighbours(t, "n0.pcie1", Fabric::Pcie) ==
        std::set<std::string>{"n0.gpu4", "n0.gpu5", "n0.gpu6", "n0.gpu7", "n0.cpu1"});
  const Router router(t);
  // Same socket: peer-to-peer under the switch. Other socket: up, across, down.
  CHECK(route_names(t, router.route(id_of(t, "n0.gpu0"), id_of(t, "n0.gpu3"))) ==
        "n0.gpu0 n0.pcie0 n0.gpu3");
  CHECK(route_names(t, router.route(id_of(t, "n0.gpu0"), id_of(t, "n0.gpu4"))) ==
        "n0.gpu0 n0.pcie0 n0.cpu0 n0.cpu1 n0.pcie1 n0.gpu4");
}

TEST_CASE("PCIe server without P2P: GPUs under one switch meet at the CPU, across sockets as before") {
  const NodeSpec node = pcie_two_sockets(IntraShape::Switch, /*p2p=*/false);
  const Topology t = expand_cluster(cluster_spec(1, node));
  for (const Device& d : t.devices())
    if (d.kind == DeviceKind::PcieSwitch) CHECK_FALSE(d.p2p);
  const Router router(t);
  CHECK(route_names(t, router.route(id_of(t, "n0.gpu0"), id_of(t, "n0.gpu3"))) ==
        "n0.gpu0 n0.pcie0 n0.cpu0 n0.pcie0 n0.gpu3");
  CHECK(route_names(t, router.route(id_of(t, "n0.gpu0"), id_of(t, "n0.gpu4"))) ==
        "n0.gpu0 n0.pcie0 n0.cpu0 n0.cpu1 n0.pcie1 n0.gpu4");
}

TEST_CASE("PCIe server on the root complex without P2P: every GPU byte is staged in its socket's DRAM") {
  NodeSpec node = pcie_two_sockets(IntraShape::RootComplex, /*p2p=*/false);
  node.host_memory = group(Fabric::Memory, 300_GBps);
  node.nics = 2;
  node.nic_bandwidth = 200_Gbps;
  node.pcie = group(Fabric::Pcie, 16_GBps);
  const Topology t = expand_cluster(cluster_spec(1, node));
  // Per socket a port group that forwards nothing between its GPUs, joined to the CPU by the
  // DRAM: half its rate each way (written by the sender one way, read by the receiver back).
  CHECK(count_kind(t, DeviceKind::PcieSwitch) == 2);
  CHECK_FALSE(t.device(id_of(t, "n0.rootports0")).p2p);
  REQUIRE(links_of(t, Fabric::Memory).size() == 2);
  for (const Link& l : links_of(t, Fabric::Memory)) {
    CHECK(gbps(l.bandwidth) == doctest::Approx(150.0));
    CHECK(l.efficiency == doctest::Approx(0.75));  // the memory fabric's default
  }
  CHECK(neighbours(t, "n0.rootports1", Fabric::Pcie) ==
        std::set<std::string>{"n0.gpu4", "n0.gpu5", "n0.gpu6", "n0.gpu7"});
  CHECK(neighbours(t, "n0.rootports1", Fabric::Memory) == std::set<std::string>{"n0.cpu1"});
  // NICs on the CPU: a GPU's network data is staged in host memory too (no GPUDirect RDMA).
  CHECK(neighbours(t, "n0.nic0", Fabric::Pcie) == std::set<std::string>{"n0.cpu0"});
  const Router router(t);
  CHECK(route_names(t, router.route(id_of(t, "n0.gpu0"), id_of(t, "n0.gpu3"))) ==
        "n0.gpu0 n0.rootports0 n0.cpu0 n0.rootports0 n0.gpu3");
  CHECK(route_names(t, router.route(id_of(t, "n0.gpu1"), id_of(t, "n0.gpu6"))) ==
        "n0.gpu1 n0.rootports0 n0.cpu0 n0.cpu1 n0.rootports1 n0.gpu6");
  CHECK(route_names(t, router.route(id_of(t, "n0.gpu5"), id_of(t, "n0.nic1"))) ==
        "n0.gpu5 n0.rootports1 n0.cpu1 n0.nic1");
}

TEST_CASE("PCIe server on the root complex: GPUs on the CPUs, no PCIe switch") {
  NodeSpec node = pcie_two_sockets(IntraShape::RootComplex);
  node.nics = 2;
  node.nic_bandwidth = 200_Gbps;
  node.pcie = group(Fabric::Pcie, 16_GBps);
  const Topology t = expand_cluster(cluster_spec(1, node));
  CHECK(count_kind(t, DeviceKind::PcieSwitch) == 0);
  CHECK(count_kind(t, DeviceKind::Cpu) == 2);
  CHECK(count_kind(t, DeviceKind::Nic) == 2);
  CHECK(links_of(t, Fabric::Pcie).size() == 8 + 2);
  CHECK(links_of(t, Fabric::Socket).size() == 1);
  // One NIC per socket, on the socket's root complex, with the pcie group's bandwidth.
  CHECK(neighbours(t, "n0.nic0", Fabric::Pcie) == std::set<std::string>{"n0.cpu0"});
  CHECK(neighbours(t, "n0.nic1", Fabric::Pcie) == std::set<std::string>{"n0.cpu1"});
  CHECK(gbps(t.link(t.links_of(id_of(t, "n0.nic1"))[0]).bandwidth) == doctest::Approx(16.0));
  CHECK(neighbours(t, "n0.cpu0", Fabric::Pcie) ==
        std::set<std::string>{"n0.gpu0", "n0.gpu1", "n0.gpu2", "n0.gpu3", "n0.nic0"});
  const Router router(t);
  CHECK(route_names(t, router.route(id_of(t, "n0.gpu1"), id_of(t, "n0.gpu6"))) ==
        "n0.gpu1 n0.cpu0 n0.cpu1 n0.gpu6");
  // One socket: no socket link at all.
  node.sockets = 1;
  node.socket_link.reset();
  const Topology one = expand_cluster(cluster_spec(1, node));
  CHECK(links_of(one, Fabric::Socket).empty());
  CHECK(count_kind(one, DeviceKind::Cpu) == 1);
}

TEST_CASE("NICs == GPUs: each GPU has its own NIC on a direct PCIe link") {
  const Topology t = expand_cluster(cluster_spec(1, nvswitch_node(8, 8)));
  CHECK(count_kind(t, DeviceKind::Nic) == 8);
  CHECK(count_kind(t, DeviceKind::PcieSwitch) == 0);
  const auto pcie = links_of(t, Fabric::Pcie);
  REQUIRE(pcie.size() == 8);
  for (int k = 0; k < 8; ++k) {
    const std::string nic = "n0.nic" + std::to_string(k);
    CHECK(neighbours(t, nic, Fabric::Pcie) == std::set<std::string>{"n0.gpu" + std::to_string(k)});
    CHECK(t.device(id_of(t, nic)).node == 0);
  }
  for (const Link& l : pcie) {
    CHECK(gbps(l.bandwidth) == doctest::Approx(64.0));
    CHECK(l.origin.line == 6);
  }
}

TEST_CASE("NICs < GPUs: GPUs and NICs share PCIe switches (8 GPUs, 2 NICs -> 2 switches)") {
  const Topology t = expand_cluster(cluster_spec(1, nvswitch_node(8, 2)));
  CHECK(count_kind(t, DeviceKind::Nic) == 2);
  CHECK(count_kind(t, DeviceKind::PcieSwitch) == 2);
  CHECK(links_of(t, Fabric::Pcie).size() == 8 + 2);
  CHECK(links_of(t, Fabric::NvLink).size() == 8);
  CHECK(neighbours(t, "n0.pcie0", Fabric::Pcie) ==
        std::set<std::string>{"n0.gpu0", "n0.gpu1", "n0.gpu2", "n0.gpu3", "n0.nic0"});
  CHECK(neighbours(t, "n0.pcie1", Fabric::Pcie) ==
        std::set<std::string>{"n0.gpu4", "n0.gpu5", "n0.gpu6", "n0.gpu7", "n0.nic1"});
  const Router router(t);
  // GPU to GPU stays on NVLink although the PCIe switch is an equal-hop path.
  CHECK(route_names(t, router.route(id_of(t, "n0.gpu0"), id_of(t, "n0.gpu1"))) ==
        "n0.gpu0 n0.nvswitch n0.gpu1");
  CHECK(route_names(t, router.route(id_of(t, "n0.gpu5"), id_of(t, "n0.nic1"))) ==
        "n0.gpu5 n0.pcie1 n0.nic1");

  // 8 GPUs, 4 NICs: 4 switches, 2 GPUs and 1 NIC each.
  const Topology four = expand_cluster(cluster_spec(1, nvswitch_node(8, 4)));
  CHECK(count_kind(four, DeviceKind::PcieSwitch) == 4);
  CHECK(neighbours(four, "n0.pcie3", Fabric::Pcie) ==
        std::set<std::string>{"n0.gpu6", "n0.gpu7", "n0.nic3"});
}

// ---------------------------------------------------------------------------------------
// Networks
// ---------------------------------------------------------------------------------------

TEST_CASE("single switch: one switch, nodes x NICs network links at the NIC rate") {
  const Topology t =
      expand_cluster(cluster_spec(4, nvswitch_node(8, 8), network(NetworkShape::SingleSwitch)));
  CHECK(t.gpu_count() == 32);
  CHECK(t.node_count() == 4);
  CHECK(count_kind(t, DeviceKind::Switch) == 1);
  CHECK(count_kind(t, DeviceKind::Nic) == 32);
  CHECK(count_kind(t, DeviceKind::NvSwitch) == 4);
  CHECK(t.devices().size() == 32 + 32 + 4 + 1);
  const Device& sw = t.device(id_of(t, "switch"));
  CHECK(sw.kind == DeviceKind::Switch);
  CHECK(sw.node == -1);
  CHECK(sw.latency.seconds() == doctest::Approx(300e-9));
  const auto ib = links_of(t, Fabric::InfiniBand);
  REQUIRE(ib.size() == 32);
  for (const Link& l : ib) {
    CHECK(gbps(l.bandwidth) == doctest::Approx(50.0));  // 400 Gbps
    CHECK(l.latency.seconds() == doctest::Approx(500e-9));
    CHECK(l.origin.line == 9);
  }
  CHECK(t.device(id_of(t, "n3.gpu7")).node == 3);
  CHECK(t.device(t.gpus()[8]).name == "n1.gpu0");  // ranks are node-major
  const Router router(t);
  CHECK(route_names(t, router.route(id_of(t, "n0.gpu2"), id_of(t, "n3.gpu5"))) ==
        "n0.gpu2 n0.nic2 switch n3.nic5 n3.gpu5");
}

TEST_CASE("direct: two servers cabled back to back, NIC k to NIC k, no switch") {
  NodeSpec pcie = nvswitch_node(4, 2);
  pcie.intra = LinkGroupSpec{Fabric::Pcie, BytesPerSecond(32e9), 500_ns, 1.0, {}};
  pcie.intra_shape = IntraShape::RootComplex;
  const Topology t = expand_cluster(cluster_spec(2, pcie, network(NetworkShape::Direct)));
  CHECK(count_kind(t, DeviceKind::Switch) == 0);
  const auto ib = links_of(t, Fabric::InfiniBand);
  REQUIRE(ib.size() == 2);
  for (const Link& l : ib) {
    CHECK(t.device(l.a).name.substr(3) == t.device(l.b).name.substr(3));  // nicK <-> nicK
    CHECK(t.device(l.a).node != t.device(l.b).node);
  }
  const Router router(t);
  const std::string r = route_names(t, router.route(id_of(t, "n0.gpu2"), id_of(t, "n1.gpu3")));
  CHECK((r == "n0.gpu2 n0.cpu0 n0.nic0 n1.nic0 n1.cpu0 n1.gpu3" ||
         r == "n0.gpu2 n0.cpu0 n0.nic1 n1.nic1 n1.cpu0 n1.gpu3"));
  CHECK_THROWS_WITH_AS(
      validate_cluster(cluster_spec(2, nvswitch_node(8, 8), network(NetworkShape::Direct))),
      doctest::Contains("node.nics: 1 on NVLink servers"), ConfigError);
  // One server (advise's reference) has nothing to cable; SHARP has no switch to reduce in.
  CHECK(expand_cluster(cluster_spec(1, pcie, network(NetworkShape::Direct))).gpu_count() == 4);
  NetworkSpec sharp = network(NetworkShape::Direct);
  sharp.sharp = true;
  CHECK_THROWS_WITH_AS(validate_cluster(cluster_spec(2, pcie, sharp)),
                       doctest::Contains("shape: direct has none"), ConfigError);
  CHECK_THROWS_WITH_AS(
      validate_cluster(cluster_spec(3, nvswitch_node(8, 8), network(NetworkShape::Direct))),
      doctest::Contains("shape: direct cables two servers back to back, and nodes is 3"),
      ConfigError);
}

TEST_CASE("leaf-spine 16 nodes x 8 NICs, 4 per leaf, 2:1 -> 4 leaves, 16 spines") {
  NetworkSpec net = network(NetworkShape::LeafSpine);
  net.hosts_per_leaf = 4;
  net.oversubscription = 2.0;
  const Topology t = expand_cluster(cluster_spec(16, nvswitch_node(8, 8), net));
  CHECK(count_named(t, "leaf") == 4);
  CHECK(count_named(t, "spine") == 16);  // 32 ports per leaf / 2 = 16 uplinks
  CHECK(count_kind(t, DeviceKind::Switch) == 20);
  const auto ib = links_of(t, Fabric::InfiniBand);
  CHECK(ib.size() == 128 + 4 * 16);
  // Each leaf: 32 NIC ports at 50 GB/s = 1600 GB/s down; 16 uplinks of
  // 32 x 50 / 2 / 16 = 50 GB/s = 800 GB/s up: exactly half.
  for (int l = 0; l < 4; ++l) {
    const DeviceId leaf = id_of(t, "leaf" + std::to_string(l));
    double down = 0.0, up = 0.0;
    std::size_t n_down = 0, n_up = 0;
    for (LinkId id : t.links_of(leaf)) {
      const Link& link = t.link(id);
      if (t.device(link.other(leaf)).kind == DeviceKind::Nic) {
        down += gbps(link.bandwidth);
        ++n_down;
      } else {
        CHECK(gbps(link.bandwidth) == doctest::Approx(32.0 * 50.0 / 2.0 / 16.0));
        up += gbps(link.bandwidth);
        ++n_up;
      }
    }
    CHECK(n_down == 32);
    CHECK(n_up == 16);
    CHECK(down == doctest::Approx(1600.0));
    CHECK(up == doctest::Approx(down / 2.0));
  }
  // Servers 0-3 on leaf0, 4-7 on leaf1, ...
  CHECK(neighbours(t, "n3.nic7", Fabric::InfiniBand) == std::set<std::string>{"leaf0"});
  CHECK(neighbours(t, "n4.nic0", Fabric::InfiniBand) == std::set<std::string>{"leaf1"});
  CHECK(neighbours(t, "n15.nic3", Fabric::InfiniBand) == std::set<std::string>{"leaf3"});
  const Router router(t);
  const DeviceId a = id_of(t, "n0.gpu0");
  const DeviceId b = id_of(t, "n4.gpu0");
  CHECK(router.hops(a, b) == 6);  // gpu nic leaf spine leaf nic gpu
  CHECK(router.equal_cost_count(a, b) == 16);
  CHECK(router.hops(a, id_of(t, "n1.gpu3")) == 4);  // same leaf: no spine
  CHECK(router.equal_cost_count(a, id_of(t, "n1.gpu3")) == 1);
}

TEST_CASE("leaf-spine sizing: uplink = downlink / oversubscription for any ratio and spines") {
  // 3:1 with automatic spines: 32 / 3 = 10.67 uplink ports -> 11 spines of 50 x 10.67 / 11.
  NetworkSpec net = network(NetworkShape::LeafSpine);
  net.hosts_per_leaf = 4;
  net.oversubscription = 3.0;
  {
    const Topology t = expand_cluster(cluster_spec(8, nvswitch_node(8, 8), net));
    CHECK(count_named(t, "spine") == 11);
    double up = 0.0;
    const DeviceId leaf = id_of(t, "leaf1");
    for (LinkId id : t.links_of(leaf))
      if (t.device(t.link(id).other(leaf)).kind == DeviceKind::Switch)
        up += gbps(t.link(id).bandwidth);
    CHECK(up == doctest::Approx(1600.0 / 3.0));
  }
  // Explicit spines: 4 spines, 1:1 -> 4 uplinks of 32 x 50 / 4 = 400 GB/s.
  net.oversubscription = 1.0;
  net.spines = 4;
  {
    const Topology t = expand_cluster(cluster_spec(8, nvswitch_node(8, 8), net));
    CHECK(count_named(t, "spine") == 4);
    CHECK(links_between(t, "leaf0", "spine3") == 1);
    CHECK(gbps(t.link(t.links_of(id_of(t, "spine0"))[0]).bandwidth) == doctest::Approx(400.0));
  }
  // 5 servers, 2 per leaf: 3 leaves, the last one half full.
  net.spines = 0;
  net.hosts_per_leaf = 2;
  {
    const Topology t = expand_cluster(cluster_spec(5, nvswitch_node(8, 8), net));
    CHECK(count_named(t, "leaf") == 3);
    CHECK(neighbours(t, "n4.nic0", Fabric::InfiniBand) == std::set<std::string>{"leaf2"});
    CHECK(neighbours(t, "leaf2", Fabric::InfiniBand).size() == 8 + 16);  // 8 NICs, 16 spines
  }
  // All servers fit on one leaf: no spines at all.
  net.hosts_per_leaf = 4;
  {
    const Topology t = expand_cluster(cluster_spec(2, nvswitch_node(8, 8), net));
    CHECK(count_named(t, "leaf") == 1);
    CHECK(count_named(t, "spine") == 0);
    CHECK(links_of(t, Fabric::InfiniBand).size() == 16);
  }
}

TEST_CASE("rail-optimized 4 nodes x 8 NICs: 8 rails of 4 NICs, joined by spines") {
  const Topology t =
      expand_cluster(cluster_spec(4, nvswitch_node(8, 8), network(NetworkShape::RailOptimized)));
  for (int r = 0; r < 8; ++r) {
    const std::string rail = "rail" + std::to_string(r);
    std::set<std::string> nics;
    for (int n = 0; n < 4; ++n) nics.insert("n" + std::to_string(n) + ".nic" + std::to_string(r));
    std::set<std::string> down;
    for (const std::string& name : neighbours(t, rail, Fabric::InfiniBand))
      if (name.rfind("spine", 0) != 0) down.insert(name);
    CHECK(down == nics);  // rail r holds NIC r of every server
  }
  CHECK(count_named(t, "rail") == 8);
  // 4 NIC ports per rail at 1:1 -> 4 spines, every rail on every spine at the NIC rate.
  CHECK(count_named(t, "spine") == 4);
  CHECK(links_of(t, Fabric::InfiniBand).size() == 32 + 8 * 4);
  CHECK(gbps(t.link(t.links_of(id_of(t, "spine2"))[0]).bandwidth) == doctest::Approx(50.0));

  const Router router(t);
  // Same rail: gpu - nic - rail - nic - gpu, exactly one rail switch, no spine.
  for (int i = 0; i < 8; ++i) {
    const std::string g = "gpu" + std::to_string(i);
    const Route r = router.route(id_of(t, "n0." + g), id_of(t, "n2." + g));
    CHECK(r.links.size() == 4);
    CHECK(route_names(t, r) == "n0." + g + " n0.nic" + std::to_string(i) + " rail" +
                                   std::to_string(i) + " n2.nic" + std::to_string(i) + " n2." + g);
  }
  // Across rails (GPU 0 of node 0 -> GPU 1 of node 1): GPUs do not forward, so the router
  // cannot go over NVLink to n0.gpu1 and out on rail 1 (what NCCL's PXN does); it goes
  // through a spine: 6 links, one equal-cost path per spine.
  const DeviceId src = id_of(t, "n0.gpu0");
  const DeviceId dst = id_of(t, "n1.gpu1");
  CHECK(router.hops(src, dst) == 6);
  CHECK(router.equal_cost_count(src, dst) == 4);
  const Route cross = router.route(src, dst);
  REQUIRE(cross.devices.size() == 7);
  CHECK(t.device(cross.devices[1]).name == "n0.nic0");
  CHECK(t.device(cross.devices[2]).name == "rail0");
  CHECK(t.device(cross.devices[3]).name.rfind("spine", 0) == 0);
  CHECK(t.device(cross.devices[4]).name == "rail1");
  CHECK(t.device(cross.devices[5]).name == "n1.nic1");
  // Within a server GPU 0 -> GPU 1 stays on the NVSwitch.
  CHECK(route_names(t, router.route(src, id_of(t, "n0.gpu1"))) == "n0.gpu0 n0.nvswitch n0.gpu1");
}

TEST_CASE("rail-optimized with hosts_per_leaf: rails split into groups rail{r}.{g}") {
  NetworkSpec net = network(NetworkShape::RailOptimized);
  net.hosts_per_leaf = 2;
  const Topology t = expand_cluster(cluster_spec(4, nvswitch_node(8, 8), net));
  CHECK(count_named(t, "rail") == 16);
  CHECK(neighbours(t, "n0.nic3", Fabric::InfiniBand) == std::set<std::string>{"rail3.0"});
  CHECK(neighbours(t, "n1.nic3", Fabric::InfiniBand) == std::set<std::string>{"rail3.0"});
  CHECK(neighbours(t, "n2.nic3", Fabric::InfiniBand) == std::set<std::string>{"rail3.1"});
  CHECK(count_named(t, "spine") == 2);  // 2 ports per rail switch at 1:1
  const Router router(t);
  CHECK(router.hops(id_of(t, "n0.gpu3"), id_of(t, "n1.gpu3")) == 4);
  CHECK(router.hops(id_of(t, "n0.gpu3"), id_of(t, "n3.gpu3")) == 6);
}

TEST_CASE("fat tree, radix chosen automatically: smallest even k with k^3/4 >= NICs") {
  // 32 NICs: k = 4 gives 16 host ports, k = 6 gives 54 -> k = 6.
  const Topology t =
      expand_cluster(cluster_spec(4, nvswitch_node(8, 8), network(NetworkShape::FatTree)));
  CHECK(count_named(t, "core") == 9);          // (k/2)^2
  CHECK(count_named(t, "edge") == 11);         // ceil(32 / 3) edges in use
  CHECK(count_named(t, "agg") == 4 * 3);       // ceil(11 / 3) = 4 pods of k/2 aggs
  CHECK(links_of(t, Fabric::InfiniBand).size() == 32 + 11 * 3 + 12 * 3);
  // An aggregation switch joins the edges of its pod and k/2 cores; pod 3 has 11 - 9 = 2 edges.
  CHECK(neighbours(t, "agg0.0", Fabric::InfiniBand) ==
        std::set<std::string>{"edge0.0", "edge0.1", "edge0.2", "core0", "core1", "core2"});
  CHECK(neighbours(t, "agg3.2", Fabric::InfiniBand) ==
        std::set<std::string>{"edge3.0", "edge3.1", "core6", "core7", "core8"});
  CHECK(neighbours(t, "n3.nic7", Fabric::InfiniBand) == std::set<std::string>{"edge3.1"});
  // Boundaries: 16 NICs fit k = 4 exactly, 17 need k = 6; 54 fit k = 6, 55 need k = 8.
  auto cores_for = [](int nodes) {
    const Topology ft =
        expand_cluster(cluster_spec(nodes, nvswitch_node(1, 1), network(NetworkShape::FatTree)));
    return count_named(ft, "core");
  };
  CHECK(cores_for(16) == 4);
  CHECK(cores_for(17) == 9);
  CHECK(cores_for(54) == 9);
  CHECK(cores_for(55) == 16);
}

TEST_CASE("fat tree with explicit radix and the k=4 path counts") {
  NetworkSpec net = network(NetworkShape::FatTree);
  net.radix = 8;  // 128 host ports, 32 used: 8 edges, 2 pods
  {
    const Topology t = expand_cluster(cluster_spec(4, nvswitch_node(8, 8), net));
    CHECK(count_named(t, "core") == 16);
    CHECK(count_named(t, "edge") == 8);
    CHECK(count_named(t, "agg") == 8);
    CHECK(links_of(t, Fabric::InfiniBand).size() == 32 + 8 * 4 + 8 * 4);
    CHECK(neighbours(t, "n0.nic3", Fabric::InfiniBand) == std::set<std::string>{"edge0.0"});
    CHECK(neighbours(t, "n0.nic4", Fabric::InfiniBand) == std::set<std::string>{"edge0.1"});
    CHECK(neighbours(t, "n2.nic0", Fabric::InfiniBand) == std::set<std::string>{"edge1.0"});
    const Router router(t);
    // Other pod: (k/2)^2 = 16 paths.
    CHECK(router.equal_cost_count(id_of(t, "n0.gpu0"), id_of(t, "n2.gpu0")) == 16);
  }
  // k = 4, 16 single-GPU servers: a full fat tree.
  net.radix = 4;
  net.oversubscription = 2.0;
  const Topology t = expand_cluster(cluster_spec(16, nvswitch_node(1, 1), net));
  CHECK(count_named(t, "core") == 4);
  CHECK(count_named(t, "agg") == 8);
  CHECK(count_named(t, "edge") == 8);
  // Switch-to-switch links carry the NIC rate / oversubscription.
  CHECK(gbps(t.link(t.links_of(id_of(t, "core0"))[0]).bandwidth) == doctest::Approx(25.0));
  CHECK(gbps(t.link(t.links_of(id_of(t, "n0.nic0"))[1]).bandwidth) == doctest::Approx(50.0));
  const Router router(t);
  const DeviceId g0 = id_of(t, "n0.gpu0");
  CHECK(router.hops(g0, id_of(t, "n1.gpu0")) == 4);  // same edge
  CHECK(router.equal_cost_count(g0, id_of(t, "n1.gpu0")) == 1);
  CHECK(router.hops(g0, id_of(t, "n2.gpu0")) == 6);  // same pod
  CHECK(router.equal_cost_count(g0, id_of(t, "n2.gpu0")) == 2);
  CHECK(router.hops(g0, id_of(t, "n4.gpu0")) == 8);  // other pod
  CHECK(router.equal_cost_count(g0, id_of(t, "n4.gpu0")) == 4);
  CHECK(router.equal_cost_count(g0, id_of(t, "n15.gpu0")) == 4);
}

// ---------------------------------------------------------------------------------------
// Efficiency
// ---------------------------------------------------------------------------------------

TEST_CASE("link efficiency: the fabric's default unless the group gives one") {
  NetworkSpec net = network(NetworkShape::SingleSwitch);
  ClusterSpec spec = cluster_spec(2, nvswitch_node(8, 8), net);
  {
    const Topology t = expand_cluster(spec);
    for (const Link& l : t.links()) {
      CAPTURE(to_string(l.fabric));
      CHECK(l.efficiency == default_efficiency(l.fabric));
    }
    // Defaults are in range and distinguish the fabrics (sim/fabric/README.md: InfiniBand
    // NICs reach 0.92-0.96 of line rate, NVLink rings ~0.8).
    for (Fabric f : {Fabric::NvLink, Fabric::Pcie, Fabric::Socket, Fabric::InfiniBand,
                     Fabric::Roce, Fabric::Ethernet}) {
      CAPTURE(to_string(f));
      CHECK(default_efficiency(f) > 0.0);
      CHECK(default_efficiency(f) <= 1.0);
    }
    CHECK(default_efficiency(Fabric::InfiniBand) >= 0.92);
    CHECK(default_efficiency(Fabric::InfiniBand) <= 0.96);
    CHECK(default_efficiency(Fabric::NvLink) < default_efficiency(Fabric::InfiniBand));
  }
  spec.node.intra.efficiency = 0.9;
  spec.node.pcie->efficiency = 0.7;
  spec.network->efficiency = 0.5;
  {
    const Topology t = expand_cluster(spec);
    for (const Link& l : links_of(t, Fabric::NvLink)) {
      CHECK(l.efficiency == doctest::Approx(0.9));
      CHECK(gbps(l.effective_bandwidth()) == doctest::Approx(405.0));
    }
    for (const Link& l : links_of(t, Fabric::Pcie)) CHECK(l.efficiency == doctest::Approx(0.7));
    for (const Link& l : links_of(t, Fabric::InfiniBand)) {
      CHECK(l.efficiency == doctest::Approx(0.5));
      CHECK(gbps(l.effective_bandwidth()) == doctest::Approx(25.0));
    }
  }
  // RoCE takes its own default and gets PFC + ECN switched on when not configured.
  spec.network->efficiency.reset();
  spec.network->fabric = Fabric::Roce;
  {
    const Topology t = expand_cluster(spec);
    const auto roce = links_of(t, Fabric::Roce);
    REQUIRE(roce.size() == 16);
    CHECK(roce[0].efficiency == default_efficiency(Fabric::Roce));
    REQUIRE(t.roce().has_value());
    CHECK(t.roce()->pfc);
    CHECK(t.roce()->ecn);
  }
}

// ---------------------------------------------------------------------------------------
// validate_cluster
// ---------------------------------------------------------------------------------------

namespace {

// Runs validate_cluster and expand_cluster; both must throw ConfigError at `line`.
void check_rejected(const ClusterSpec& spec, int line, const std::string& needle) {
  try {
    validate_cluster(spec);
    FAIL("validate_cluster accepted it");
  } catch (const ConfigError& e) {
    CHECK(e.where().file == "cluster.yaml");
    CHECK(e.where().line == line);
    CHECK_MESSAGE(e.reason().find(needle) != std::string::npos, e.reason());
  }
  CHECK_THROWS_AS((void)expand_cluster(spec), ConfigError);
}

ClusterSpec leaf_spine_cluster(int nodes) {
  NetworkSpec net = network(NetworkShape::LeafSpine);
  net.hosts_per_leaf = 4;
  return cluster_spec(nodes, nvswitch_node(8, 8), net);
}

}  // namespace

TEST_CASE("validate_cluster rejects impossible clusters with ConfigError at the right place") {
  CHECK_NOTHROW(validate_cluster(leaf_spine_cluster(8)));

  ClusterSpec spec = leaf_spine_cluster(8);
  spec.nodes = 0;
  check_rejected(spec, 1, "nodes must be between 1");

  spec = leaf_spine_cluster(8);
  spec.network->oversubscription = 0.5;
  check_rejected(spec, 9, "oversubscription");

  spec = leaf_spine_cluster(8);
  spec.network->hosts_per_leaf = 0;
  check_rejected(spec, 9, "hosts_per_leaf");

  spec = leaf_spine_cluster(8);
  spec.network->shape = NetworkShape::FatTree;
  spec.network->radix = 5;
  check_rejected(spec, 9, "even");

  spec.network->radix = 4;  // 16 host ports for 64 NICs
  check_rejected(spec, 9, "fewer than the 64 NICs");
  spec.network->radix = 8;  // 128 host ports
  CHECK_NOTHROW(validate_cluster(spec));

  spec = leaf_spine_cluster(8);
  spec.network.reset();
  check_rejected(spec, 1, "needs a network");
  spec.nodes = 1;  // one server needs no network
  CHECK_NOTHROW(validate_cluster(spec));
}

TEST_CASE("validate_cluster rejects inconsistent servers") {
  ClusterSpec spec = cluster_spec(1, nvswitch_node(8, 0));
  spec.node.gpus = 0;
  check_rejected(spec, 3, "node.gpus");

  spec = cluster_spec(1, nvswitch_node(8, 0));
  spec.node.intra.bandwidth = BytesPerSecond(0.0);
  check_rejected(spec, 4, "node.intra.bandwidth");

  spec = cluster_spec(1, nvswitch_node(8, 0));
  spec.node.intra.efficiency = 1.2;
  check_rejected(spec, 4, "node.intra.efficiency");

  spec = cluster_spec(1, nvswitch_node(8, 0));
  spec.node.intra.fabric = Fabric::InfiniBand;
  check_rejected(spec, 4, "nvlink or pcie");

  spec = cluster_spec(1, nvswitch_node(8, 0));
  spec.node.intra.fabric = Fabric::Pcie;
  spec.node.intra_shape = IntraShape::Mesh;
  check_rejected(spec, 4, "mesh");

  spec = cluster_spec(1, nvswitch_node(8, 0));
  spec.node.intra.fabric = Fabric::Pcie;
  spec.node.sockets = 2;  // no socket_link
  check_rejected(spec, 3, "socket_link");

  spec = cluster_spec(1, nvswitch_node(8, 8));
  spec.node.pcie.reset();
  check_rejected(spec, 3, "node.pcie");

  spec = cluster_spec(2, nvswitch_node(8, 0), network(NetworkShape::SingleSwitch));
  check_rejected(spec, 3, "nics");

  spec = cluster_spec(2, nvswitch_node(8, 8), network(NetworkShape::SingleSwitch, Fabric::NvLink));
  check_rejected(spec, 9, "infiniband, roce, ethernet or efa");
}
