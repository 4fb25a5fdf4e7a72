// Shortest-path routing with ECMP candidates (see Router in topology.hpp).
//
// Distances toward a destination come from a Dijkstra search over the devices that forward
// traffic (every kind but GPUs), bounded by the source at hand and resumed for farther ones,
// kept for the most recent destinations; a GPU source's own distance is one relaxation over
// its links. A route then walks from the source, taking at each device one of the links that
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

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "gradsync/splitmix64.hpp"
#include "gradsync/topology.hpp"

namespace gradsync {

namespace {

constexpr std::uint64_t kUnreachable = std::numeric_limits<std::uint64_t>::max();

// ECMP choices hash with splitmix64 (splitmix64.hpp).
constexpr auto mix = splitmix64;

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
  transit_offset_.assign(n + 1, 0);
  for (DeviceId u = 0; u < n; ++u) {
    transit_offset_[u] = transit_.size();
    if (!may_forward(u)) continue;
    for (LinkId id : topology.links_of(u)) {
      const DeviceId v = topology.link(id).other(u);
      // Not into a stub (a dead end in transit), but out of one toward its exit.
      if (may_forward(v) && (stub_exit_[v] == v || v == stub_exit_[u]))
        transit_.push_back(Transit{v, link_costs_[id]});
    }
  }
  transit_offset_[n] = transit_.size();
  cache_.reserve(kCachedDestinations);
  // Proxies: a GPU in a server whose forwarding neighbours are stub chains ending at one
  // network switch X (node < 0; every chain member in the GPU's server) or dead ends of its
  // server (no forwarding neighbour, only GPUs of that server, e.g. its NVSwitch). Then from
  // another server every path to the GPU enters the chains at X.
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
          if (topology.device(w).node != node) ok = false;
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

Router::CachedDistances& Router::slot_for(DeviceId dst) const {
  if (dst >= topology_->devices().size()) throw std::out_of_range("Router: unknown device");
  for (auto& c : cache_)
    if (c.dst == dst) {
      c.used = ++cache_clock_;
      return c;
    }
  std::size_t reuse = 0;
  if (cache_.size() < kCachedDestinations) {
    cache_.push_back(CachedDistances{});
    reuse = cache_.size() - 1;
  } else {
    for (std::size_t i = 1; i < cache_.size(); ++i)
      if (cache_[i].used < cache_[reuse].used) reuse = i;
  }
  CachedDistances& slot = cache_[reuse];
  slot.used = ++cache_clock_;
  const std::size_t n = topology_->devices().size();
  if (slot.dist.size() != n) {
    slot.dist.assign(n, kUnreachable);
    slot.settled.assign(n, 0);
  }
  for (DeviceId v : slot.touched) {
    slot.dist[v] = kUnreachable;
    slot.settled[v] = 0;
  }
  slot.touched.clear();
  slot.heap.clear();
  slot.from_gpu.clear();
  slot.dst = dst;
  slot.deferred = proxy_[dst] != dst ? proxy_[dst] : std::numeric_limits<DeviceId>::max();
  slot.deferred_pending = false;
  set_distance(slot, dst, 0);
  slot.heap.emplace_back(0, dst);

  // PCIe switches without P2P next to a GPU dst: the cost for a flow from a GPU goes upstream
  // (their neighbours are next to dst: settling them explores little).
  const auto& links = topology_->links();
  if (topology_->device(dst).kind == DeviceKind::Gpu) {
    for (LinkId id : topology_->links_of(dst)) {
      const DeviceId sw = links[id].other(dst);
      if (!is_no_p2p_switch(topology_->device(sw))) continue;
      std::uint64_t up = kUnreachable;
      for (LinkId out : topology_->links_of(sw)) {
        const DeviceId w = links[out].other(sw);
        if (!may_forward(w)) continue;
        settle(slot, w);
        if (slot.dist[w] != kUnreachable) up = std::min(up, slot.dist[w] + link_costs_[out]);
      }
      const bool listed = std::any_of(slot.from_gpu.begin(), slot.from_gpu.end(),
                                      [&](const auto& e) { return e.first == sw; });
      if (!listed) slot.from_gpu.emplace_back(sw, up);  // parallel links: list the switch once
    }
  }
  return slot;
}

void Router::set_distance(CachedDistances& c, DeviceId v, std::uint64_t d) const {
  if (c.dist[v] == kUnreachable && !c.settled[v]) c.touched.push_back(v);
  c.dist[v] = d;
}

// Dijkstra toward c.dst over the devices that forward (every kind but GPUs; dst itself is the
// start), resumed where the last call stopped: afterwards every device whose cost-to-dst is
// below `bound` is settled. (Boost's dijkstra_shortest_paths runs to completion, which costs
// the whole cluster for every destination: 16k-GPU clusters spent minutes there.)
void Router::settle_below(CachedDistances& c, std::uint64_t bound) const {
  const auto& links = topology_->links();
  const auto later = [](const auto& a, const auto& b) { return a.first > b.first; };
  for (;;) {
    // A deferred proxy's links before anything farther than it, and only if asked past it.
    if (c.deferred_pending && bound > c.dist[c.deferred] + 1 &&
        (c.heap.empty() || c.heap.front().first > c.dist[c.deferred]))
      expand_deferred(c);
    if (c.heap.empty() || c.heap.front().first >= bound) break;
    std::pop_heap(c.heap.begin(), c.heap.end(), later);
    const std::uint64_t d = c.heap.back().first;
    const DeviceId u = c.heap.back().second;
    c.heap.pop_back();
    if (c.settled[u] || d != c.dist[u]) continue;
    c.settled[u] = 1;
    if (u == c.deferred && u != c.dst) {  // relaxed only if a query goes past it
      c.deferred_pending = true;
      continue;
    }
    auto relax = [&](DeviceId v, std::uint64_t cost) {
      if (c.settled[v]) return;
      const std::uint64_t nd = d + cost;
      if (nd < c.dist[v]) {
        set_distance(c, v, nd);
        c.heap.emplace_back(nd, v);
        std::push_heap(c.heap.begin(), c.heap.end(), later);
      }
    };
    if (u == c.dst) {  // the destination's stub neighbours too (see stub_exit_)
      for (LinkId id : topology_->links_of(u)) {
        const DeviceId v = links[id].other(u);
        if (may_forward(v)) relax(v, link_costs_[id]);  // GPUs never forward
      }
      continue;
    }
    for (std::size_t e = transit_offset_[u]; e < transit_offset_[u + 1]; ++e)
      relax(transit_[e].to, transit_[e].cost);  // never a stub in transit
  }
}

void Router::expand_deferred(CachedDistances& c) const {
  c.deferred_pending = false;
  const DeviceId u = c.deferred;
  c.deferred = std::numeric_limits<DeviceId>::max();
  const auto later = [](const auto& a, const auto& b) { return a.first > b.first; };
  const std::uint64_t d = c.dist[u];
  for (std::size_t e = transit_offset_[u]; e < transit_offset_[u + 1]; ++e) {
    const DeviceId v = transit_[e].to;
    if (c.settled[v]) continue;
    const std::uint64_t nd = d + transit_[e].cost;
    if (nd < c.dist[v]) {
      set_distance(c, v, nd);
      c.heap.emplace_back(nd, v);
      std::push_heap(c.heap.begin(), c.heap.end(), later);
    }
  }
}

std::optional<std::uint64_t> Router::next_key(const CachedDistances& c) const {
  std::optional<std::uint64_t> key;
  if (!c.heap.empty()) key = c.heap.front().first;
  if (c.deferred_pending) {
    const std::uint64_t past = c.dist[c.deferred] + 1;
    key = key ? std::min(*key, past) : past;
  }
  return key;
}

void Router::settle(CachedDistances& c, DeviceId v) const {
  if (c.settled[v]) return;
  const auto next_to_dst = [&] {  // asked of stubs only: a switch may have thousands of links
    return std::any_of(topology_->links_of(v).begin(), topology_->links_of(v).end(),
                       [&](LinkId id) { return topology_->link(id).other(v) == c.dst; });
  };
  if (stub_exit_[v] != v && v != c.dst && !next_to_dst()) {
    const DeviceId exit = stub_exit_[v];
    settle(c, exit);
    // Settled on the way: dst hangs off v (every path from the exit to dst crosses v).
    if (c.settled[v]) return;
    set_distance(c, v, c.dist[exit] == kUnreachable ? kUnreachable : c.dist[exit] + stub_cost_[v]);
    c.settled[v] = 1;
    return;
  }
  while (!c.settled[v]) {
    const auto key = next_key(c);
    if (!key) break;
    settle_below(c, *key + 1);
  }
}

Router::CachedDistances& Router::distances(DeviceId from, DeviceId dst) const {
  CachedDistances& c = slot_for(dst);
  if (from >= topology_->devices().size()) throw std::out_of_range("Router: unknown device");
  const auto& links = topology_->links();
  if (from != dst && !may_forward(from)) {
    // A GPU source only originates traffic: one relaxation over its links, once each
    // neighbour closer than the best so far is settled.
    if (!c.settled[from]) {
      // A stub neighbour's cost, once the search has settled a device of its chain (a stub
      // not settled by the search reaches dst through its exit): not asked for eagerly, so
      // that a GPU whose NVLink neighbour is two hops from dst does not search the whole
      // network for its NIC's distance.
      const auto stub_cost = [&](DeviceId v) {
        std::uint64_t up = 0;
        for (DeviceId w = v;; w = stub_exit_[w]) {
          if (c.settled[w]) return c.dist[w] == kUnreachable ? kUnreachable : c.dist[w] + up;
          if (stub_exit_[w] == w) return kUnreachable;  // its root is not settled yet
          up += stub_cost_[w];
        }
      };
      const auto is_stub = [&](DeviceId v) {
        return v != dst && may_forward(v) && stub_exit_[v] != v;
      };
      std::uint64_t best = kUnreachable;
      for (;;) {
        best = kUnreachable;
        for (LinkId id : topology_->links_of(from)) {
          const DeviceId v = links[id].other(from);
          if (v != dst && !may_forward(v)) continue;
          const bool via_host = std::any_of(c.from_gpu.begin(), c.from_gpu.end(),
                                            [&](const auto& e) { return e.first == v; });
          std::uint64_t dv = kUnreachable;
          if (is_stub(v) && !c.settled[v] && !via_host) {
            dv = stub_cost(v);
          } else {
            if (!c.settled[v] && !via_host) continue;
            dv = distance_from_gpu(c.dist, c.from_gpu, v);
          }
          if (dv != kUnreachable) best = std::min(best, dv + link_costs_[id]);
        }
        const auto key = next_key(c);
        if (!key || *key >= best) break;
        settle_below(c, *key + 1);
      }
      // The stub neighbours on a shortest path get their distance (next hops read it).
      for (LinkId id : topology_->links_of(from)) {
        const DeviceId v = links[id].other(from);
        const bool via_host = std::any_of(c.from_gpu.begin(), c.from_gpu.end(),
                                          [&](const auto& e) { return e.first == v; });
        if (is_stub(v) && !c.settled[v] && !via_host && best != kUnreachable &&
            stub_cost(v) + link_costs_[id] == best)
          settle(c, v);
      }
      set_distance(c, from, best);
      c.settled[from] = 1;
    }
  } else {
    settle(c, from);
  }
  // Every device on a shortest path from `from` is closer to dst than `from`.
  std::uint64_t bound = c.dist[from];
  for (const auto& [sw, d] : c.from_gpu)
    if (sw == from && d != kUnreachable) bound = std::max(bound, d);
  if (bound != kUnreachable) settle_below(c, bound);
  return c;
}

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
      const auto pick = next.size() == 1 ? 0 : mix(flow_hash ^ mix(u)) % next.size();
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
