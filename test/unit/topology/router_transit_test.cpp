// Router on clusters whose servers could carry traffic between network devices (a CPU and PCIe
// switches joining the NICs: node.pcie.p2p false, PCIe servers). The router's searches leave
// such servers out unless the route starts or ends there, which must change no route: every
// route's cost and every equal-cost count here equal a plain Dijkstra over the whole graph (GPUs
// never forward), on template clusters, on random graphs of servers, and where a server is the
// only way between two switches (then it carries the traffic, as before).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <queue>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gradsync/topology/cluster_spec.hpp"
#include "gradsync/topology/topology.hpp"
#include "gradsync/units/splitmix64.hpp"
#include "gradsync/units/units.hpp"
#include "topology_fixtures.hpp"

using namespace gradsync;
using namespace gradsync::literals;
using gradsync::test::add;
using gradsync::test::dgx_cluster;

namespace {

constexpr std::uint64_t kNone = std::numeric_limits<std::uint64_t>::max();

// The Router's documented link cost: one hop, plus a little for narrow links.
std::uint64_t cost_of(const Link& l) {
  const double gbps = std::max(l.bandwidth.gigabytes_per_second(), 1e-6);
  return Router::kHopCost +
         static_cast<std::uint64_t>(std::min(std::round(Router::kWidthScale / gbps), 1e5));
}

// Shortest cost from src to dst and the number of shortest paths, through non-GPU devices only.
struct Reference {
  std::uint64_t cost = kNone;
  std::size_t paths = 0;
};

bool forwards(const Topology& t, DeviceId v) { return t.device(v).kind != DeviceKind::Gpu; }

// Every device's shortest cost to dst, through non-GPU devices only (plain Dijkstra).
std::vector<std::uint64_t> costs_to(const Topology& t, DeviceId dst) {
  const std::size_t n = t.devices().size();
  std::vector<std::uint64_t> dist(n, kNone);
  using Entry = std::pair<std::uint64_t, DeviceId>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
  dist[dst] = 0;
  heap.emplace(0, dst);
  while (!heap.empty()) {
    const auto [d, u] = heap.top();
    heap.pop();
    if (d != dist[u] || (u != dst && !forwards(t, u))) continue;  // a GPU is an end, not a hop
    for (LinkId id : t.links_of(u)) {
      const DeviceId v = t.link(id).other(u);
      const std::uint64_t nd = d + cost_of(t.link(id));
      if (nd < dist[v]) {
        dist[v] = nd;
        heap.emplace(nd, v);
      }
    }
  }
  return dist;
}

Reference reference(const Topology& t, DeviceId src, DeviceId dst) {
  const std::size_t n = t.devices().size();
  const std::vector<std::uint64_t> dist = costs_to(t, dst);
  Reference r;
  r.cost = dist[src];
  if (r.cost == kNone) return r;
  std::vector<std::size_t> memo(n, kNone);
  const auto count = [&](auto&& self, DeviceId u) -> std::size_t {
    if (u == dst) return 1;
    if (memo[u] != kNone) return memo[u];
    std::size_t total = 0;
    for (LinkId id : t.links_of(u)) {
      const DeviceId v = t.link(id).other(u);
      if (v != dst && !forwards(t, v)) continue;
      if (dist[v] != kNone && dist[v] + cost_of(t.link(id)) == dist[u]) total += self(self, v);
    }
    return memo[u] = total;
  };
  r.paths = count(count, src);
  return r;
}

std::uint64_t route_cost(const Topology& t, const Route& r) {
  std::uint64_t c = 0;
  for (LinkId id : r.links) c += cost_of(t.link(id));
  return c;
}

// Every GPU pair (every `stride`-th destination): the router's route costs the reference's
// shortest cost, its count is the reference's count. Returns the pairs checked.
std::size_t check_against_reference(const Topology& t, std::size_t stride = 1) {
  const Router router(t);
  std::size_t checked = 0;
  for (std::size_t j = 0; j < t.gpus().size(); j += stride) {
    const DeviceId dst = t.gpus()[j];
    for (const DeviceId src : t.gpus()) {
      if (src == dst) continue;
      const Reference want = reference(t, src, dst);
      CAPTURE(t.device(src).name);
      CAPTURE(t.device(dst).name);
      if (want.cost == kNone) {
        CHECK(router.equal_cost_count(src, dst) == 0);
        continue;
      }
      for (std::uint64_t hash : {0ULL, 0x9e3779b97f4a7c15ULL}) {
        const Route r = router.route(src, dst, hash);
        REQUIRE(r.devices.front() == src);
        REQUIRE(r.devices.back() == dst);
        CHECK(route_cost(t, r) == want.cost);
      }
      CHECK(router.equal_cost_count(src, dst) == want.paths);
      ++checked;
    }
  }
  return checked;
}

// The next hops from u toward dst on the plain Dijkstra's costs: in links_of(u) order, to a
// forwarding device or dst, where the cost drops by the link's.
std::vector<std::pair<LinkId, DeviceId>> reference_hops(const Topology& t,
                                                        const std::vector<std::uint64_t>& dist,
                                                        DeviceId u, DeviceId dst) {
  std::vector<std::pair<LinkId, DeviceId>> out;
  for (LinkId id : t.links_of(u)) {
    const DeviceId v = t.link(id).other(u);
    if (v != dst && !forwards(t, v)) continue;
    if (dist[v] != kNone && dist[v] + cost_of(t.link(id)) == dist[u]) out.emplace_back(id, v);
  }
  return out;
}

// Every pair of `ends` on different servers (every `stride`-th destination): route() is the
// walk over the plain Dijkstra's next hops with the documented pick (a hash of flow and
// device, splitmix64), hop for hop, and next_hops() at each of its devices is that list.
// Returns the routes checked.
std::size_t check_hops_against_reference(const Topology& t, const std::vector<DeviceId>& ends,
                                         std::size_t stride = 1) {
  const Router router(t);
  std::size_t checked = 0;
  for (std::size_t j = 0; j < ends.size(); j += stride) {
    const DeviceId dst = ends[j];
    const std::vector<std::uint64_t> dist = costs_to(t, dst);
    for (const DeviceId src : ends) {
      if (t.device(src).node == t.device(dst).node || dist[src] == kNone) continue;
      CAPTURE(t.device(src).name);
      CAPTURE(t.device(dst).name);
      for (std::uint64_t hash : {0ULL, 0x9e3779b97f4a7c15ULL, 12345ULL}) {
        const Route r = router.route(src, dst, hash);
        DeviceId u = src;
        for (std::size_t i = 0; u != dst; ++i) {
          const auto hops = reference_hops(t, dist, u, dst);
          REQUIRE(!hops.empty());
          REQUIRE(i < r.links.size());
          const std::optional<DeviceId> from =
              i == 1 ? std::optional<DeviceId>(src) : std::nullopt;
          CHECK(router.next_hops(u, dst, from) == hops);
          const std::size_t pick =
              hops.size() == 1 ? 0 : splitmix64(hash ^ splitmix64(u)) % hops.size();
          CHECK(r.links[i] == hops[pick].first);
          u = hops[pick].second;
        }
        CHECK(r.devices.back() == dst);
        ++checked;
      }
    }
  }
  return checked;
}

std::vector<DeviceId> devices_of_kind(const Topology& t, DeviceKind kind) {
  std::vector<DeviceId> out;
  for (DeviceId d = 0; d < t.devices().size(); ++d)
    if (t.device(d).kind == kind) out.push_back(d);
  return out;
}

ClusterSpec dgx_no_p2p(int nodes, NetworkShape shape) {
  ClusterSpec spec = dgx_cluster(nodes, shape);
  spec.name = "dgx-no-p2p";
  spec.node.nic_p2p = false;
  return spec;
}

void attach(Topology& t, DeviceId a, DeviceId b, BytesPerSecond rate, Fabric fabric) {
  Link link;
  link.a = a;
  link.b = b;
  link.fabric = fabric;
  link.bandwidth = rate;
  link.latency = 1_us;
  t.add_link(link);
}

// Servers of 1-3 GPUs under a CPU with 1-3 NICs, or of 2-4 GPUs on an NVSwitch with a NIC
// each, on random switches of a random switch graph (not always connected without the
// servers: then some server is the only way across).
Topology random_servers(unsigned seed) {
  std::mt19937 rng(seed);
  const auto pick = [&](std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
  };
  Topology t("servers" + std::to_string(seed));
  const std::size_t switches = 2 + pick(5);
  std::vector<DeviceId> sw;
  for (std::size_t i = 0; i < switches; ++i) {
    sw.push_back(add(t, "sw" + std::to_string(i), DeviceKind::Switch));
    if (i > 0 && pick(4) != 0) attach(t, sw[i], sw[pick(i)], 100_GBps, Fabric::InfiniBand);
  }
  const std::size_t servers = 2 + pick(5);
  for (std::size_t s = 0; s < servers; ++s) {
    const int node = static_cast<int>(s);
    const std::string p = "n" + std::to_string(s) + ".";
    if (pick(3) == 0) {  // NVSwitch, and a NIC on each GPU (stubs off the network)
      const DeviceId nv = add(t, p + "nvswitch", DeviceKind::NvSwitch, node);
      for (std::size_t g = 0, gpus = 2 + pick(3); g < gpus; ++g) {
        const DeviceId gpu = add(t, p + "gpu" + std::to_string(g), DeviceKind::Gpu, node);
        const DeviceId nic = add(t, p + "nic" + std::to_string(g), DeviceKind::Nic, node);
        attach(t, gpu, nv, 450_GBps, Fabric::NvLink);
        attach(t, gpu, nic, 64_GBps, Fabric::Pcie);
        attach(t, nic, sw[pick(switches)], 50_GBps, Fabric::InfiniBand);
      }
      continue;
    }
    const DeviceId cpu = add(t, p + "cpu", DeviceKind::Cpu, node);
    for (std::size_t g = 0, gpus = 1 + pick(3); g < gpus; ++g)
      attach(t, add(t, p + "gpu" + std::to_string(g), DeviceKind::Gpu, node), cpu, 32_GBps,
              Fabric::Pcie);
    for (std::size_t k = 0, nics = 1 + pick(3); k < nics; ++k) {
      const DeviceId nic = add(t, p + "nic" + std::to_string(k), DeviceKind::Nic, node);
      attach(t, nic, cpu, 32_GBps, Fabric::Pcie);
      attach(t, nic, sw[pick(switches)], pick(2) == 0 ? 50_GBps : 25_GBps, Fabric::InfiniBand);
    }
  }
  return t;
}

}  // namespace

