// Routing over equal-cost paths (fabric_model.hpp): static per-flow hashing with several queue
// pairs, or adaptive routing as an ideal even split at every branching network switch.
#include <algorithm>
#include <map>
#include <stdexcept>

#include "gradsync/fabric_model.hpp"

namespace gradsync {

namespace {

// splitmix64, as the Router's per-hop hash.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The hash of queue pair q of a connection whose first QP hashes with `flow_hash` (QPs differ in
// their UDP source port on RoCE, so switches see independent flows).
std::uint64_t qp_hash(std::uint64_t flow_hash, std::uint32_t q) {
  return q == 0 ? flow_hash : mix(flow_hash ^ mix(0x5150ULL + q));
}

void add_share(std::vector<LinkShare>& shares, LinkId link, DeviceId from, double share) {
  for (LinkShare& s : shares)
    if (s.link == link && s.from == from) {
      s.share += share;
      return;
    }
  shares.push_back(LinkShare{link, from, share});
}

}  // namespace

std::string_view to_string(Routing routing) {
  return routing == Routing::Static ? "static" : "adaptive";
}

std::optional<Routing> routing_from_string(std::string_view text) {
  if (text == "static") return Routing::Static;
  if (text == "adaptive") return Routing::Adaptive;
  return std::nullopt;
}

Routing default_routing(Fabric network_fabric) {
  return network_fabric == Fabric::InfiniBand ? Routing::Adaptive : Routing::Static;
}

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

PathSpread spread_paths(const Topology& topology, const Router& router, DeviceId src,
                        DeviceId dst, Routing routing, std::uint32_t qps,
                        std::uint64_t flow_hash) {
  PathSpread out;
  out.qp_routes.push_back(router.route(src, dst, flow_hash));
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
  std::map<DeviceId, double> frontier{{src, 1.0}};
  const std::size_t max_hops = topology.devices().size();
  for (std::size_t hop = 0; !(frontier.size() == 1 && frontier.begin()->first == dst); ++hop) {
    if (hop > max_hops) throw std::logic_error("spread_paths: no progress toward the destination");
    std::map<DeviceId, double> next;
    std::vector<LinkShare> stage;
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
          add_share(stage, link, u, part);
          next[v] += part;
        }
      } else {
        const auto& [link, v] =
            hops[hops.size() == 1 ? 0 : mix(flow_hash ^ mix(u)) % hops.size()];
        add_share(stage, link, u, f);
        next[v] += f;
      }
    }
    for (const LinkShare& s : stage) add_share(out.link_shares, s.link, s.from, s.share);
    out.stages.push_back(std::move(stage));
    frontier = std::move(next);
  }
  return out;
}

}  // namespace gradsync
