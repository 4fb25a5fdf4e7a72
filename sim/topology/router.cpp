// Shortest-path routing with ECMP candidates (see Router in topology.hpp): the router's
// link costs and proxies, and the walks along shortest paths (route, next hops, counts); the
// distances they follow are router_distances.cpp's.
//
// Distances toward a destination come from a Dijkstra search over the devices that forward
// traffic (every kind but GPUs), bounded by the source at hand and resumed for farther ones,
// kept for the most recent destinations; a GPU source's own distance is one relaxation over
// its links. A route then walks from the source, taking at each device one of the links that
// stays on a shortest path, chosen by a hash of (flow, device) — what per-hop ECMP does.
// Servers whose NICs lead on to each other (through a CPU) are left out of a search unless
// the route starts or ends there, when no detour through one can be a shortest path
// (router_transit.cpp); a route into such a server from outside it then follows the searches
// toward the server's border switches, shared by every server behind them, instead of a
// search of its own (router_entries.cpp).
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

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "gradsync/topology/topology.hpp"
#include "route_costs.hpp"

namespace gradsync {

using namespace route_costs;

Router::Router(const Topology& topology) : topology_(&topology) {
  link_costs_.reserve(topology.links().size());
  for (LinkId id = 0; id < topology.links().size(); ++id) {
    const Link& l = topology.link(id);
    // Hop count dominates; narrower links cost a little more so that, at equal hops, NVLink
    // beats a PCIe detour. Rounded to integers so equal paths tie exactly.
    const double gbps = std::max(l.bandwidth.gigabytes_per_second(), 1e-6);
    const double width = std::min(std::round(kWidthScale / gbps), 1e5);
    link_costs_.push_back(kHopCost + static_cast<std::uint64_t>(width));
  }
  const std::size_t n = topology.devices().size();
  forwards_.resize(n);
  for (DeviceId d = 0; d < n; ++d) forwards_[d] = topology.device(d).kind != DeviceKind::Gpu;
  stub_exit_.resize(n);
  stub_cost_.assign(n, kUnreachable);
  for (DeviceId d = 0; d < n; ++d) stub_exit_[d] = d;
  // Stubs, outward: a forwarding device whose forwarding neighbours, once those that hang off
  // it (stubs whose exit it is) are set aside, are exactly one non-stub device. A PCIe switch
  // between a GPU and its NIC hangs off the NIC, and the NIC then off its leaf or rail switch:
  // a search toward a destination expands neither (2,048 NICs per rail switch per destination
  // on a 16k-GPU rail-optimized cluster). An exit is a non-stub when its stub is marked, so
  // chains end at a device that stays one.
  for (bool marked = true; marked;) {
    marked = false;
    for (DeviceId d = 0; d < n; ++d) {
      if (!may_forward(d) || stub_exit_[d] != d) continue;
      DeviceId exit = d;
      std::uint64_t cost = kUnreachable;
      bool several = false;
      for (LinkId id : topology.links_of(d)) {
        const DeviceId v = topology.link(id).other(d);
        if (!may_forward(v) || stub_exit_[v] == d) continue;  // a GPU, or hangs off d
        if (exit != d && v != exit) several = true;
        exit = v;
        cost = std::min(cost, link_costs_[id]);
      }
      if (!several && exit != d && stub_exit_[exit] == exit) {
        stub_exit_[d] = exit;
        stub_cost_[d] = cost;
        marked = true;
      }
    }
  }
  neighbour_offset_.assign(n + 1, 0);
  for (DeviceId u = 0; u < n; ++u) {
    neighbour_offset_[u] = neighbours_.size();
    for (LinkId id : topology.links_of(u)) {
      const DeviceId v = topology.link(id).other(u);
      neighbours_.push_back(Neighbour{id, v, link_costs_[id], !may_forward(v)});
    }
  }
  neighbour_offset_[n] = neighbours_.size();
  find_transit_servers();
  transit_offset_.assign(n + 1, 0);
  transit_server_offset_.assign(n + 1, 0);
  for (DeviceId u = 0; u < n; ++u) {
    transit_offset_[u] = transit_.size();
    if (!may_forward(u)) continue;
    for (LinkId id : topology.links_of(u)) {
      const DeviceId v = topology.link(id).other(u);
      // Not into a stub (a dead end in transit), but out of one toward its exit.
      if (may_forward(v) && (stub_exit_[v] == v || v == stub_exit_[u]))
        transit_.push_back(Transit{v, link_costs_[id], transit_node_[v]});
    }
    // Transit servers' devices last, by server (for_each_transit finds dst's by bisection).
    const auto first = transit_.begin() + static_cast<std::ptrdiff_t>(transit_offset_[u]);
    const auto servers = std::stable_partition(first, transit_.end(),
                                               [](const Transit& t) { return t.node < 0; });
    std::stable_sort(servers, transit_.end(),
                     [](const Transit& a, const Transit& b) { return a.node < b.node; });
    transit_server_offset_[u] = static_cast<std::size_t>(servers - transit_.begin());
  }
  transit_offset_[n] = transit_.size();
  transit_server_offset_[n] = transit_.size();
  cache_.reserve(kCachedDestinations);
  // Proxies: a GPU in a server whose forwarding neighbours are stub chains ending at one
  // network switch X (node < 0; every chain member in the GPU's server) or dead ends of its
  // server (no forwarding neighbour, only GPUs of that server, e.g. its NVSwitch). Then from
  // another server every path to the GPU enters the chains at X.
  // A chain device something of another server (or the network) hangs off: a path from there
  // enters the chain below X, so a GPU behind it has no proxy (a switch cabled only to two
  // servers' NICs makes one server's chain hang off the other's).
  std::vector<char> foreign_hang(n, 0);
  for (DeviceId s = 0; s < n; ++s)
    for (DeviceId w = s; stub_exit_[w] != w;) {
      w = stub_exit_[w];
      if (topology.device(w).node != topology.device(s).node) foreign_hang[w] = 1;
    }
  proxy_.resize(n);
  for (DeviceId g = 0; g < n; ++g) {
    proxy_[g] = g;
    const int node = topology.device(g).node;
    if (may_forward(g) || node < 0) continue;
    DeviceId exit = g;
    bool ok = true;
    for (LinkId id : topology.links_of(g)) {
      const DeviceId v = topology.link(id).other(g);
      if (!may_forward(v)) continue;
      if (topology.device(v).node != node) ok = false;
      if (stub_exit_[v] != v) {
        DeviceId w = v;
        while (stub_exit_[w] != w) {
          if (topology.device(w).node != node || foreign_hang[w]) ok = false;
          w = stub_exit_[w];
        }
        if (topology.device(w).node >= 0 || (exit != g && exit != w)) ok = false;
        exit = w;
      } else {
        for (LinkId out : topology.links_of(v)) {
          const DeviceId u = topology.link(out).other(v);
          if (may_forward(u) || topology.device(u).node != node) ok = false;
        }
      }
    }
    if (ok && exit != g) proxy_[g] = exit;
  }
  proxy_head_offset_.assign(n + 1, 0);
  for (DeviceId g = 0; g < n; ++g) {
    proxy_head_offset_[g] = proxy_heads_.size();
    if (proxy_[g] == g) continue;
    const std::size_t first = proxy_heads_.size();
    for (LinkId id : topology.links_of(g)) {
      DeviceId w = topology.link(id).other(g);
      if (!may_forward(w) || stub_exit_[w] == w) continue;
      while (stub_exit_[w] != proxy_[g]) w = stub_exit_[w];
      if (std::find(proxy_heads_.begin() + static_cast<std::ptrdiff_t>(first), proxy_heads_.end(),
                    w) == proxy_heads_.end())
        proxy_heads_.push_back(w);
    }
  }
  proxy_head_offset_[n] = proxy_heads_.size();
}

DeviceId Router::proxy_for(DeviceId at, DeviceId dst) const {
  const DeviceId x = proxy_[dst];
  if (x == dst || at == x || topology_->device(at).node == topology_->device(dst).node) return dst;
  return x;
}

std::uint64_t Router::link_cost(LinkId id) const { return link_costs_[id]; }

namespace {

// Links out of `u` that stay on a shortest path toward dst; `from_gpu_hop`: the flow entered
// `u` from a GPU (the hop after a GPU source), which matters at a PCIe switch without P2P.
template <typename Neighbours, typename Fn>
void for_each_next_hop(const Topology& topology, const std::vector<std::uint64_t>& dist,
                       const std::vector<std::pair<DeviceId, std::uint64_t>>& from_gpu,
                       const Neighbours& neighbours, DeviceId u, DeviceId dst,
                       bool from_gpu_hop, Fn&& fn) {
  const bool u_is_gpu = topology.device(u).kind == DeviceKind::Gpu;
  const bool no_turn = from_gpu_hop && is_no_p2p_switch(topology.device(u));
  const std::uint64_t du = from_gpu_hop ? distance_from_gpu(dist, from_gpu, u) : dist[u];
  for (const auto& n : neighbours) {
    if (n.gpu && (n.to != dst || no_turn)) continue;
    const std::uint64_t dv = u_is_gpu ? distance_from_gpu(dist, from_gpu, n.to) : dist[n.to];
    if (dv == kUnreachable) continue;
    if (dv + n.cost == du) fn(n.link, n.to);
  }
}

}  // namespace

template <typename Fn>
bool Router::hops_from_proxy(const CachedDistances& c, DeviceId at, DeviceId dst, Fn&& fn) const {
  if (proxy_[dst] == dst || at != proxy_[dst]) return false;
  // Only a chain head can be closer to dst than its proxy (every other neighbour reaches dst
  // through the proxy); in links_of() order, which lists both ends' links by id.
  std::vector<std::pair<LinkId, DeviceId>> hops;
  for (std::size_t k = proxy_head_offset_[dst]; k < proxy_head_offset_[dst + 1]; ++k) {
    const DeviceId h = proxy_heads_[k];
    if (c.dist[h] == kUnreachable) continue;
    for (const Neighbour& n : neighbours(h))
      if (n.to == at && c.dist[h] + n.cost == c.dist[at]) hops.emplace_back(n.link, h);
  }
  std::sort(hops.begin(), hops.end());
  for (const auto& [link, h] : hops) fn(link, h);
  return true;
}

Route Router::route(DeviceId src, DeviceId dst, std::uint64_t flow_hash) const {
  if (src >= topology_->devices().size()) throw std::out_of_range("Router: unknown device");
  // From another server, toward the switch dst hangs off (same hops: costs differ by a
  // constant there), then from that switch toward dst.
  const DeviceId proxy = proxy_for(src, dst);
  if (proxy == dst && entries_toward(src, dst, entries_))
    return entry_route(entries_, src, dst, flow_hash);
  Route r;
  r.devices.push_back(src);
  std::vector<std::pair<LinkId, DeviceId>> next;
  auto walk = [&](DeviceId target) {
    const auto& cached = distances(r.devices.back(), target);
    const auto& dist = cached.dist;
    if (dist.at(r.devices.back()) == kUnreachable)
      throw std::logic_error("Router::route: " + topology_->device(src).name + " cannot reach " +
                             topology_->device(dst).name);
    for (DeviceId u = r.devices.back(); u != target;) {
      next.clear();
      const bool from_gpu_hop = r.devices.size() == 2 && !may_forward(src);
      auto add = [&](LinkId id, DeviceId v) { next.emplace_back(id, v); };
      if (from_gpu_hop || !hops_from_proxy(cached, u, target, add))
        for_each_next_hop(*topology_, dist, cached.from_gpu, neighbours(u), u, target,
                          from_gpu_hop, add);
      if (next.empty()) throw std::logic_error("Router::route: dead end on a shortest path");
      const std::size_t pick = ecmp_pick(flow_hash, u, next.size());
      r.links.push_back(next[pick].first);
      u = next[pick].second;
      r.devices.push_back(u);
    }
  };
  if (proxy != dst) walk(proxy);
  walk(dst);
  return r;
}

std::vector<Route> Router::equal_cost_routes(DeviceId src, DeviceId dst,
                                             std::size_t limit) const {
  const auto& cached = distances(src, dst);
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
    for_each_next_hop(*topology_, dist, cached.from_gpu, neighbours(u), u, dst, from_gpu_hop,
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
  const auto& cached = distances(src, dst);
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
    for_each_next_hop(*topology_, dist, cached.from_gpu, neighbours(u), u, dst, from_gpu_hop,
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
  if (at >= topology_->devices().size() || dst >= topology_->devices().size())
    throw std::out_of_range("Router: unknown device");
  if (const DeviceId proxy = proxy_for(at, dst); proxy != dst) return next_hops(at, proxy, from);
  if (entries_toward(at, dst, entries_)) {
    std::vector<std::pair<LinkId, DeviceId>> out;
    entry_hops(entries_, at, dst, out);
    return out;
  }
  const auto& cached = distances(at, dst);
  const auto& dist = cached.dist;
  std::vector<std::pair<LinkId, DeviceId>> out;
  if (at == dst || dist.at(at) == kUnreachable) return out;
  const bool from_gpu_hop = from && !may_forward(*from);
  auto add = [&](LinkId id, DeviceId v) { out.emplace_back(id, v); };
  if (!from_gpu_hop && hops_from_proxy(cached, at, dst, add)) return out;
  for_each_next_hop(*topology_, dist, cached.from_gpu, neighbours(at), at, dst, from_gpu_hop,
                    [&](LinkId id, DeviceId v) { out.emplace_back(id, v); });
  return out;
}

std::size_t Router::hops(DeviceId src, DeviceId dst) const {
  return route(src, dst).links.size();
}

}  // namespace gradsync
