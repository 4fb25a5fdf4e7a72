// Routing over equal-cost paths (fabric_model.hpp): static ECMP hashing with queue pairs against
// the Monte Carlo expectation of k flows hashed on k uplinks, and adaptive routing's even spread.
//
// The cluster: two leaves of `uplinks` NIC ports (one server of `uplinks` GPUs/NICs per leaf),
// `uplinks` spines, non-blocking. The `uplinks` flows NIC i of server 0 -> NIC i of server 1
// are hashed over the leaf's `uplinks` uplinks; the worst uplink's load (flows on it, each QP
// counting 1/qps) is the slowdown of a bulk phase against a perfect spread. Averaged over 2000
// hash seeds it must match the Monte Carlo figures: 8 uplinks 1 QP 2.6x, 4 QPs 1.8x, 16
// uplinks 1 QP 3.1x. A different hash (or a routing bug that always picks the first path, or
// never collides) moves these numbers.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "gradsync/topology/cluster_spec.hpp"
#include "gradsync/fabric/fabric_model.hpp"
#include "gradsync/topology/topology.hpp"

using namespace gradsync;
using namespace gradsync::literals;

namespace {

// Two NVSwitch servers of `gpus` GPUs and `nics` NICs of `nic_rate` on `net`.
Topology two_servers(int gpus, int nics, BytesPerSecond nic_rate, NetworkSpec net) {
  ClusterSpec spec;
  spec.name = "two-servers";
  spec.nodes = 2;
  spec.node.gpus = gpus;
  spec.node.intra = LinkGroupSpec{Fabric::NvLink, BytesPerSecond(450e9), 300_ns, 1.0, {}};
  spec.node.nics = nics;
  spec.node.nic_bandwidth = nic_rate;
  spec.node.pcie = LinkGroupSpec{Fabric::Pcie, BytesPerSecond(64e9), 500_ns, 1.0, {}};
  net.link_latency = 600_ns;
  spec.network = net;
  return expand_cluster(spec);
}

Topology two_leaves(int uplinks, Fabric fabric = Fabric::Roce) {
  NetworkSpec net;
  net.fabric = fabric;
  net.shape = NetworkShape::LeafSpine;
  net.hosts_per_leaf = 1;
  net.spines = uplinks;
  return two_servers(uplinks, uplinks, BytesPerSecond(12.5e9), net);
}

// Mean over seeds of the worst leaf0 -> spine load, in flows (QPs count 1/qps).
double mean_worst_uplink_load(int uplinks, std::uint32_t qps, int seeds = 2000) {
  const Topology t = two_leaves(uplinks);
  const Router router(t);
  const auto leaf0 = *t.find_device("leaf0");
  double total = 0.0;
  for (int seed = 0; seed < seeds; ++seed) {
    std::map<LinkId, double> load;
    for (int i = 0; i < uplinks; ++i) {
      const DeviceId src = *t.find_device("n0.gpu" + std::to_string(i));
      const DeviceId dst = *t.find_device("n1.gpu" + std::to_string(i));
      const std::uint64_t hash = (static_cast<std::uint64_t>(seed) << 20) ^ (src * 1000003ULL + dst);
      const PathSpread s = spread_paths(t, router, src, dst, Routing::Static, qps, hash);
      CHECK(s.qp_routes.size() == qps);
      for (const LinkShare& l : s.link_shares)
        if (l.from == leaf0) load[l.link] += l.share;
    }
    double worst = 0.0;
    for (const auto& [link, flows] : load) worst = std::max(worst, flows);
    total += worst;
  }
  return total / seeds;
}

}  // namespace

TEST_CASE("static ECMP: worst-uplink load matches the Monte Carlo collision figures") {
  CHECK(mean_worst_uplink_load(8, 1) == doctest::Approx(2.6).epsilon(0.05));
  CHECK(mean_worst_uplink_load(8, 4) == doctest::Approx(1.8).epsilon(0.05));
  CHECK(mean_worst_uplink_load(16, 1) == doctest::Approx(3.1).epsilon(0.05));
}

TEST_CASE("static routing with one QP takes the Router's hashed path") {
  const Topology t = two_leaves(8);
  const Router router(t);
  const DeviceId src = *t.find_device("n0.gpu3");
  const DeviceId dst = *t.find_device("n1.gpu5");
  const PathSpread s = spread_paths(t, router, src, dst, Routing::Static, 1, 12345);
  REQUIRE(s.qp_routes.size() == 1);
  CHECK(s.qp_routes[0].links == router.route(src, dst, 12345).links);
  CHECK(s.stages.empty());
  for (const LinkShare& l : s.link_shares) CHECK(l.share == 1.0);
}

