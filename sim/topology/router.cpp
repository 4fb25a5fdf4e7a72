// Shortest-path routing with ECMP candidates (see Router in topology.hpp).
//
// Distances are computed once per destination with Boost's Dijkstra over the devices that
// forward traffic (every kind but GPUs); a GPU's own distance is one relaxation over its
// links. A route then walks from the source, taking at each device one of the links that
// stays on a shortest path, chosen by a hash of (flow, device) — what per-hop ECMP does.
//
// PCIe switches without P2P (Device::p2p false). The only path they forbid is
// [GPU, switch, GPU] (GPUs never forward, so a GPU before the switch is the source and a GPU
// after it is the destination). Distances from forwarding devices are unaffected; only a
// flow that entered such a switch from a GPU sees a different cost-to-dst there, and only when
// dst hangs off that switch (otherwise the way on is upstream anyway). Those few costs —
// min over the switch's non-GPU neighbours w of dist[w] + cost — are kept beside the distance
// vector (`from_gpu`) and used for a GPU source's first hop and for the hop after it. The walk
// G -> switch -> CPU -> switch -> G' that results is NCCL's copy through host memory: the
// switch's uplink carries the data up and down.
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <boost/graph/filtered_graph.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "gradsync/topology.hpp"

namespace gradsync {

namespace {

constexpr std::uint64_t kUnreachable = std::numeric_limits<std::uint64_t>::max();

// splitmix64: a cheap, well-mixed hash for ECMP choices.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

using WeightProperty = boost::property<boost::edge_weight_t, std::uint64_t>;
using RoutingGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS,
                                           boost::no_property, WeightProperty>;

// Keeps the links between forwarding devices (and those touching the destination).
struct ForwardingEdges {
  const Topology* topology = nullptr;
  const RoutingGraph* graph = nullptr;
  DeviceId dst = 0;
  template <typename Edge>
  bool operator()(const Edge& e) const {
    const auto u = boost::source(e, *graph);
    const auto v = boost::target(e, *graph);
    auto ok = [&](std::size_t d) {
      return d == dst || topology->device(d).kind != DeviceKind::Gpu;
    };
    return ok(u) && ok(v);
  }
};

// Cost-to-dst of `v` for a flow that entered it from a GPU (see the header comment).
std::uint64_t distance_from_gpu(const std::vector<std::uint64_t>& dist,
                                const std::vector<std::pair<DeviceId, std::uint64_t>>& from_gpu,
                                DeviceId v) {
  for (const auto& [sw, d] : from_gpu)
    if (sw == v) return d;
  return dist[v];
}

bool is_no_p2p_switch(const Device& d) { return d.kind == DeviceKind::PcieSwitch && !d.p2p; }

}  // namespace

struct Router::Graph {
  RoutingGraph graph;
};

Router::Router(const Topology& topology) : topology_(&topology) {
  link_costs_.reserve(topology.links().size());
  auto g = std::make_shared<Graph>();
  g->graph = RoutingGraph(topology.devices().size());
  for (LinkId id = 0; id < topology.links().size(); ++id) {
    const Link& l = topology.link(id);
    // Hop count dominates; narrower links cost a little more so that, at equal hops, NVLink
    // beats a PCIe detour. Rounded to integers so equal paths tie exactly.
    const double gbps = std::max(l.bandwidth.gigabytes_per_second(), 1e-6);
    const double width = std::min(std::round(kWidthScale / gbps), 1e5);
    link_costs_.push_back(kHopCost + static_cast<std::uint64_t>(width));
    boost::add_edge(l.a, l.b, WeightProperty(link_costs_.back()), g->graph);
  }
  graph_ = std::move(g);
}

std::uint64_t Router::link_cost(LinkId id) const { return link_costs_[id]; }

bool Router::may_forward(DeviceId id) const {
  return topology_->device(id).kind != DeviceKind::Gpu;
}

const Router::CachedDistances& Router::cached_to(DeviceId dst) const {
  if (dst >= topology_->devices().size()) throw std::out_of_range("Router: unknown device");
  for (const auto& c : cache_)
    if (c.dst == dst) return c;
  if (cache_.size() < kCachedDestinations) {
    cache_.push_back(CachedDistances{dst, {}});
    cache_next_ = cache_.size() - 1;
  }
  CachedDistances& slot = cache_[cache_next_];
  cache_next_ = (cache_next_ + 1) % kCachedDestinations;
  slot.dst = dst;
  auto& dist = slot.dist;

  const auto& links = topology_->links();
  ForwardingEdges keep{topology_, &graph_->graph, dst};
  boost::filtered_graph<RoutingGraph, ForwardingEdges> forwarding(graph_->graph, keep);

  dist.assign(topology_->devices().size(), kUnreachable);
  boost::dijkstra_shortest_paths(
      forwarding, dst,
      boost::distance_map(dist.data())
          .distance_inf(kUnreachable)
          .distance_zero(std::uint64_t{0})
          .distance_combine([](std::uint64_t a, std::uint64_t b) {
            return (a == kUnreachable || b == kUnreachable) ? kUnreachable : a + b;
          }));

  // PCIe switches without P2P next to a GPU dst: the cost for a flow from a GPU goes upstream.
  auto& from_gpu = slot.from_gpu;
  from_gpu.clear();
  if (topology_->device(dst).kind == DeviceKind::Gpu) {
    for (LinkId id : topology_->links_of(dst)) {
      const DeviceId sw = links[id].other(dst);
      if (!is_no_p2p_switch(topology_->device(sw))) continue;
      std::uint64_t up = kUnreachable;
      for (LinkId out : topology_->links_of(sw)) {
        const DeviceId w = links[out].other(sw);
        if (!may_forward(w) || dist[w] == kUnreachable) continue;
        up = std::min(up, dist[w] + link_costs_[out]);
      }
      const bool listed = std::any_of(from_gpu.begin(), from_gpu.end(),
                                      [&](const auto& e) { return e.first == sw; });
      if (!listed) from_gpu.emplace_back(sw, up);  // parallel links: list the switch once
    }
  }

  // GPUs other than dst only originate traffic: one relaxation over their links.
  for (DeviceId g : topology_->gpus()) {
    if (g == dst) continue;
    std::uint64_t best = kUnreachable;
    for (LinkId id : topology_->links_of(g)) {
      const DeviceId v = links[id].other(g);
      if (v != dst && !may_forward(v)) continue;
      const std::uint64_t dv = distance_from_gpu(dist, from_gpu, v);
      if (dv != kUnreachable) best = std::min(best, dv + link_costs_[id]);
    }
    dist[g] = best;
  }
  return slot;
}

namespace {

// Links out of `u` that stay on a shortest path toward dst; `from_gpu_hop`: the flow entered
// `u` from a GPU (the hop after a GPU source), which matters at a PCIe switch without P2P.
template <typename Fn>
void for_each_next_hop(const Topology& topology, const std::vector<std::uint64_t>& dist,
                       const std::vector<std::pair<DeviceId, std::uint64_t>>& from_gpu,
                       const std::vector<std::uint64_t>& costs, DeviceId u, DeviceId dst,
                       bool from_gpu_hop, Fn&& fn) {
  const bool u_is_gpu = topology.device(u).kind == DeviceKind::Gpu;
  const bool no_turn = from_gpu_hop && is_no_p2p_switch(topology.device(u));
  const std::uint64_t du = from_gpu_hop ? distance_from_gpu(dist, from_gpu, u) : dist[u];
  for (LinkId id : topology.links_of(u)) {
    const DeviceId v = topology.link(id).other(u);
    if (topology.device(v).kind == DeviceKind::Gpu && (v != dst || no_turn)) continue;
    const std::uint64_t dv = u_is_gpu ? distance_from_gpu(dist, from_gpu, v) : dist[v];
    if (dv == kUnreachable) continue;
    if (dv + costs[id] == du) fn(id, v);
  }
}

}  // namespace

Route Router::route(DeviceId src, DeviceId dst, std::uint64_t flow_hash) const {
  const auto& cached = cached_to(dst);
  const auto& dist = cached.dist;
  if (dist.at(src) == kUnreachable)
    throw std::logic_error("Router::route: " + topology_->device(src).name + " cannot reach " +
                           topology_->device(dst).name);
  Route r;
  r.devices.push_back(src);
  std::vector<std::pair<LinkId, DeviceId>> next;
  for (DeviceId u = src; u != dst;) {
    next.clear();
    const bool from_gpu_hop = r.devices.size() == 2 && !may_forward(src);
    for_each_next_hop(*topology_, dist, cached.from_gpu, link_costs_, u, dst, from_gpu_hop,
                      [&](LinkId id, DeviceId v) { next.emplace_back(id, v); });
    const auto pick = next.size() == 1 ? 0 : mix(flow_hash ^ mix(u)) % next.size();
    r.links.push_back(next[pick].first);
    u = next[pick].second;
    r.devices.push_back(u);
  }
  return r;
}

std::vector<Route> Router::equal_cost_routes(DeviceId src, DeviceId dst,
                                             std::size_t limit) const {
  const auto& cached = cached_to(dst);
  const auto& dist = cached.dist;
  std::vector<Route> out;
  if (dist.at(src) == kUnreachable || limit == 0) return out;
  Route current;
  current.devices.push_back(src);
  // Depth-first enumeration of the shortest-path DAG (paths strictly decrease in cost).
  auto visit = [&](auto&& self, DeviceId u) -> void {
    if (out.size() >= limit) return;
    if (u == dst) {
      out.push_back(current);
      return;
    }
    const bool from_gpu_hop = current.devices.size() == 2 && !may_forward(src);
    for_each_next_hop(*topology_, dist, cached.from_gpu, link_costs_, u, dst, from_gpu_hop,
                      [&](LinkId id, DeviceId v) {
      current.links.push_back(id);
      current.devices.push_back(v);
      self(self, v);
      current.links.pop_back();
      current.devices.pop_back();
    });
  };
  visit(visit, src);
  return out;
}

std::size_t Router::equal_cost_count(DeviceId src, DeviceId dst) const {
  const auto& cached = cached_to(dst);
  const auto& dist = cached.dist;
  if (dist.at(src) == kUnreachable) return 0;
  constexpr std::size_t kSaturated = std::numeric_limits<std::size_t>::max();
  // memo holds counts for devices entered from a forwarding device; the hop after a GPU
  // source is counted apart (its next hops may differ, see for_each_next_hop).
  std::vector<std::size_t> memo(topology_->devices().size(), kSaturated);
  auto count = [&](auto&& self, DeviceId u, bool from_gpu_hop) -> std::size_t {
    if (u == dst) return 1;
    if (!from_gpu_hop && memo[u] != kSaturated) return memo[u];
    std::size_t total = 0;
    for_each_next_hop(*topology_, dist, cached.from_gpu, link_costs_, u, dst, from_gpu_hop,
                      [&](LinkId, DeviceId v) {
      const std::size_t c = self(self, v, u == src && !may_forward(src));
      total = (total > kSaturated - c) ? kSaturated - 1 : total + c;
    });
    if (!from_gpu_hop) memo[u] = total;
    return total;
  };
  return count(count, src, false);
}

std::vector<std::pair<LinkId, DeviceId>> Router::next_hops(DeviceId at, DeviceId dst,
                                                           std::optional<DeviceId> from) const {
  const auto& cached = cached_to(dst);
  const auto& dist = cached.dist;
  std::vector<std::pair<LinkId, DeviceId>> out;
  if (at == dst || dist.at(at) == kUnreachable) return out;
  const bool from_gpu_hop = from && !may_forward(*from);
  for_each_next_hop(*topology_, dist, cached.from_gpu, link_costs_, at, dst, from_gpu_hop,
                    [&](LinkId id, DeviceId v) { out.emplace_back(id, v); });
  return out;
}

std::size_t Router::hops(DeviceId src, DeviceId dst) const {
  return route(src, dst).links.size();
}

}  // namespace gradsync
