// Constraints that can never bind (build_platform): a SimGrid link X is implied when every flow
// that may cross it also crosses one of a set L of shared links whose capacities sum to at most
// X's: at any instant the flows on X carry at most sum(L), so X's max-min constraint follows
// from theirs and dropping X from the routes changes no rate. It is what a non-blocking
// fat tree's switch-to-switch links and adaptive-routing aggregates are: every flow through a
// leaf's uplinks came through one of its host ports, whose rates add up to the uplinks'.
// Dropping them uncouples flows that only met there (each rail of a fat tree becomes its own
// component, which flow fidelity's reductions then simulate once, flow_symmetry.hpp).
//
// For each candidate X the test takes, per route through X, the nearest non-candidate shared
// constraint before X (set L_before) and after X (L_after), and drops X when the smaller of
// sum(L_before), sum(L_after) is at most X's capacity (1 + tolerance). Constraints that bound
// only their own flow (SimGrid FATPIPE) never stand in L. The routes must be every route the
// platform holds: the test covers any subset of them in flight.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace gradsync::detail {

struct Constraint {
  double capacity = 0.0;   // B/s
  bool shared = true;      // the flows crossing it share its capacity (SimGrid SHARED)
  bool candidate = false;  // it may be dropped (a switch-to-switch link or an aggregate)
};

// Per constraint, 1 when it is implied (only candidates are). `routes[r]`: the constraints
// route r crosses, in order.
[[nodiscard]] std::vector<char> implied_constraints(
    std::span<const Constraint> constraints,
    const std::vector<std::vector<std::uint32_t>>& routes, double tolerance = 1e-9);

}  // namespace gradsync::detail
