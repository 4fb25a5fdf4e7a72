// Routes into a left-out transit server from outside it (see Entries in topology.hpp).
//
// Why: without peer to peer between GPUs and NICs (`node.pcie.p2p: false`) a GPU or NIC has no
// single switch every outside path enters it through (no proxy_), so each destination had its
// own search, and each such search toward a device behind a rail switch settled the whole spine
// layer (2,048 spines, 16,384 destinations on a 16k-GPU rail-optimized cluster).
//
// Why it is exact: let B be dst's server, left out of searches (find_transit_servers checked
// that a path through a server between two network devices is always longer than the network's
// own). A shortest path from outside B enters B over a border link and never leaves again
// (leaving and re-entering would be such a detour), and before it enters it crosses no server.
// So for v outside B, cost(v) = min over B's border switches X of cost(v, X) + entry(X), where
// entry(X) is the cheapest border link at X plus its inside end's cost to dst inside B. A
// neighbour w of v is a next hop iff cost(w) + link = cost(v); that holds iff, for some X
// attaining the minimum at v, w is a next hop toward X (or w is B's, across a border at v,
// with inside cost + link = cost(v)). Inside B the next hops are B's devices whose inside cost
// + link is the current one. The hops are listed in link order and picked by the same hash as
// route()'s, so a route is the one the full search gives.
#include <algorithm>
#include <functional>
#include <queue>
#include <stdexcept>
#include <utility>
#include <vector>

#include "gradsync/topology/topology.hpp"
#include "route_costs.hpp"

