// The SimGrid routes of a platform (bypass_routes.hpp).
#include "bypass_routes.hpp"

#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>

#include <unordered_map>
#include <unordered_set>

#include "implied_links.hpp"

namespace gradsync::detail {

namespace sg4 = simgrid::s4u;

void add_bypass_routes(const Topology& topology, const std::vector<const sg4::Link*>& route_links,
                       const std::vector<const sg4::Link*>& aggregate_links,
                       std::vector<PendingRoute>& pending, bool drop_implied, Platform& p) {
  std::unordered_map<const sg4::Link*, LinkId> topology_link_of;
  for (LinkId id = 0; id < route_links.size(); ++id) topology_link_of.emplace(route_links[id], id);
  const std::unordered_set<const sg4::Link*> aggregates(aggregate_links.begin(),
                                                        aggregate_links.end());
  std::vector<Constraint> constraints;
  std::unordered_map<const sg4::Link*, std::uint32_t> constraint_of;  // by SimGrid link (half)
  auto constraint_id = [&](const sg4::LinkInRoute& hop) {
    const sg4::Link* link = hop.get_link();
    Constraint c;
    if (const auto t = topology_link_of.find(link); t != topology_link_of.end()) {
      const Link& l = topology.link(t->second);
      link = hop.get_direction() == sg4::LinkInRoute::Direction::DOWN ? p.links[t->second].b_to_a
                                                                       : p.links[t->second].a_to_b;
      c.capacity = l.effective_bandwidth().bytes_per_second();
      c.candidate = topology.device(l.a).kind == DeviceKind::Switch &&
                    topology.device(l.b).kind == DeviceKind::Switch;
    } else {
      c.capacity = link->get_bandwidth();
      c.shared = link->get_sharing_policy() == sg4::Link::SharingPolicy::SHARED;
      c.candidate = aggregates.count(link) > 0;
    }
    auto [it, fresh] = constraint_of.emplace(link, static_cast<std::uint32_t>(constraints.size()));
    if (fresh) {
      constraints.push_back(c);
      p.constraint_links.push_back(link);
    }
    return it->second;
  };
  std::vector<std::vector<std::uint32_t>> route_constraints(pending.size());
  for (std::size_t r = 0; r < pending.size(); ++r)
    for (const sg4::LinkInRoute& hop : pending[r].hops)
      route_constraints[r].push_back(constraint_id(hop));
  // Lossy RoCE's switch ports share by the number of flows (NONLINEAR): kept.
  const bool lossy_roce = topology.roce() && !topology.roce()->pfc;
  const std::vector<char> implied =
      drop_implied && !lossy_roce
          ? implied_constraints(constraints, route_constraints)
          : std::vector<char>(constraints.size(), 0);
  std::vector<sg4::LinkInRoute> hops;
  for (std::size_t r = 0; r < pending.size(); ++r) {
    PlatformRoute& pr = p.routes[pending[r].route];
    hops.clear();
    for (std::size_t i = 0; i < pending[r].hops.size(); ++i) {
      const std::uint32_t c = route_constraints[r][i];
      if (implied[c]) continue;
      hops.push_back(pending[r].hops[i]);
      if (p.constraint_links[c]->get_sharing_policy() != sg4::Link::SharingPolicy::FATPIPE)
        pr.sim_constraints.push_back(c);
    }
    p.zone->add_bypass_route(pending[r].from->get_netpoint(),
                             p.device_hosts[pr.dst]->get_netpoint(), nullptr, nullptr, hops);
    std::vector<sg4::LinkInRoute>().swap(pending[r].hops);
  }
}

}  // namespace gradsync::detail