TEST_CASE("servers without P2P to their NICs: routes equal the full search on every shape") {
  for (const NetworkShape shape : {NetworkShape::SingleSwitch, NetworkShape::LeafSpine,
                                   NetworkShape::RailOptimized, NetworkShape::FatTree}) {
    CAPTURE(to_string(shape));
    const Topology t = expand_cluster(dgx_no_p2p(5, shape));
    CHECK(check_against_reference(t, 3) > 0);
  }
}

TEST_CASE("routes into servers without P2P take the full search's hops, GPU and NIC ends") {
  // Toward a GPU or NIC of such a server the router walks through its border switches'
  // searches (router_entries.cpp), shared by every server behind a switch; the hops, their
  // order and the hashed pick must be the ones the full search gives.
  for (const NetworkShape shape : {NetworkShape::SingleSwitch, NetworkShape::LeafSpine,
                                   NetworkShape::RailOptimized, NetworkShape::FatTree}) {
    CAPTURE(to_string(shape));
    for (const bool p2p : {false, true}) {
      CAPTURE(p2p);
      ClusterSpec spec = dgx_no_p2p(5, shape);
      spec.node.nic_p2p = p2p;
      const Topology t = expand_cluster(spec);
      CHECK(check_hops_against_reference(t, t.gpus(), 5) > 0);
      CHECK(check_hops_against_reference(t, devices_of_kind(t, DeviceKind::Nic), 7) > 0);
    }
  }
}