TEST_CASE("QPs apply to routes that cross the network only") {
  const Topology t = two_leaves(8);
  const Router router(t);
  const PathSpread intra = spread_paths(t, router, *t.find_device("n0.gpu0"),
                                        *t.find_device("n0.gpu1"), Routing::Static, 4, 7);
  CHECK(intra.qp_routes.size() == 1);
}

TEST_CASE("adaptive routing spreads a cross-leaf flow evenly over every spine") {
  const Topology t = two_leaves(8);
  const Router router(t);
  const DeviceId src = *t.find_device("n0.gpu0");
  const DeviceId dst = *t.find_device("n1.gpu0");
  const PathSpread s = spread_paths(t, router, src, dst, Routing::Adaptive, 1, 99);
  // GPU -> NIC -> leaf0 -> {8 spines} -> leaf1 -> NIC -> GPU: 6 hops, 2 of them spread.
  REQUIRE(s.stages.size() == 6);
  CHECK(s.stages[2].size() == 8);
  CHECK(s.stages[3].size() == 8);
  for (const LinkShare& l : s.stages[2]) CHECK(l.share == doctest::Approx(1.0 / 8));
  double total = 0.0;
  for (const LinkShare& l : s.link_shares) total += l.share;
  CHECK(total == doctest::Approx(6.0));  // one flow's worth of bytes per hop
}

TEST_CASE("adaptive walk under a PCIe switch without P2P: up to the CPU and back down") {
  // The hop-by-hop walk must leave the switch upstream when it came from the source GPU
  // (Router::next_hops with `from`); otherwise it would turn inside the switch (2 stages).
  ClusterSpec spec;
  spec.name = "pcie-no-p2p";
  spec.node.gpus = 4;
  spec.node.intra = LinkGroupSpec{Fabric::Pcie, BytesPerSecond(32e9), 500_ns, 1.0, {}};
  spec.node.intra_shape = IntraShape::Switch;
  spec.node.pcie_p2p = false;
  const Topology t = expand_cluster(spec);
  const Router router(t);
  const DeviceId src = *t.find_device("n0.gpu0");
  const DeviceId dst = *t.find_device("n0.gpu1");
  const PathSpread s = spread_paths(t, router, src, dst, Routing::Adaptive, 1, 7);
  REQUIRE(s.stages.size() == 4);
  const DeviceId sw = *t.find_device("n0.pcie0");
  const DeviceId cpu = *t.find_device("n0.cpu0");
  CHECK(s.stages[1].front().from == sw);
  CHECK(t.link(s.stages[1].front().link).other(sw) == cpu);  // up
  CHECK(s.stages[2].front().from == cpu);                     // and back down
  CHECK(s.stages[2].front().link == s.stages[1].front().link);
}

TEST_CASE("routing defaults: adaptive on InfiniBand, static (ECMP) on RoCE and Ethernet") {
  CHECK(default_routing(Fabric::InfiniBand) == Routing::Adaptive);
  CHECK(default_routing(Fabric::Roce) == Routing::Static);
  CHECK(default_routing(Fabric::Ethernet) == Routing::Static);
  CHECK(default_routing(Fabric::Efa) == Routing::Adaptive);  // SRD sprays packets
  CHECK(effective_routing(two_leaves(4, Fabric::InfiniBand)) == Routing::Adaptive);
  Topology t = two_leaves(4, Fabric::InfiniBand);
  t.set_routing(RoutingOptions{Routing::Static, 1, 0});
  CHECK(effective_routing(t) == Routing::Static);
  CHECK(routing_from_string("adaptive") == Routing::Adaptive);
  CHECK(!routing_from_string("ecmp"));
}

namespace {

// Two servers of 8 GPUs on one switch with `nics` NICs each (nics = 16: two behind every GPU's
// PCIe switch, as AWS p5en's 16 x 200G for 8 H100s).
Topology multi_nic(int nics, Fabric fabric = Fabric::Roce) {
  NetworkSpec net;
  net.fabric = fabric;
  return two_servers(8, nics, BytesPerSecond(25e9), net);
}

// Share of the connection's bytes leaving `from` over the link to `to`.
double share_between(const Topology& t, const PathSpread& s, DeviceId from, DeviceId to) {
  double total = 0.0;
  for (const LinkShare& l : s.link_shares)
    if (l.from == from && t.link(l.link).other(from) == to) total += l.share;
  return total;
}

}  // namespace

