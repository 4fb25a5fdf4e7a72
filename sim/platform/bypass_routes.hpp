// The SimGrid routes of a platform (build_platform): each route's hops become constraints —
// a topology link's direction (a candidate when it joins two switches), an adaptive-routing
// aggregate (a candidate), a carrier or a TCP host port — the candidates no set of flows can
// saturate are left out (implied_links.hpp), and the rest goes into the zone as bypass routes.
#pragma once

#include <cstddef>
#include <vector>

#include "gradsync/platform/platform_builder.hpp"

namespace simgrid::s4u {
class LinkInRoute;
}  // namespace simgrid::s4u

namespace gradsync::detail {

// One route's hops before they join the zone: from a device's host (or a QP's alias host) to
// the destination of p.routes[route].
struct PendingRoute {
  const simgrid::s4u::Host* from;
  std::size_t route;
  std::vector<simgrid::s4u::LinkInRoute> hops;
};

// Adds `pending` to p.zone, without the implied links when `drop_implied` (lossy RoCE keeps
// every link: its switch ports share by the number of flows); fills p.constraint_links and each
// route's sim_constraints (its shared constraints, implied ones left out). `route_links`: the
// SimGrid link of each topology link (split-duplex or shared), by LinkId. Frees the hops.
void add_bypass_routes(const Topology& topology,
                       const std::vector<const simgrid::s4u::Link*>& route_links,
                       const std::vector<const simgrid::s4u::Link*>& aggregate_links,
                       std::vector<PendingRoute>& pending, bool drop_implied, Platform& p);

}  // namespace gradsync::detail