namespace gradsync {

using namespace route_costs;

namespace {

// Most border switches a server may have for this form (a DGX on a rail-optimized fabric has
// 8; a server on one leaf, 1). Each needs a cached search at once (kCachedDestinations).
constexpr std::size_t kMaxEntrySwitches = 16;

}  // namespace

bool Router::entries_toward(DeviceId src, DeviceId dst, Entries& e) const {
  if (server_sealed_.empty() || src == dst) return false;
  const int node = topology_->device(dst).node;
  if (node < 0 || static_cast<std::size_t>(node) >= server_sealed_.size()) return false;
  const auto x = static_cast<std::size_t>(node);
  const std::size_t first = server_device_offset_[x];
  const std::size_t last = server_device_offset_[x + 1];
  if (first == last || !server_sealed_[x] || topology_->device(src).node == node) return false;
  if (may_forward(dst) && transit_node_[dst] != node) return false;

  // Costs to dst inside B: a Dijkstra over B's forwarding devices, from dst (a GPU is entered
  // from its neighbours, never passed through).
  e.node = node;
  e.inside.assign(last - first, kUnreachable);
  using Item = std::pair<std::uint64_t, DeviceId>;
  std::priority_queue<Item, std::vector<Item>, std::greater<>> heap;
  const auto reach = [&](DeviceId v, std::uint64_t d) {
    std::uint64_t& slot = e.inside[server_index_[v] - first];
    if (d < slot) {
      slot = d;
      heap.emplace(d, v);
    }
  };
  if (may_forward(dst)) {
    reach(dst, 0);
  } else {
    for (const Neighbour& nb : neighbours(dst))
      if (transit_node_[nb.to] == node) reach(nb.to, nb.cost);
  }
  while (!heap.empty()) {
    const auto [d, u] = heap.top();
    heap.pop();
    if (d != e.inside[server_index_[u] - first]) continue;
    for (const Neighbour& nb : neighbours(u))
      if (transit_node_[nb.to] == node) reach(nb.to, d + nb.cost);
  }

  // Entry cost per border switch: its cheapest border link plus that link's inside cost.
  e.via.clear();
  for (std::size_t k = server_border_offset_[x]; k < server_border_offset_[x + 1]; ++k) {
    const Border& b = server_borders_[k];
    const std::uint64_t in = e.inside[server_index_[b.inside] - first];
    if (in == kUnreachable) continue;
    const auto it = std::find_if(e.via.begin(), e.via.end(),
                                 [&](const auto& v) { return v.first == b.outside; });
    if (it == e.via.end())
      e.via.emplace_back(b.outside, b.cost + in);
    else
      it->second = std::min(it->second, b.cost + in);
  }
  if (e.via.empty() || e.via.size() > kMaxEntrySwitches) return false;
  // Each search is bounded by src's own cost to its switch; slots touched here are the most
  // recently used, so later calls in this loop never reuse them (at most 16 of 64).
  e.toward.clear();
  for (const auto& [sw, entry] : e.via) e.toward.push_back(&distances(src, sw));
  // Unreachable: the full search says so (route() throws its error).
  return std::any_of(e.toward.begin(), e.toward.end(),
                     [&](const CachedDistances* c) { return c->dist[src] != kUnreachable; });
}

std::uint64_t Router::inside_cost(const Entries& e, DeviceId v, DeviceId dst) const {
  if (v == dst) return 0;
  if (transit_node_[v] != e.node) return kUnreachable;
  return e.inside[server_index_[v] - server_device_offset_[static_cast<std::size_t>(e.node)]];
}

void Router::entry_hops(const Entries& e, DeviceId u, DeviceId dst,
                        std::vector<std::pair<LinkId, DeviceId>>& out) const {
  out.clear();
  if (topology_->device(u).node == e.node) {  // inside B: inside costs only
    const std::uint64_t du = inside_cost(e, u, dst);
    if (du == kUnreachable) return;
    for (const Neighbour& nb : neighbours(u)) {
      if (nb.gpu && nb.to != dst) continue;
      const std::uint64_t dv = inside_cost(e, nb.to, dst);
      if (dv != kUnreachable && dv + nb.cost == du) out.emplace_back(nb.link, nb.to);
    }
    return;
  }
  std::uint64_t du = kUnreachable;
  for (std::size_t k = 0; k < e.via.size(); ++k)
    if (const std::uint64_t d = e.toward[k]->dist[u]; d != kUnreachable)
      du = std::min(du, d + e.via[k].second);
  if (du == kUnreachable) return;
  // The border switches attaining the minimum at u (usually one).
  std::size_t best[kMaxEntrySwitches];
  std::size_t nbest = 0;
  for (std::size_t k = 0; k < e.via.size(); ++k) {
    const std::uint64_t d = e.toward[k]->dist[u];
    if (d != kUnreachable && d + e.via[k].second == du) best[nbest++] = k;
  }
  // u is the only switch attaining it: the hops are its border links into B (a rail switch's
  // few among its thousands of links), in link order.
  if (std::all_of(best, best + nbest, [&](std::size_t k) { return e.via[k].first == u; })) {
    const auto x = static_cast<std::size_t>(e.node);
    for (std::size_t k = server_border_offset_[x]; k < server_border_offset_[x + 1]; ++k) {
      const Border& b = server_borders_[k];
      if (b.outside != u) continue;
      const std::uint64_t in = inside_cost(e, b.inside, dst);
      if (in != kUnreachable && in + b.cost == du) out.emplace_back(b.link, b.inside);
    }
    std::sort(out.begin(), out.end());
    return;
  }
  for (const Neighbour& nb : neighbours(u)) {
    if (nb.gpu) continue;  // dst is inside B, whose GPUs are cabled inside only
    if (transit_node_[nb.to] == e.node) {  // across a border link at u
      const std::uint64_t in = inside_cost(e, nb.to, dst);
      if (in != kUnreachable && in + nb.cost == du) out.emplace_back(nb.link, nb.to);
      continue;
    }
    for (std::size_t i = 0; i < nbest; ++i) {
      const CachedDistances& c = *e.toward[best[i]];
      if (c.dst == u) continue;  // u is that switch: its hops into B are the border's (above)
      const std::uint64_t dv = c.dist[nb.to];
      if (dv != kUnreachable && dv + nb.cost == c.dist[u]) {
        out.emplace_back(nb.link, nb.to);
        break;
      }
    }
  }
}

Route Router::entry_route(const Entries& e, DeviceId src, DeviceId dst,
                          std::uint64_t flow_hash) const {
  Route r;
  r.devices.push_back(src);
  std::vector<std::pair<LinkId, DeviceId>> next;
  for (DeviceId u = src; u != dst;) {
    entry_hops(e, u, dst, next);
    if (next.empty()) throw std::logic_error("Router::route: dead end on a shortest path");
    const auto& [link, v] = next[ecmp_pick(flow_hash, u, next.size())];
    r.links.push_back(link);
    r.devices.push_back(v);
    u = v;
  }
  return r;
}

}  // namespace gradsync