TEST_CASE("rail NICs: the NICs nearest a GPU inside its server") {
  const Topology p5en = multi_nic(16);
  const auto rails = rail_nics(p5en, *p5en.find_device("n1.gpu3"));
  REQUIRE(rails.size() == 2);
  CHECK(p5en.device(rails[0].nic).name == "n1.nic6");
  CHECK(p5en.device(rails[1].nic).name == "n1.nic7");
  CHECK(rails[0].path.devices.size() == 3);  // gpu -> PCIe switch -> NIC
  CHECK(p5en.device(rails[0].path.devices[1]).kind == DeviceKind::PcieSwitch);
  // One NIC per GPU: its own; one NIC per two GPUs: the shared one.
  CHECK(rail_nics(multi_nic(8), *multi_nic(8).find_device("n0.gpu5")).size() == 1);
  const Topology shared = multi_nic(4);
  const auto one = rail_nics(shared, *shared.find_device("n0.gpu5"));
  REQUIRE(one.size() == 1);
  CHECK(shared.device(one[0].nic).name == "n0.nic2");
  // A PCIe server whose NICs hang off the CPU: every NIC of the socket.
  ClusterSpec pcie;
  pcie.name = "pcie-2nic";
  pcie.nodes = 2;
  pcie.node.gpus = 4;
  pcie.node.intra = LinkGroupSpec{Fabric::Pcie, BytesPerSecond(32e9), 500_ns, 1.0, {}};
  pcie.node.intra_shape = IntraShape::RootComplex;
  pcie.node.nics = 2;
  pcie.node.nic_bandwidth = BytesPerSecond(1.25e9);
  pcie.node.pcie = LinkGroupSpec{Fabric::Pcie, BytesPerSecond(8e9), 500_ns, 1.0, {}};
  NetworkSpec net;
  net.fabric = Fabric::Ethernet;
  pcie.network = net;
  const Topology p = expand_cluster(pcie);
  CHECK(rail_nics(p, *p.find_device("n0.gpu2")).size() == 2);
}

TEST_CASE("several NICs per GPU: a connection across servers is split evenly over its rails") {
  for (Routing routing : {Routing::Static, Routing::Adaptive}) {
    CAPTURE(to_string(routing));
    const Topology t = multi_nic(16);
    const Router router(t);
    const DeviceId src = *t.find_device("n0.gpu3");
    const DeviceId dst = *t.find_device("n1.gpu3");
    const PathSpread s = spread_paths(t, router, src, dst, routing, 1, 4242);
    const DeviceId psw = *t.find_device("n0.pcie3");
    // Half of the bytes through each of the GPU's two NICs, none through another GPU's.
    CHECK(share_between(t, s, psw, *t.find_device("n0.nic6")) == doctest::Approx(0.5));
    CHECK(share_between(t, s, psw, *t.find_device("n0.nic7")) == doctest::Approx(0.5));
    // NIC index r on both sides (rail r -> rail r).
    const DeviceId sw = *t.find_device("switch");
    CHECK(share_between(t, s, sw, *t.find_device("n1.nic6")) == doctest::Approx(0.5));
    CHECK(share_between(t, s, sw, *t.find_device("n1.nic7")) == doctest::Approx(0.5));
    double leaving_gpu = 0.0;
    for (const LinkShare& l : s.link_shares)
      if (l.from == src) leaving_gpu += l.share;
    CHECK(leaving_gpu == doctest::Approx(1.0));
    if (routing == Routing::Static) {
      CHECK(s.qp_routes.size() == 2);
      CHECK(s.stages.empty());
    } else {
      REQUIRE(s.stages.size() == 6);  // gpu, psw, {nic6 | nic7}, switch, {nic6 | nic7}, psw, gpu
      CHECK(s.stages[1].size() == 2);
      CHECK(s.stages[3].size() == 2);
    }
    // With QPs (static): one sub-route per rail and QP.
    if (routing == Routing::Static)
      CHECK(spread_paths(t, router, src, dst, routing, 4, 4242).qp_routes.size() == 8);
  }
  // Inside a server, or with one NIC per GPU, nothing changes.
  const Topology t = multi_nic(16);
  const Router router(t);
  CHECK(spread_paths(t, router, *t.find_device("n0.gpu0"), *t.find_device("n0.gpu1"),
                     Routing::Static, 1, 1)
            .qp_routes.size() == 1);
  const Topology one = multi_nic(8);
  const Router r1(one);
  const DeviceId a = *one.find_device("n0.gpu2");
  const DeviceId b = *one.find_device("n1.gpu2");
  const PathSpread s1 = spread_paths(one, r1, a, b, Routing::Static, 1, 77);
  REQUIRE(s1.qp_routes.size() == 1);
  CHECK(s1.qp_routes[0].links == r1.route(a, b, 77).links);
}