TEST_CASE("PCIe servers with two NICs each: routes equal the full search") {
  ClusterSpec spec = dgx_no_p2p(4, NetworkShape::LeafSpine);
  spec.node.gpus = 4;
  spec.node.intra = LinkGroupSpec{Fabric::Pcie, 32_GBps, 1_us, std::nullopt, {}};
  spec.node.intra_shape = IntraShape::RootComplex;
  spec.node.sockets = 2;
  spec.node.socket_link = LinkGroupSpec{Fabric::Socket, 40_GBps, 1_us, std::nullopt, {}};
  spec.node.nics = 2;
  spec.node.nic_p2p = true;
  const Topology t = expand_cluster(spec);
  CHECK(check_against_reference(t) > 0);
  CHECK(check_hops_against_reference(t, t.gpus()) > 0);
  CHECK(check_hops_against_reference(t, devices_of_kind(t, DeviceKind::Nic)) > 0);
}

TEST_CASE("random servers on random switches: routes equal the full search") {
  std::size_t checked = 0;
  std::size_t exact = 0;
  for (unsigned seed = 1; seed <= 500; ++seed) {
    CAPTURE(seed);
    const Topology t = random_servers(seed);
    checked += check_against_reference(t);
    exact += check_hops_against_reference(t, t.gpus());
    exact += check_hops_against_reference(t, devices_of_kind(t, DeviceKind::Nic));
  }
  CHECK(checked > 1000);
  CHECK(exact > 1000);
}

