// Topology::validate and Router on graphs built in code, small enough to count paths by hand.
//
// validate(): every rejected graph would otherwise reach the simulator as a platform where
// some GPU pair has no route (or a link of zero capacity, i.e. an infinite transfer time).
// GPUs do not forward traffic, so "connected" means "every GPU pair is joined through
// non-GPU devices or by a direct link" — which is not transitive (a-X-b-Y-c).
//
// Router: hop count first, then link width; ECMP candidates are the exact ties. The counts
// checked here are the textbook ones: a 2-leaf x S-spine Clos has S equal-cost paths between
// leaves; a k-ary fat tree has (k/2)^2 between pods, k/2 within a pod (Al-Fares et al.,
// SIGCOMM'08). A wrong count means wrong load spreading, hence wrong contention.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "gradsync/units/config_error.hpp"
#include "gradsync/fabric/fabric_model.hpp"
#include "gradsync/topology/fabric_registry.hpp"
#include "gradsync/fabric/nccl_model.hpp"
#include "gradsync/topology/topology.hpp"
#include "gradsync/units/units.hpp"
#include "topology_fixtures.hpp"

using namespace gradsync;
using namespace gradsync::literals;
using gradsync::test::add;

namespace {

LinkId connect(Topology& t, DeviceId a, DeviceId b, BytesPerSecond rate = 25_GBps,
               Fabric fabric = Fabric::InfiniBand, double efficiency = 1.0,
               SourceMark origin = {}) {
  Link link;
  link.a = a;
  link.b = b;
  link.fabric = fabric;
  link.bandwidth = rate;
  link.latency = 1_us;
  link.efficiency = efficiency;
  link.origin = std::move(origin);
  return t.add_link(link);
}

DeviceId dev_of(const Topology& t, const std::string& name) {
  const auto id = t.find_device(name);
  REQUIRE_MESSAGE(id.has_value(), "no device named " << name);
  return *id;
}

// n GPUs on one switch.
Topology star(int n) {
  Topology t("star");
  const DeviceId sw = add(t, "sw", DeviceKind::Switch);
  for (int i = 0; i < n; ++i) connect(t, add(t, "gpu" + std::to_string(i), DeviceKind::Gpu), sw);
  return t;
}

// Two leaves with `per_leaf` GPUs each, every leaf joined to every one of `spines` spines.
Topology leaf_spine(int spines, int per_leaf = 2) {
  Topology t("leaf-spine");
  std::vector<DeviceId> leaves;
  for (int l = 0; l < 2; ++l) {
    leaves.push_back(add(t, "leaf" + std::to_string(l), DeviceKind::Switch));
    for (int g = 0; g < per_leaf; ++g)
      connect(t, add(t, "gpu" + std::to_string(l * per_leaf + g), DeviceKind::Gpu),
              leaves.back());
  }
  for (int s = 0; s < spines; ++s) {
    const DeviceId spine = add(t, "spine" + std::to_string(s), DeviceKind::Switch);
    for (DeviceId leaf : leaves) connect(t, leaf, spine);
  }
  return t;
}

// Full 3-level k-ary fat tree with a GPU on every host port: k pods of k/2 edge and k/2
// aggregation switches, (k/2)^2 cores; aggregation a of each pod joins cores a*k/2 ...
// GPU h sits on edge h / (k/2), i.e. pod h / (k/2)^2.
Topology fat_tree(int k) {
  Topology t("fat-tree");
  const int half = k / 2;
  std::vector<DeviceId> core;
  for (int c = 0; c < half * half; ++c)
    core.push_back(add(t, "core" + std::to_string(c), DeviceKind::Switch));
  int gpu = 0;
  for (int pod = 0; pod < k; ++pod) {
    std::vector<DeviceId> agg;
    for (int a = 0; a < half; ++a) {
      agg.push_back(add(t, "agg" + std::to_string(pod) + "." + std::to_string(a),
                        DeviceKind::Switch));
      for (int c = 0; c < half; ++c) connect(t, agg.back(), core[static_cast<std::size_t>(a * half + c)]);
    }
    for (int e = 0; e < half; ++e) {
      const DeviceId edge =
          add(t, "edge" + std::to_string(pod) + "." + std::to_string(e), DeviceKind::Switch);
      for (DeviceId a : agg) connect(t, edge, a);
      for (int h = 0; h < half; ++h)
        connect(t, add(t, "gpu" + std::to_string(gpu++), DeviceKind::Gpu), edge);
    }
  }
  return t;
}

std::string names(const Topology& t, const Route& r) {
  std::string out;
  for (DeviceId d : r.devices) out += (out.empty() ? "" : " ") + t.device(d).name;
  return out;
}

// A route is well formed: consecutive devices joined by the listed links, no GPU in between.
void check_well_formed(const Topology& t, const Route& r, DeviceId src, DeviceId dst) {
  REQUIRE(r.devices.size() == r.links.size() + 1);
  CHECK(r.devices.front() == src);
  CHECK(r.devices.back() == dst);
  for (std::size_t i = 0; i < r.links.size(); ++i) {
    const Link& l = t.link(r.links[i]);
    const bool joins = (l.a == r.devices[i] && l.b == r.devices[i + 1]) ||
                       (l.b == r.devices[i] && l.a == r.devices[i + 1]);
    CHECK_MESSAGE(joins, "link " << i << " of " << names(t, r) << " does not join its devices");
  }
  for (std::size_t i = 1; i + 1 < r.devices.size(); ++i)
    CHECK_MESSAGE(t.device(r.devices[i]).kind != DeviceKind::Gpu,
                  "route " << names(t, r) << " forwards through a GPU");
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Topology::validate
// ---------------------------------------------------------------------------------------

TEST_CASE("the fabric registry: one row per fabric, read by every name and property lookup") {
  const auto rows = gradsync::fabric_registry();
  std::set<std::string> names;
  for (const gradsync::FabricInfo& f : rows) {
    CAPTURE(f.name);
    CHECK(names.insert(std::string(f.name)).second);
    CHECK(gradsync::to_string(f.fabric) == f.name);
    CHECK(gradsync::fabric_from_string(f.name) == f.fabric);
    CHECK(&gradsync::fabric_info(f.fabric) == &f);
    CHECK(gradsync::is_network_fabric(f.fabric) == f.network);
    CHECK(gradsync::link_class(f.fabric) == f.nccl_class);
    // A network hop is NCCL's NET class and ranked by `advise`; links inside a server are not.
    CHECK((f.nccl_class == gradsync::LinkClass::Net) == f.network);
    CHECK((f.advise_rank >= 0) == f.network);
    if (f.network) CHECK(gradsync::default_routing(f.fabric) == f.routing);
  }
  CHECK(names.size() == 8);
  CHECK(gradsync::fabric_names(true) ==
        std::vector<std::string>{"infiniband", "roce", "ethernet", "efa"});
  CHECK_FALSE(gradsync::fabric_from_string("nvswitch").has_value());
  // The physics the rows carry: InfiniBand and EFA route adaptively, Ethernet/RoCE hash (ECMP);
  // at one line rate TCP < RoCE = EFA < InfiniBand.
  using gradsync::Fabric;
  CHECK(gradsync::default_routing(Fabric::InfiniBand) == gradsync::Routing::Adaptive);
  CHECK(gradsync::default_routing(Fabric::Efa) == gradsync::Routing::Adaptive);
  CHECK(gradsync::default_routing(Fabric::Roce) == gradsync::Routing::Static);
  CHECK(gradsync::fabric_info(Fabric::Ethernet).advise_rank <
        gradsync::fabric_info(Fabric::Roce).advise_rank);
  CHECK(gradsync::fabric_info(Fabric::Roce).advise_rank ==
        gradsync::fabric_info(Fabric::Efa).advise_rank);
  CHECK(gradsync::fabric_info(Fabric::Efa).advise_rank <
        gradsync::fabric_info(Fabric::InfiniBand).advise_rank);
}

TEST_CASE("validate accepts a star and a lone GPU") {
  CHECK_NOTHROW(star(4).validate());
  CHECK_NOTHROW(star(1).validate());
  Topology lone("lone");
  add(lone, "gpu0", DeviceKind::Gpu);
  CHECK_NOTHROW(lone.validate());
}

TEST_CASE("validate rejects a topology without GPUs, at the topology's origin") {
  Topology t("switches-only");
  t.set_origin(SourceMark{"topo.yaml", 1, 1});
  connect(t, add(t, "sw0", DeviceKind::Switch), add(t, "sw1", DeviceKind::Switch));
  try {
    t.validate();
    FAIL("no exception");
  } catch (const ConfigError& e) {
    CHECK(e.where().line == 1);
    CHECK(e.reason().find("no GPU") != std::string::npos);
  }
}

TEST_CASE("validate rejects a self loop, pointing at the link's declaration") {
  Topology t = star(2);
  const DeviceId sw = dev_of(t, "sw");
  connect(t, sw, sw, 25_GBps, Fabric::InfiniBand, 1.0, SourceMark{"topo.yaml", 12, 5});
  try {
    t.validate();
    FAIL("no exception");
  } catch (const ConfigError& e) {
    CHECK(e.where().file == "topo.yaml");
    CHECK(e.where().line == 12);
    CHECK(e.where().column == 5);
    CHECK(e.reason().find("itself") != std::string::npos);
    CHECK(std::string(e.what()).rfind("topo.yaml:12:5: error: ", 0) == 0);
  }
}

TEST_CASE("validate rejects zero, negative and non-finite bandwidth") {
  for (const double bps : {0.0, -1e9, std::numeric_limits<double>::quiet_NaN(),
                           std::numeric_limits<double>::infinity()}) {
    CAPTURE(bps);
    Topology t = star(2);
    connect(t, dev_of(t, "gpu0"), dev_of(t, "gpu1"), BytesPerSecond(bps), Fabric::NvLink, 1.0,
            SourceMark{"t.yaml", 7, 3});
    try {
      t.validate();
      FAIL("no exception");
    } catch (const ConfigError& e) {
      CHECK(e.where().line == 7);
      CHECK(e.reason().find("bandwidth must be positive") != std::string::npos);
      CHECK(e.reason().find("gpu0 <-> gpu1") != std::string::npos);
    }
  }
}

TEST_CASE("validate accepts efficiency 1 and rejects 0, negative and above 1") {
  {
    Topology t = star(2);
    connect(t, dev_of(t, "gpu0"), dev_of(t, "gpu1"), 25_GBps, Fabric::NvLink, 1.0);
    CHECK_NOTHROW(t.validate());
  }
  for (const double e : {0.0, -0.5, 1.0000001, 1.5}) {
    CAPTURE(e);
    Topology t = star(2);
    connect(t, dev_of(t, "gpu0"), dev_of(t, "gpu1"), 25_GBps, Fabric::NvLink, e);
    CHECK_THROWS_AS(t.validate(), ConfigError);
  }
}

TEST_CASE("validate rejects negative link and device latencies") {
  {
    Topology t = star(2);
    Link l;
    l.a = dev_of(t, "gpu0");
    l.b = dev_of(t, "gpu1");
    l.bandwidth = 25_GBps;
    l.latency = Seconds(-1e-6);
    t.add_link(l);
    CHECK_THROWS_AS(t.validate(), ConfigError);
  }
  {
    Topology t("neg");
    Device sw;
    sw.name = "sw";
    sw.kind = DeviceKind::Switch;
    sw.latency = Seconds(-1e-9);
    const DeviceId s = t.add_device(sw);
    connect(t, add(t, "gpu0", DeviceKind::Gpu), s);
    CHECK_THROWS_AS(t.validate(), ConfigError);
  }
}

TEST_CASE("validate rejects two islands and names a GPU that cannot be reached") {
  Topology t("islands");
  const DeviceId sw0 = add(t, "sw0", DeviceKind::Switch);
  const DeviceId sw1 = add(t, "sw1", DeviceKind::Switch);
  connect(t, add(t, "gpu0", DeviceKind::Gpu), sw0);
  connect(t, add(t, "gpu1", DeviceKind::Gpu), sw0);
  connect(t, add(t, "gpu2", DeviceKind::Gpu), sw1);
  connect(t, add(t, "gpu3", DeviceKind::Gpu), sw1);
  try {
    t.validate();
    FAIL("no exception");
  } catch (const ConfigError& e) {
    CHECK(e.reason().find("disconnected") != std::string::npos);
    // The first unreachable pair in rank order is (gpu0, gpu2).
    CHECK(e.reason().find("GPU gpu2 cannot reach GPU gpu0") != std::string::npos);
  }
  // Joining the two switches makes it valid.
  connect(t, sw0, sw1);
  CHECK_NOTHROW(t.validate());
}

TEST_CASE("validate rejects a GPU reachable only through another GPU") {
  // gpu0 - sw - gpu1 - gpu2: gpu2 hangs off gpu1 only, and GPUs do not forward.
  Topology t("behind-a-gpu");
  const DeviceId sw = add(t, "sw", DeviceKind::Switch);
  const DeviceId g0 = add(t, "gpu0", DeviceKind::Gpu);
  const DeviceId g1 = add(t, "gpu1", DeviceKind::Gpu);
  const DeviceId g2 = add(t, "gpu2", DeviceKind::Gpu);
  connect(t, g0, sw);
  connect(t, g1, sw);
  connect(t, g1, g2, 100_GBps, Fabric::NvLink);
  try {
    t.validate();
    FAIL("no exception");
  } catch (const ConfigError& e) {
    CHECK(e.reason().find("GPU gpu2 cannot reach GPU gpu0") != std::string::npos);
  }
  // The same GPU behind a NIC (a forwarding device) is fine.
  Topology ok("behind-a-nic");
  const DeviceId sw2 = add(ok, "sw", DeviceKind::Switch);
  connect(ok, add(ok, "gpu0", DeviceKind::Gpu), sw2);
  const DeviceId nic = add(ok, "nic", DeviceKind::Nic);
  connect(ok, nic, sw2);
  connect(ok, add(ok, "gpu1", DeviceKind::Gpu), nic);
  CHECK_NOTHROW(ok.validate());
}

TEST_CASE("validate accepts GPUs joined only by direct links, pair by pair") {
  Topology two("pair");
  connect(two, add(two, "gpu0", DeviceKind::Gpu), add(two, "gpu1", DeviceKind::Gpu), 100_GBps,
          Fabric::NvLink);
  CHECK_NOTHROW(two.validate());

  // A full mesh of 4 GPUs: every pair has its own link.
  Topology mesh("mesh");
  std::vector<DeviceId> g;
  for (int i = 0; i < 4; ++i) g.push_back(add(mesh, "gpu" + std::to_string(i), DeviceKind::Gpu));
  for (std::size_t a = 0; a < g.size(); ++a)
    for (std::size_t b = a + 1; b < g.size(); ++b) connect(mesh, g[a], g[b], 50_GBps, Fabric::NvLink);
  CHECK_NOTHROW(mesh.validate());

  // A chain gpu0 - gpu1 - gpu2 is not a mesh: gpu0 and gpu2 have no path without transit.
  Topology chain("chain");
  const DeviceId c0 = add(chain, "gpu0", DeviceKind::Gpu);
  const DeviceId c1 = add(chain, "gpu1", DeviceKind::Gpu);
  const DeviceId c2 = add(chain, "gpu2", DeviceKind::Gpu);
  connect(chain, c0, c1, 50_GBps, Fabric::NvLink);
  connect(chain, c1, c2, 50_GBps, Fabric::NvLink);
  CHECK_THROWS_AS(chain.validate(), ConfigError);
}

TEST_CASE("validate: reachability is not transitive (a - X - b - Y - c is rejected)") {
  // b touches both islands, so every island holds 2 of the 3 GPUs, yet a cannot reach c.
  Topology t("non-transitive");
  const DeviceId a = add(t, "a", DeviceKind::Gpu);
  const DeviceId b = add(t, "b", DeviceKind::Gpu);
  const DeviceId c = add(t, "c", DeviceKind::Gpu);
  const DeviceId x = add(t, "X", DeviceKind::Switch);
  const DeviceId y = add(t, "Y", DeviceKind::Switch);
  connect(t, a, x);
  connect(t, b, x);
  connect(t, b, y);
  connect(t, c, y);
  try {
    t.validate();
    FAIL("no exception");
  } catch (const ConfigError& e) {
    CHECK(e.reason().find("GPU c cannot reach GPU a") != std::string::npos);
  }
  // A direct a-c link closes the last pair.
  connect(t, a, c, 50_GBps, Fabric::NvLink);
  CHECK_NOTHROW(t.validate());
}

// ---------------------------------------------------------------------------------------
// Router
// ---------------------------------------------------------------------------------------

TEST_CASE("route on a star: two hops through the switch") {
  const Topology t = star(8);
  const Router router(t);
  const DeviceId g0 = dev_of(t, "gpu0");
  const DeviceId g5 = dev_of(t, "gpu5");
  const Route r = router.route(g0, g5);
  check_well_formed(t, r, g0, g5);
  CHECK(names(t, r) == "gpu0 sw gpu5");
  CHECK(r.links.size() == 2);
  CHECK(router.hops(g0, g5) == 2);
  CHECK(router.hops(g5, g0) == 2);
  CHECK(router.equal_cost_count(g0, g5) == 1);
  // A device to itself: no links.
  CHECK(router.route(g0, g0).links.empty());
  CHECK(router.hops(g0, g0) == 0);
}

TEST_CASE("route prefers NVSwitch over an equal-hop PCIe switch, but never a longer path") {
  // gpu0 and gpu1 both hang off an NVSwitch (450 GB/s) and a PCIe switch (64 GB/s):
  // two 2-hop paths; the wider one wins and is the only candidate.
  Topology t("dual");
  const DeviceId g0 = add(t, "gpu0", DeviceKind::Gpu, 0);
  const DeviceId g1 = add(t, "gpu1", DeviceKind::Gpu, 0);
  const DeviceId pcie = add(t, "pcie", DeviceKind::PcieSwitch, 0);
  const DeviceId nvs = add(t, "nvswitch", DeviceKind::NvSwitch, 0);
  // PCIe first in declaration order, so insertion order cannot be what picks NVLink.
  connect(t, g0, pcie, 64_GBps, Fabric::Pcie);
  connect(t, g1, pcie, 64_GBps, Fabric::Pcie);
  connect(t, g0, nvs, 450_GBps, Fabric::NvLink);
  connect(t, g1, nvs, 450_GBps, Fabric::NvLink);
  const Router router(t);
  CHECK(names(t, router.route(g0, g1)) == "gpu0 nvswitch gpu1");
  CHECK(names(t, router.route(g1, g0)) == "gpu1 nvswitch gpu0");
  CHECK(router.equal_cost_count(g0, g1) == 1);
  for (std::uint64_t h = 0; h < 32; ++h) CHECK(router.route(g0, g1, h).devices[1] == nvs);

  // Hops come first: a 3-hop all-NVLink path loses to the 2-hop PCIe path.
  Topology u("hops-first");
  const DeviceId a = add(u, "gpu0", DeviceKind::Gpu);
  const DeviceId b = add(u, "gpu1", DeviceKind::Gpu);
  const DeviceId p = add(u, "pcie", DeviceKind::PcieSwitch);
  const DeviceId n0 = add(u, "nvs0", DeviceKind::NvSwitch);
  const DeviceId n1 = add(u, "nvs1", DeviceKind::NvSwitch);
  connect(u, a, n0, 900_GBps, Fabric::NvLink);
  connect(u, n0, n1, 900_GBps, Fabric::NvLink);
  connect(u, n1, b, 900_GBps, Fabric::NvLink);
  connect(u, a, p, 32_GBps, Fabric::Pcie);
  connect(u, p, b, 32_GBps, Fabric::Pcie);
  const Router ru(u);
  CHECK(names(u, ru.route(a, b)) == "gpu0 pcie gpu1");
  CHECK(ru.hops(a, b) == 2);
}

TEST_CASE("routes never pass through a third GPU, even when that is much shorter") {
  // gpu0 = gpu1 = gpu2 by NVLink (2 hops through gpu1), or gpu0 - s0 - s1 - s2 - gpu2.
  Topology t("no-transit");
  const DeviceId g0 = add(t, "gpu0", DeviceKind::Gpu);
  const DeviceId g1 = add(t, "gpu1", DeviceKind::Gpu);
  const DeviceId g2 = add(t, "gpu2", DeviceKind::Gpu);
  connect(t, g0, g1, 450_GBps, Fabric::NvLink);
  connect(t, g1, g2, 450_GBps, Fabric::NvLink);
  const DeviceId s0 = add(t, "s0", DeviceKind::Switch);
  const DeviceId s1 = add(t, "s1", DeviceKind::Switch);
  const DeviceId s2 = add(t, "s2", DeviceKind::Switch);
  connect(t, g0, s0);
  connect(t, s0, s1);
  connect(t, s1, s2);
  connect(t, s2, g2);
  connect(t, g1, s1);
  CHECK_NOTHROW(t.validate());
  const Router router(t);
  const Route r = router.route(g0, g2);
  check_well_formed(t, r, g0, g2);
  CHECK(names(t, r) == "gpu0 s0 s1 s2 gpu2");
  CHECK(router.hops(g0, g2) == 4);
  CHECK(router.equal_cost_count(g0, g2) == 1);
  for (const Route& e : router.equal_cost_routes(g0, g2)) check_well_formed(t, e, g0, g2);
  // A direct link to the destination GPU is of course used.
  CHECK(names(t, router.route(g0, g1)) == "gpu0 gpu1");
  CHECK(names(t, router.route(g2, g1)) == "gpu2 gpu1");
  // gpu1 -> gpu0 has the direct link; gpu1 -> gpu2 too. Neither goes through the other GPU.
  CHECK(router.hops(g1, g0) == 1);
}

TEST_CASE("a path through a GPU that ties with a switch path is not an ECMP candidate") {
  // gpu0 - s0 - s1 - s2 - gpu2 and gpu0 - s0 - gpu1 - s2 - gpu2: same hops, same widths.
  Topology t("tie-through-gpu");
  const DeviceId g0 = add(t, "gpu0", DeviceKind::Gpu);
  const DeviceId g1 = add(t, "gpu1", DeviceKind::Gpu);
  const DeviceId g2 = add(t, "gpu2", DeviceKind::Gpu);
  const DeviceId s0 = add(t, "s0", DeviceKind::Switch);
  const DeviceId s1 = add(t, "s1", DeviceKind::Switch);
  const DeviceId s2 = add(t, "s2", DeviceKind::Switch);
  connect(t, g0, s0);
  connect(t, s0, g1);  // gpu1 first in s0's links
  connect(t, g1, s2);
  connect(t, s0, s1);
  connect(t, s1, s2);
  connect(t, s2, g2);
  const Router router(t);
  CHECK(router.equal_cost_count(g0, g2) == 1);
  const auto routes = router.equal_cost_routes(g0, g2);
  REQUIRE(routes.size() == 1);
  CHECK(names(t, routes[0]) == "gpu0 s0 s1 s2 gpu2");
  for (std::uint64_t h = 0; h < 64; ++h) check_well_formed(t, router.route(g0, g2, h), g0, g2);
}

TEST_CASE("2 leaves x 4 spines: 4 equal-cost paths, one per spine") {
  const Topology t = leaf_spine(4);
  const Router router(t);
  const DeviceId src = dev_of(t, "gpu0");  // leaf0
  const DeviceId dst = dev_of(t, "gpu3");  // leaf1
  CHECK(router.hops(src, dst) == 4);
  CHECK(router.equal_cost_count(src, dst) == 4);
  CHECK(router.equal_cost_count(dst, src) == 4);
  const std::vector<Route> routes = router.equal_cost_routes(src, dst);
  REQUIRE(routes.size() == 4);
  std::set<std::string> spines;
  std::set<std::vector<LinkId>> distinct;
  for (const Route& r : routes) {
    check_well_formed(t, r, src, dst);
    CHECK(r.links.size() == 4);
    CHECK(t.device(r.devices[1]).name == "leaf0");
    CHECK(t.device(r.devices[3]).name == "leaf1");
    spines.insert(t.device(r.devices[2]).name);
    distinct.insert(r.links);
  }
  CHECK(spines == std::set<std::string>{"spine0", "spine1", "spine2", "spine3"});
  CHECK(distinct.size() == 4);
  // `limit` caps the enumeration.
  CHECK(router.equal_cost_routes(src, dst, 2).size() == 2);
  CHECK(router.equal_cost_routes(src, dst, 0).empty());
  // Same leaf: one 2-hop path, no detour through a spine.
  CHECK(router.equal_cost_count(src, dev_of(t, "gpu1")) == 1);
  CHECK(names(t, router.route(src, dev_of(t, "gpu1"))) == "gpu0 leaf0 gpu1");
}

TEST_CASE("ECMP hashing spreads 1000 flows over the 4 spines roughly evenly") {
  const Topology t = leaf_spine(4);
  const Router router(t);
  const DeviceId src = dev_of(t, "gpu0");
  const DeviceId dst = dev_of(t, "gpu2");
  std::map<std::string, int> per_spine;
  constexpr int kFlows = 1000;
  for (std::uint64_t h = 0; h < kFlows; ++h) {
    const Route r = router.route(src, dst, h);
    REQUIRE(r.links.size() == 4);
    ++per_spine[t.device(r.devices[2]).name];
  }
  REQUIRE(per_spine.size() == 4);
  for (const auto& [spine, flows] : per_spine) {
    CAPTURE(spine);
    CHECK(flows >= 150);  // 15 % of 1000 (ideal 250; binomial sd ~14)
    CHECK(flows <= 350);
  }
  // The same spread for hashes that differ only in high bits (a weak hash would collapse).
  std::map<std::string, int> high;
  for (std::uint64_t h = 0; h < kFlows; ++h)
    ++high[t.device(router.route(src, dst, h << 40).devices[2]).name];
  REQUIRE(high.size() == 4);
  for (const auto& [spine, flows] : high) {
    CAPTURE(spine);
    CHECK(flows >= 150);
    CHECK(flows <= 350);
  }
}

TEST_CASE("ECMP choice is deterministic: same hash, same route, in any Router") {
  const Topology t = leaf_spine(8, 4);
  const Router first(t);
  const Router second(t);
  const DeviceId src = dev_of(t, "gpu1");
  const DeviceId dst = dev_of(t, "gpu6");
  CHECK(first.equal_cost_count(src, dst) == 8);
  std::set<std::vector<LinkId>> seen;
  for (std::uint64_t h : {0ULL, 1ULL, 42ULL, 0xdeadbeefULL, ~0ULL}) {
    CAPTURE(h);
    const Route r = first.route(src, dst, h);
    CHECK(first.route(src, dst, h).links == r.links);
    CHECK(second.route(src, dst, h).links == r.links);
    seen.insert(r.links);
  }
  CHECK(seen.size() > 1);  // different hashes do pick different spines
  // Routing to another destination in between does not disturb the cached distances.
  (void)first.route(src, dev_of(t, "gpu2"), 7);
  CHECK(first.route(src, dst, 42).links == second.route(src, dst, 42).links);
}

TEST_CASE("routes and counts stay the same when many destinations are routed") {
  // More destinations than any sensible distance cache holds: revisiting the first ones
  // after the others (in reverse order) must give the same answers as a fresh Router.
  const Topology t = leaf_spine(4, 100);
  const Router busy(t);
  const DeviceId src = dev_of(t, "gpu0");
  std::vector<Route> first;
  for (DeviceId dst : t.gpus()) first.push_back(busy.route(src, dst, dst * 31));
  for (std::size_t i = t.gpu_count(); i-- > 0;) {
    const DeviceId dst = t.gpus()[i];
    CAPTURE(t.device(dst).name);
    CHECK(busy.route(src, dst, dst * 31).links == first[i].links);
    CHECK(busy.equal_cost_count(src, dst) == (i == 0 ? 1u : i < 100 ? 1u : 4u));
    CHECK(busy.hops(dst, src) == (i == 0 ? 0u : i < 100 ? 2u : 4u));
  }
  const Router fresh(t);
  CHECK(fresh.route(src, t.gpus()[150], t.gpus()[150] * 31).links == first[150].links);
}

TEST_CASE("k=4 fat tree: (k/2)^2 = 4 paths between pods, k/2 = 2 inside a pod") {
  const Topology t = fat_tree(4);
  REQUIRE(t.gpu_count() == 16);  // k^3/4 hosts
  CHECK_NOTHROW(t.validate());
  const Router router(t);
  const DeviceId g0 = dev_of(t, "gpu0");  // pod 0, edge 0
  // Same edge: gpu - edge - gpu.
  CHECK(router.hops(g0, dev_of(t, "gpu1")) == 2);
  CHECK(router.equal_cost_count(g0, dev_of(t, "gpu1")) == 1);
  // Same pod, other edge: gpu - edge - agg - edge - gpu, one path per aggregation switch.
  CHECK(router.hops(g0, dev_of(t, "gpu2")) == 4);
  CHECK(router.equal_cost_count(g0, dev_of(t, "gpu2")) == 2);
  // Other pod: gpu - edge - agg - core - agg - edge - gpu.
  for (const char* far : {"gpu4", "gpu9", "gpu15"}) {
    CAPTURE(far);
    const DeviceId dst = dev_of(t, far);
    CHECK(router.hops(g0, dst) == 6);
    CHECK(router.equal_cost_count(g0, dst) == 4);
    std::set<std::string> cores;
    for (const Route& r : router.equal_cost_routes(g0, dst)) {
      check_well_formed(t, r, g0, dst);
      cores.insert(t.device(r.devices[3]).name);
    }
    CHECK(cores.size() == 4);  // each path through a different core
  }
  // k = 6: (k/2)^2 = 9 between pods (54 hosts, pod = 9 hosts).
  const Topology t6 = fat_tree(6);
  const Router r6(t6);
  CHECK(r6.equal_cost_count(dev_of(t6, "gpu0"), dev_of(t6, "gpu53")) == 9);
  CHECK(r6.equal_cost_count(dev_of(t6, "gpu0"), dev_of(t6, "gpu3")) == 3);
}

TEST_CASE("unreachable destination: route and hops throw, counts are zero") {
  Topology t("two-islands");  // not validated on purpose
  const DeviceId g0 = add(t, "gpu0", DeviceKind::Gpu);
  const DeviceId g1 = add(t, "gpu1", DeviceKind::Gpu);
  const DeviceId g2 = add(t, "gpu2", DeviceKind::Gpu);
  const DeviceId sw = add(t, "sw", DeviceKind::Switch);
  connect(t, g0, sw);
  connect(t, g1, sw);
  connect(t, g1, g2, 50_GBps, Fabric::NvLink);  // gpu2 only behind gpu1
  const Router router(t);
  CHECK_THROWS_AS((void)router.route(g0, g2), std::logic_error);
  CHECK_THROWS_AS((void)router.hops(g0, g2), std::logic_error);
  CHECK_THROWS_AS((void)router.hops(g2, g0), std::logic_error);
  CHECK(router.equal_cost_count(g0, g2) == 0);
  CHECK(router.equal_cost_routes(g0, g2).empty());
  // The reachable pairs still route.
  CHECK(router.hops(g0, g1) == 2);
  CHECK(router.hops(g1, g2) == 1);
}

// PCIe switches without peer to peer (Device::p2p false)
// ---------------------------------------------------------------------------------------
// The one forbidden pattern is [GPU, no-P2P switch, GPU]: GPU-to-GPU data under such a switch
// goes up to the CPU (host memory) and back down, crossing the switch twice. If the router
// ignored p2p, the routes below would stay "gpu0 sw gpu1" (2 hops) and the uplink would carry
// nothing.

namespace {

// `gpus` GPUs under one PCIe switch, the switch's uplink to a CPU; optionally a second CPU
// joined to the first and to the switch (two equal-cost ways up).
Topology pcie_switch_server(int gpus, bool p2p, bool second_cpu = false) {
  Topology t(p2p ? "pcie-p2p" : "pcie-no-p2p");
  Device sw;
  sw.name = "sw";
  sw.kind = DeviceKind::PcieSwitch;
  sw.p2p = p2p;
  const DeviceId s = t.add_device(sw);
  const DeviceId cpu = add(t, "cpu", DeviceKind::Cpu);
  connect(t, s, cpu, 32_GBps, Fabric::Pcie);
  if (second_cpu) {
    const DeviceId cpu1 = add(t, "cpu1", DeviceKind::Cpu);
    connect(t, s, cpu1, 32_GBps, Fabric::Pcie);
    connect(t, cpu, cpu1, 32_GBps, Fabric::Socket);
  }
  for (int i = 0; i < gpus; ++i)
    connect(t, add(t, "gpu" + std::to_string(i), DeviceKind::Gpu), s, 32_GBps, Fabric::Pcie);
  t.validate();
  return t;
}

}  // namespace

TEST_CASE("PCIe switch with P2P: GPU-to-GPU traffic turns inside the switch") {
  const Topology t = pcie_switch_server(4, true);
  const Router router(t);
  const DeviceId g0 = dev_of(t, "gpu0");
  const DeviceId g1 = dev_of(t, "gpu1");
  CHECK(names(t, router.route(g0, g1)) == "gpu0 sw gpu1");
  CHECK(router.hops(g0, g1) == 2);
}

TEST_CASE("PCIe switch without P2P: GPU-to-GPU traffic goes up to the CPU and back") {
  const Topology t = pcie_switch_server(4, false);
  const Router router(t);
  const DeviceId g0 = dev_of(t, "gpu0");
  const DeviceId g1 = dev_of(t, "gpu1");
  const DeviceId sw = dev_of(t, "sw");
  const DeviceId cpu = dev_of(t, "cpu");
  for (std::uint64_t hash : {0ULL, 1ULL, 12345ULL}) {
    const Route r = router.route(g0, g1, hash);
    check_well_formed(t, r, g0, g1);
    CHECK(names(t, r) == "gpu0 sw cpu sw gpu1");
  }
  CHECK(router.hops(g0, g1) == 4);
  CHECK(router.hops(g1, g0) == 4);
  CHECK(router.equal_cost_count(g0, g1) == 1);
  const auto all = router.equal_cost_routes(g0, g1);
  REQUIRE(all.size() == 1);
  CHECK(names(t, all[0]) == "gpu0 sw cpu sw gpu1");
  // The uplink is crossed once each way.
  const Route r = router.route(g0, g1);
  CHECK(r.links[1] == r.links[2]);
  // next_hops: entered from a GPU the way on is up; entered from the CPU, down to the GPU.
  const auto up = router.next_hops(sw, g1, g0);
  REQUIRE(up.size() == 1);
  CHECK(up[0].second == cpu);
  const auto down = router.next_hops(sw, g1, cpu);
  REQUIRE(down.size() == 1);
  CHECK(down[0].second == g1);
  CHECK(router.next_hops(sw, g1).size() == 1);
  CHECK(router.next_hops(sw, g1)[0].second == g1);
  // Traffic that does not start at a GPU is unaffected.
  CHECK(names(t, router.route(cpu, g1)) == "cpu sw gpu1");
  CHECK(names(t, router.route(g1, cpu)) == "gpu1 sw cpu");
}

TEST_CASE("PCIe switch without P2P, two ways up: both are equal-cost candidates") {
  const Topology t = pcie_switch_server(2, false, true);
  const Router router(t);
  const DeviceId g0 = dev_of(t, "gpu0");
  const DeviceId g1 = dev_of(t, "gpu1");
  CHECK(router.hops(g0, g1) == 4);
  CHECK(router.equal_cost_count(g0, g1) == 2);
  std::set<std::string> seen;
  for (const Route& r : router.equal_cost_routes(g0, g1)) {
    check_well_formed(t, r, g0, g1);
    seen.insert(names(t, r));
  }
  CHECK(seen == std::set<std::string>{"gpu0 sw cpu sw gpu1", "gpu0 sw cpu1 sw gpu1"});
  for (std::uint64_t hash = 0; hash < 64; ++hash) seen.erase(names(t, router.route(g0, g1, hash)));
  CHECK(seen.empty());  // the hash reaches both
}

TEST_CASE("PCIe switch without P2P is bypassed when the GPUs share a P2P path") {
  // gpu0 and gpu1 sit under the no-P2P switch and also on an NVSwitch: the NVSwitch wins.
  Topology t = pcie_switch_server(2, false);
  const DeviceId nv = add(t, "nvswitch", DeviceKind::NvSwitch);
  connect(t, dev_of(t, "gpu0"), nv, 450_GBps, Fabric::NvLink);
  connect(t, dev_of(t, "gpu1"), nv, 450_GBps, Fabric::NvLink);
  const Router router(t);
  CHECK(names(t, router.route(dev_of(t, "gpu0"), dev_of(t, "gpu1"))) == "gpu0 nvswitch gpu1");
}

TEST_CASE("routes stay right when many destinations cycle through the distance cache") {
  // 100 GPUs > the cache's 64 destinations: every pair, in an order that evicts, still
  // crosses the CPU.
  const Topology t = pcie_switch_server(100, false);
  const Router router(t);
  for (int round = 0; round < 2; ++round)
    for (std::size_t i = 0; i < t.gpus().size(); ++i) {
      const DeviceId src = t.gpus()[(i * 7) % t.gpus().size()];
      const DeviceId dst = t.gpus()[i];
      if (src == dst) continue;
      CHECK(router.hops(src, dst) == 4);
    }
}

TEST_CASE("validate: p2p false needs a PCIe switch with a link upstream") {
  Topology lone("lone");
  Device sw;
  sw.name = "sw";
  sw.kind = DeviceKind::PcieSwitch;
  sw.p2p = false;
  sw.origin = SourceMark{"t.yaml", 4, 12};
  const DeviceId s = lone.add_device(sw);
  connect(lone, add(lone, "gpu0", DeviceKind::Gpu), s, 32_GBps, Fabric::Pcie);
  connect(lone, add(lone, "gpu1", DeviceKind::Gpu), s, 32_GBps, Fabric::Pcie);
  try {
    lone.validate();
    FAIL("no exception");
  } catch (const ConfigError& e) {
    CHECK(e.where().line == 4);
    CHECK(e.where().column == 12);
    CHECK(e.reason().find("needs a link to a CPU") != std::string::npos);
  }
  Topology on_switch("ethernet switch");
  Device net;
  net.name = "net";
  net.kind = DeviceKind::Switch;
  net.p2p = false;
  const DeviceId n = on_switch.add_device(net);
  connect(on_switch, add(on_switch, "gpu0", DeviceKind::Gpu), n);
  try {
    on_switch.validate();
    FAIL("no exception");
  } catch (const ConfigError& e) {
    CHECK(e.reason().find("PCIe switches only") != std::string::npos);
  }
}