TEST_CASE("without GPU-NIC P2P a rail leaves and arrives through its own NICs' ports") {
  // Four 8-GPU servers without GPU <-> NIC P2P on a fat tree of the smallest radix (k = 6:
  // edge switches of 3 NICs, so one holds NICs of two servers). From such an edge switch,
  // entering the destination server through its other NIC there and crossing its PCIe to the
  // rail's NIC is as many hops as the network path: shortest paths between the two NICs take
  // it, but no NIC forwards (a packet for NIC k arrives through NIC k's port). A rail that did
  // fell back to the Router's GPU-to-GPU route, through another GPU's PCIe uplink, and a 1 GiB
  // ring ran at half the single-switch rate.
  ClusterSpec spec;
  spec.name = "fat-tree-no-p2p";
  spec.nodes = 4;
  spec.node.gpus = 8;
  spec.node.intra = LinkGroupSpec{Fabric::NvLink, BytesPerSecond(450e9), 300_ns, 1.0, {}};
  spec.node.nics = 8;
  spec.node.nic_bandwidth = BytesPerSecond(50e9);
  spec.node.pcie = LinkGroupSpec{Fabric::Pcie, BytesPerSecond(64e9), 500_ns, 1.0, {}};
  spec.node.nic_p2p = false;
  NetworkSpec net;
  net.fabric = Fabric::InfiniBand;
  net.shape = NetworkShape::FatTree;
  net.link_latency = 750_ns;
  spec.network = net;
  const Topology t = expand_cluster(spec);
  const Router router(t);
  int pairs = 0;
  for (Routing routing : {Routing::Static, Routing::Adaptive})
    for (int i = 0; i < 4; ++i)
      for (int k = 0; k < 8; ++k) {
        CAPTURE(to_string(routing));
        CAPTURE(i);
        CAPTURE(k);
        const std::string a = "n" + std::to_string(i) + ".";
        const std::string b = "n" + std::to_string((i + 1) % 4) + ".";
        const DeviceId src = *t.find_device(a + "gpu" + std::to_string(k));
        const DeviceId dst = *t.find_device(b + "gpu" + std::to_string(k));
        const DeviceId out_nic = *t.find_device(a + "nic" + std::to_string(k));
        const DeviceId in_nic = *t.find_device(b + "nic" + std::to_string(k));
        const PathSpread s = spread_paths(t, router, src, dst, routing, 2, 1000 * i + k);
        double out = 0.0, in = 0.0;
        for (const LinkShare& l : s.link_shares) {
          const DeviceId to = t.link(l.link).other(l.from);
          const int from_node = t.device(l.from).node;
          const int to_node = t.device(to).node;
          // Only the two servers' devices, and across a border only through the rail's ports.
          CHECK((from_node < 0 || from_node == t.device(src).node ||
                 from_node == t.device(dst).node));
          if (from_node >= 0 && to_node < 0) {
            CHECK(l.from == out_nic);
            out += l.share;
          }
          if (from_node < 0 && to_node >= 0) {
            CHECK(to == in_nic);
            in += l.share;
          }
        }
        CHECK(out == doctest::Approx(1.0));
        CHECK(in == doctest::Approx(1.0));
        ++pairs;
      }
  CHECK(pairs == 64);
}

TEST_CASE("routes from another server through the switch a GPU hangs off equal the full search") {
  // Every GPU reaches the network through its own NIC, a stub off its leaf: the Router walks
  // toward the leaf, then down to the GPU (Router::proxy_for). The walk must stay on the
  // shortest-path DAG toward the GPU itself, which equal_cost_routes() enumerates without it,
  // and next_hops() must offer exactly that DAG's hops at every device.
  const Topology t = two_leaves(4);
  const Router router(t);
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b) {
      const DeviceId src = *t.find_device("n0.gpu" + std::to_string(a));
      const DeviceId dst = *t.find_device("n1.gpu" + std::to_string(b));
      CAPTURE(a);
      CAPTURE(b);
      const std::vector<Route> all = router.equal_cost_routes(src, dst, 1000);
      REQUIRE(!all.empty());
      std::map<DeviceId, std::set<DeviceId>> dag;  // device -> its next devices on the DAG
      std::set<DeviceId> first_hops;               // entered from the GPU source
      for (const Route& r : all) {
        first_hops.insert(r.devices[1]);
        for (std::size_t i = 0; i + 1 < r.devices.size(); ++i)
          dag[r.devices[i]].insert(r.devices[i + 1]);
      }
      for (const auto& [at, want] : dag) {
        std::set<DeviceId> got;
        const std::optional<DeviceId> from =
            first_hops.count(at) > 0 ? std::optional<DeviceId>(src) : std::nullopt;
        for (const auto& [link, v] : router.next_hops(at, dst, from)) got.insert(v);
        CHECK(got == want);
      }
      for (std::uint64_t hash = 0; hash < 16; ++hash) {
        const Route r = router.route(src, dst, hash * 0x9e3779b97f4a7c15ULL);
        CHECK(std::any_of(all.begin(), all.end(), [&](const Route& e) {
          return e.devices == r.devices && e.links == r.links;
        }));
      }
    }
}