TEST_CASE("a server that is the only way between two switches still carries the traffic") {
  // sw0 and sw1 are joined only through n2, whose CPU joins its two NICs.
  Topology t("bridge");
  const DeviceId sw0 = add(t, "sw0", DeviceKind::Switch);
  const DeviceId sw1 = add(t, "sw1", DeviceKind::Switch);
  const DeviceId sws[2] = {sw0, sw1};
  for (int s = 0; s < 2; ++s) {
    const std::string p = "n" + std::to_string(s) + ".";
    const DeviceId cpu = add(t, p + "cpu", DeviceKind::Cpu, s);
    const DeviceId nic = add(t, p + "nic", DeviceKind::Nic, s);
    attach(t, add(t, p + "gpu", DeviceKind::Gpu, s), cpu, 32_GBps, Fabric::Pcie);
    attach(t, nic, cpu, 32_GBps, Fabric::Pcie);
    attach(t, nic, sws[s], 50_GBps, Fabric::InfiniBand);
  }
  const DeviceId cpu = add(t, "n2.cpu", DeviceKind::Cpu, 2);
  attach(t, add(t, "n2.gpu", DeviceKind::Gpu, 2), cpu, 32_GBps, Fabric::Pcie);
  for (int k = 0; k < 2; ++k) {
    const DeviceId nic = add(t, "n2.nic" + std::to_string(k), DeviceKind::Nic, 2);
    attach(t, nic, cpu, 32_GBps, Fabric::Pcie);
    attach(t, nic, sws[k], 50_GBps, Fabric::InfiniBand);
  }
  const Router router(t);
  const Route r = router.route(*t.find_device("n0.gpu"), *t.find_device("n1.gpu"));
  std::string names;
  for (DeviceId d : r.devices) names += (names.empty() ? "" : " ") + t.device(d).name;
  CHECK(names == "n0.gpu n0.cpu n0.nic sw0 n2.nic0 n2.cpu n2.nic1 sw1 n1.nic n1.cpu n1.gpu");
  CHECK(check_against_reference(t) == 6);
  CHECK(check_hops_against_reference(t, t.gpus()) == 18);
}
