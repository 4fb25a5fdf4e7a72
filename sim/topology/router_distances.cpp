// The distances the router's walks follow (see Router in topology.hpp and router.cpp's header
// comment): toward each recent destination, a bounded Dijkstra search over the devices that
// forward traffic, resumed for farther sources and kept in a small cache of destinations; a
// GPU source's own distance is one relaxation over its links.
#include <algorithm>
#include <limits>
#include <stdexcept>

#include "gradsync/topology/topology.hpp"
#include "route_costs.hpp"

namespace gradsync {

using namespace route_costs;

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
  slot.dst_node = topology_->device(dst).node;
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

template <typename Fn>
void Router::for_each_transit(const CachedDistances& c, DeviceId u, Fn&& fn) const {
  for (std::size_t e = transit_offset_[u]; e < transit_server_offset_[u]; ++e)
    fn(transit_[e].to, transit_[e].cost);  // never a stub in transit
  // Of the transit servers' devices, dst's own server's only (transit_node_).
  const auto end = transit_.begin() + static_cast<std::ptrdiff_t>(transit_offset_[u + 1]);
  auto it = std::lower_bound(transit_.begin() + static_cast<std::ptrdiff_t>(transit_server_offset_[u]),
                             end, c.dst_node, [](const Transit& t, int node) { return t.node < node; });
  for (; it != end && it->node == c.dst_node; ++it) fn(it->to, it->cost);
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
        // GPUs never forward; other transit servers get theirs from settle_server.
        if (may_forward(v) && !foreign_transit(c, v)) relax(v, link_costs_[id]);
      }
      continue;
    }
    for_each_transit(c, u, relax);
  }
}

void Router::expand_deferred(CachedDistances& c) const {
  c.deferred_pending = false;
  const DeviceId u = c.deferred;
  c.deferred = std::numeric_limits<DeviceId>::max();
  const auto later = [](const auto& a, const auto& b) { return a.first > b.first; };
  const std::uint64_t d = c.dist[u];
  for_each_transit(c, u, [&](DeviceId v, std::uint64_t cost) {
    if (c.settled[v]) return;
    const std::uint64_t nd = d + cost;
    if (nd < c.dist[v]) {
      set_distance(c, v, nd);
      c.heap.emplace_back(nd, v);
      std::push_heap(c.heap.begin(), c.heap.end(), later);
    }
  });
}

// A transit server other than dst's: its devices reach dst only through the network devices
// around it (no detour through another server is shorter, find_transit_servers), so their
// distances are a Dijkstra inside the server seeded with those devices' distances.
void Router::settle_server(CachedDistances& c, int node) const {
  const auto x = static_cast<std::size_t>(node);
  const auto later = [](const auto& a, const auto& b) { return a.first > b.first; };
  std::vector<std::pair<std::uint64_t, DeviceId>> heap;
  for (std::size_t k = server_border_offset_[x]; k < server_border_offset_[x + 1]; ++k) {
    const Border& b = server_borders_[k];
    settle(c, b.outside);
    if (c.dist[b.outside] == kUnreachable || c.dist[b.outside] + b.cost >= c.dist[b.inside])
      continue;
    set_distance(c, b.inside, c.dist[b.outside] + b.cost);
    heap.emplace_back(c.dist[b.inside], b.inside);
    std::push_heap(heap.begin(), heap.end(), later);
  }
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const auto [d, u] = heap.back();
    heap.pop_back();
    if (c.settled[u] || d != c.dist[u]) continue;
    c.settled[u] = 1;
    for (const Neighbour& nb : neighbours(u)) {
      if (transit_node_[nb.to] != node || c.settled[nb.to] || d + nb.cost >= c.dist[nb.to])
        continue;
      set_distance(c, nb.to, d + nb.cost);
      heap.emplace_back(d + nb.cost, nb.to);
      std::push_heap(heap.begin(), heap.end(), later);
    }
  }
  for (std::size_t k = server_device_offset_[x]; k < server_device_offset_[x + 1]; ++k) {
    const DeviceId v = server_devices_[k];
    if (c.settled[v]) continue;
    set_distance(c, v, kUnreachable);  // cut off from the network: remembered as settled
    c.settled[v] = 1;
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
  if (foreign_transit(c, v)) {
    settle_server(c, transit_node_[v]);
    return;
  }
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
      for (LinkId id : topology_->links_of(from))  // its server's side, if left out (settle)
        if (const DeviceId v = links[id].other(from); foreign_transit(c, v)) settle(c, v);
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

}  // namespace gradsync
