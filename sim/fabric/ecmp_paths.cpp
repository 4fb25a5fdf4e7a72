// Routing over equal-cost paths (fabric_model.hpp): static per-flow hashing with several queue
// pairs, or adaptive routing as an ideal even split at every branching network switch.
#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>
#include <stdexcept>

#include "gradsync/units/splitmix64.hpp"
#include "gradsync/fabric/fabric_model.hpp"
#include "gradsync/topology/fabric_registry.hpp"

namespace gradsync {

namespace {

// The Router's per-hop hash (splitmix64.hpp).
constexpr auto hop_mix = splitmix64;

// The hash of queue pair q of a connection whose first QP hashes with `flow_hash` (QPs differ in
// their UDP source port on RoCE, so switches see independent flows).
std::uint64_t qp_hash(std::uint64_t flow_hash, std::uint32_t q) {
  return q == 0 ? flow_hash : hop_mix(flow_hash ^ hop_mix(0x5150ULL + q));
}

void add_share(std::vector<LinkShare>& shares, LinkId link, DeviceId from, double share) {
  for (LinkShare& s : shares)
    if (s.link == link && s.from == from) {
      s.share += share;
      return;
    }
  shares.push_back(LinkShare{link, from, share});
}

// add_share() into one list many times: past a few entries, (link, from) -> position is kept
// in a hash map (an adaptive stage over a fat tree's core has hundreds of links; scanning it
// for each of them made spreading a pair quadratic in the core's size). Same order, same sums.
class ShareAdder {
 public:
  explicit ShareAdder(std::vector<LinkShare>& shares) : shares_(shares) {}
  void add(LinkId link, DeviceId from, double share) {
    if (shares_.size() < kScan && index_.empty()) {
      add_share(shares_, link, from, share);
      return;
    }
    if (index_.empty())
      for (std::size_t i = 0; i < shares_.size(); ++i)
        index_.emplace(key(shares_[i].link, shares_[i].from), i);
    const auto [it, fresh] = index_.emplace(key(link, from), shares_.size());
    if (fresh) shares_.push_back(LinkShare{link, from, share});
    else shares_[it->second].share += share;
  }

 private:
  static constexpr std::size_t kScan = 16;
  static std::uint64_t key(LinkId link, DeviceId from) {
    return (static_cast<std::uint64_t>(link) << 32) ^ static_cast<std::uint64_t>(from);
  }
  std::vector<LinkShare>& shares_;
  std::unordered_map<std::uint64_t, std::size_t> index_;
};

}  // namespace

std::string_view to_string(Routing routing) {
  return routing == Routing::Static ? "static" : "adaptive";
}

std::optional<Routing> routing_from_string(std::string_view text) {
  if (text == "static") return Routing::Static;
  if (text == "adaptive") return Routing::Adaptive;
  return std::nullopt;
}

Routing default_routing(Fabric network_fabric) { return fabric_info(network_fabric).routing; }

Routing effective_routing(const Topology& topology) {
  if (topology.routing().mode) return *topology.routing().mode;
  for (const Link& l : topology.links())
    if (is_network_fabric(l.fabric)) return default_routing(l.fabric);
  return Routing::Static;
}

bool crosses_network(const Topology& topology, const Route& route) {
  return std::any_of(route.links.begin(), route.links.end(),
                     [&](LinkId id) { return is_network_fabric(topology.link(id).fabric); });
}

std::vector<RailNic> rail_nics(const Topology& topology, DeviceId gpu) {
  const int node = topology.device(gpu).node;
  if (node < 0) return {};
  // Breadth-first inside the server: the first depth that reaches a NIC holds the rail NICs.
  std::map<DeviceId, std::pair<LinkId, DeviceId>> parent;  // device -> (link in, previous)
  std::vector<DeviceId> frontier{gpu};
  parent.emplace(gpu, std::pair<LinkId, DeviceId>{0, gpu});
  while (!frontier.empty()) {
    std::vector<DeviceId> next, found;
    for (DeviceId u : frontier)
      for (LinkId id : topology.links_of(u)) {
        const DeviceId v = topology.link(id).other(u);
        const Device& d = topology.device(v);
        if (d.node != node || d.kind == DeviceKind::Gpu || d.kind == DeviceKind::Switch ||
            !parent.emplace(v, std::pair{id, u}).second)
          continue;
        (d.kind == DeviceKind::Nic ? found : next).push_back(v);
      }
    if (!found.empty()) {
      std::sort(found.begin(), found.end());
      std::vector<RailNic> out;
      for (DeviceId nic : found) {
        RailNic rail{nic, {}};
        for (DeviceId v = nic; v != gpu; v = parent.at(v).second) {
          rail.path.devices.push_back(v);
          rail.path.links.push_back(parent.at(v).first);
        }
        rail.path.devices.push_back(gpu);
        std::reverse(rail.path.devices.begin(), rail.path.devices.end());
        std::reverse(rail.path.links.begin(), rail.path.links.end());
        out.push_back(std::move(rail));
      }
      // A PCIe switch without GPU <-> NIC P2P (Link::shares) puts every NIC of the socket at
      // the same depth; NCCL still sees the GPU and the NIC under one switch and binds the
      // GPU's channels to that NIC: the paths that climb and come back down one uplink.
      const auto same_switch = [&](const RailNic& r) {
        for (LinkId a : r.path.links)
          for (LinkId b : r.path.links)
            if (topology.link(b).shares == a) return true;
        return false;
      };
      if (std::any_of(out.begin(), out.end(), same_switch))
        out.erase(std::remove_if(out.begin(), out.end(),
                                 [&](const RailNic& r) { return !same_switch(r); }),
                  out.end());
      return out;
    }
    frontier = std::move(next);
  }
  return {};
}

namespace {

// head (a ... b) + mid (b ... c) + tail (c ... d).
Route joined(const Route& head, const Route& mid, const Route& tail) {
  Route r = head;
  for (const Route* part : {&mid, &tail}) {
    r.devices.insert(r.devices.end(), part->devices.begin() + 1, part->devices.end());
    r.links.insert(r.links.end(), part->links.begin(), part->links.end());
  }
  return r;
}

Route reversed(Route r) {
  std::reverse(r.devices.begin(), r.devices.end());
  std::reverse(r.links.begin(), r.links.end());
  return r;
}

// The hops of a fixed path as adaptive stages of one link each.
void append_path_stages(const Route& path, std::vector<std::vector<LinkShare>>& stages) {
  for (std::size_t i = 0; i < path.links.size(); ++i)
    stages.push_back({LinkShare{path.links[i], path.devices[i], 1.0}});
}

PathSpread spread_one(const Topology& topology, const Router& router, DeviceId src, DeviceId dst,
                      Routing routing, std::uint32_t qps, std::uint64_t flow_hash,
                      Route first);

// The one link out of a NIC that leaves its server (its network port) and the device there,
// or nullopt when it has none or several.
std::optional<std::pair<LinkId, DeviceId>> network_port(const Topology& topology, DeviceId nic) {
  std::optional<std::pair<LinkId, DeviceId>> port;
  for (LinkId id : topology.links_of(nic)) {
    const DeviceId v = topology.link(id).other(nic);
    if (topology.device(v).node == topology.device(nic).node) continue;
    if (port) return std::nullopt;
    port = std::pair{id, v};
  }
  return port;
}

// Rail `a -> b` between two NICs, spread as spread_one() would. A packet for NIC b can only
// arrive through b's own port, and one from a leaves through a's: the Router's shortest paths
// between the NICs themselves may instead enter b's server through another of its NICs and
// cross its PCIe to b (as many hops where that NIC's switch is on the way: a fat tree whose
// edge switches hold NICs of two servers), which no NIC forwards. So the spreading runs between
// the switches at the two ports, with the ports' links as its first and last hop. NICs cabled
// to each other, or with several ports, keep the Router's route between them.
PathSpread spread_rail_ports(const Topology& topology, const Router& router, DeviceId a,
                             DeviceId b, Routing routing, std::uint32_t qps, std::uint64_t hash) {
  const auto pa = network_port(topology, a);
  const auto pb = network_port(topology, b);
  if (!pa || !pb || pa->second == b)
    return spread_one(topology, router, a, b, routing, qps, hash, router.route(a, b, hash));
  const Route first_hop{{a, pa->second}, {pa->first}};
  const Route last_hop{{pb->second, b}, {pb->first}};
  PathSpread mid;
  if (pa->second == pb->second) {
    // One switch between them: nothing to spread; static QPs all take the one path.
    const std::uint32_t n = routing == Routing::Static ? std::max<std::uint32_t>(qps, 1) : 1;
    mid.qp_routes.assign(n, Route{{pa->second}, {}});
  } else {
    mid = spread_one(topology, router, pa->second, pb->second, routing, qps, hash,
                     router.route(pa->second, pb->second, hash));
  }
  PathSpread out;
  for (const Route& m : mid.qp_routes) out.qp_routes.push_back(joined(first_hop, m, last_hop));
  if (routing == Routing::Adaptive) {
    append_path_stages(first_hop, out.stages);
    out.stages.insert(out.stages.end(), mid.stages.begin(), mid.stages.end());
    append_path_stages(last_hop, out.stages);
  }
  return out;
}

// A connection across servers split over NIC rails (spread_paths()); empty when a rail would
// pass through a server.
PathSpread spread_rails(const Topology& topology, const Router& router,
                        const std::vector<RailNic>& from, const std::vector<RailNic>& to,
                        Routing routing, std::uint32_t qps, std::uint64_t flow_hash) {
  const std::size_t rails = std::max(from.size(), to.size());
  std::vector<std::vector<Route>> routes(rails);              // per rail: its sub-routes
  std::vector<std::vector<std::vector<LinkShare>>> stages(rails);  // per rail (adaptive)
  bool aligned = routing == Routing::Adaptive;
  for (std::size_t r = 0; r < rails; ++r) {
    const RailNic& a = from[r % from.size()];
    const RailNic& b = to[r % to.size()];
    const std::uint64_t hash = r == 0 ? flow_hash : hop_mix(flow_hash ^ hop_mix(0x7261696cULL + r));
    const PathSpread mid = spread_rail_ports(topology, router, a.nic, b.nic, routing, qps, hash);
    // The rail must stay in the network between its NICs; where it would pass through a
    // server (NIC k cabled only to NIC k, and rail r pairing NICs of different sockets), the
    // connection keeps the Router's one route instead.
    for (const Route& m : mid.qp_routes)
      for (std::size_t i = 1; i + 1 < m.devices.size(); ++i)
        if (topology.device(m.devices[i]).node >= 0) return {};
    for (const auto& stage : mid.stages)
      for (const LinkShare& sh : stage)
        for (const DeviceId end : {topology.link(sh.link).a, topology.link(sh.link).b})
          if (end != a.nic && end != b.nic && topology.device(end).node >= 0) return {};
    const Route tail = reversed(b.path);
    for (const Route& m : mid.qp_routes) routes[r].push_back(joined(a.path, m, tail));
    if (routing == Routing::Adaptive) {
      append_path_stages(a.path, stages[r]);
      stages[r].insert(stages[r].end(), mid.stages.begin(), mid.stages.end());
      append_path_stages(tail, stages[r]);
      aligned = aligned && stages[r].size() == stages[0].size();
    }
  }
  PathSpread out;
  if (aligned) {
    // One representative path; per hop, every rail's links at a share of 1 / rails.
    out.qp_routes.push_back(routes[0][0]);
    out.stages.resize(stages[0].size());
    for (std::size_t r = 0; r < rails; ++r)
      for (std::size_t h = 0; h < stages[r].size(); ++h)
        for (const LinkShare& s : stages[r][h])
          add_share(out.stages[h], s.link, s.from, s.share / static_cast<double>(rails));
    for (const auto& stage : out.stages)
      for (const LinkShare& s : stage) add_share(out.link_shares, s.link, s.from, s.share);
    return out;
  }
  // Static, or adaptive rails of different lengths: every sub-route carries an equal part.
  for (auto& rail : routes)
    for (Route& route : rail) out.qp_routes.push_back(std::move(route));
  const double part = 1.0 / static_cast<double>(out.qp_routes.size());
  for (const Route& route : out.qp_routes)
    for (std::size_t i = 0; i < route.links.size(); ++i)
      add_share(out.link_shares, route.links[i], route.devices[i], part);
  return out;
}

}  // namespace

PathSpread spread_paths(const Topology& topology, const Router& router, DeviceId src,
                        DeviceId dst, Routing routing, std::uint32_t qps,
                        std::uint64_t flow_hash) {
  const Device& a = topology.device(src);
  const Device& b = topology.device(dst);
  const bool apart = a.kind == DeviceKind::Gpu && b.kind == DeviceKind::Gpu && a.node != b.node;
  std::vector<RailNic> from, to;
  if (apart) {
    from = rail_nics(topology, src);
    to = rail_nics(topology, dst);
  }
  // One rail each: the Router's routes already pass its NICs, except behind a switch without
  // GPU <-> NIC P2P, where every NIC of the socket is as close (rail_nics keeps the own one).
  // Such servers are a cluster template's (Link::shares), joined only by its network: the
  // Router's own route, whose search from a GPU would reach every NIC of its socket and every
  // rail behind them, is not needed to tell.
  const auto via_cpu = [&](const std::vector<RailNic>& rails) {
    return std::any_of(rails.begin(), rails.end(), [&](const RailNic& r) {
      return std::any_of(r.path.links.begin(), r.path.links.end(),
                         [&](LinkId id) { return topology.link(id).shares.has_value(); });
    });
  };
  const bool cpu_rails = !from.empty() && !to.empty() && (via_cpu(from) || via_cpu(to));
  std::optional<Route> first;
  if (!cpu_rails) first = router.route(src, dst, flow_hash);
  if (apart && !from.empty() && !to.empty() &&
      (cpu_rails || ((from.size() > 1 || to.size() > 1) && crosses_network(topology, *first))))
    if (PathSpread rails = spread_rails(topology, router, from, to, routing, qps, flow_hash);
        !rails.qp_routes.empty())
      return rails;
  if (!first) first = router.route(src, dst, flow_hash);
  return spread_one(topology, router, src, dst, routing, qps, flow_hash, std::move(*first));
}

namespace {

PathSpread spread_one(const Topology& topology, const Router& router, DeviceId src, DeviceId dst,
                      Routing routing, std::uint32_t qps, std::uint64_t flow_hash,
                      Route first_route) {
  PathSpread out;
  out.qp_routes.push_back(std::move(first_route));
  const Route& first = out.qp_routes.front();

  if (routing == Routing::Static) {
    const std::uint32_t n = crosses_network(topology, first) ? std::max<std::uint32_t>(qps, 1) : 1;
    for (std::uint32_t q = 1; q < n; ++q) out.qp_routes.push_back(router.route(src, dst, qp_hash(flow_hash, q)));
    for (const Route& r : out.qp_routes)
      for (std::size_t i = 0; i < r.links.size(); ++i)
        add_share(out.link_shares, r.links[i], r.devices[i], 1.0 / n);
    return out;
  }

  // Adaptive: walk hop by hop with the fraction of the flow at each device.
  ShareAdder link_shares(out.link_shares);
  std::map<DeviceId, double> frontier{{src, 1.0}};
  const std::size_t max_hops = topology.devices().size();
  for (std::size_t hop = 0; !(frontier.size() == 1 && frontier.begin()->first == dst); ++hop) {
    if (hop > max_hops) throw std::logic_error("spread_paths: no progress toward the destination");
    std::map<DeviceId, double> next;
    std::vector<LinkShare> stage;
    ShareAdder stage_shares(stage);
    for (const auto& [u, f] : frontier) {
      if (u == dst) {
        next[u] += f;
        continue;
      }
      // On the first hop out of the source the flow came from src (a PCIe switch without
      // P2P sends a GPU's traffic upstream, Router).
      const auto hops =
          router.next_hops(u, dst, hop == 1 ? std::optional<DeviceId>(src) : std::nullopt);
      if (hops.empty()) throw std::logic_error("spread_paths: dead end on a shortest path");
      const bool spread = hops.size() > 1 && topology.device(u).kind == DeviceKind::Switch;
      if (spread) {
        const double part = f / static_cast<double>(hops.size());
        for (const auto& [link, v] : hops) {
          stage_shares.add(link, u, part);
          next[v] += part;
        }
      } else {
        const auto& [link, v] =
            hops[hops.size() == 1 ? 0 : hop_mix(flow_hash ^ hop_mix(u)) % hops.size()];
        stage_shares.add(link, u, f);
        next[v] += f;
      }
    }
    for (const LinkShare& s : stage) link_shares.add(s.link, s.from, s.share);
    out.stages.push_back(std::move(stage));
    frontier = std::move(next);
  }
  return out;
}

}  // namespace

}  // namespace gradsync
