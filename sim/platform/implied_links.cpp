// Constraints that can never bind (implied_links.hpp).
#include "implied_links.hpp"

#include <limits>
#include <unordered_set>

namespace gradsync::detail {

std::vector<char> implied_constraints(std::span<const Constraint> constraints,
                                      const std::vector<std::vector<std::uint32_t>>& routes,
                                      double tolerance) {
  struct Bound {
    std::unordered_set<std::uint32_t> links;
    double sum = 0.0;
    bool open = false;  // a route through it has no shared constraint on this side
  };
  struct Sides {
    Bound before, after;
  };
  std::vector<Sides> sides(constraints.size());
  constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
  auto bounding = [&](std::uint32_t c) {
    return !constraints[c].candidate && constraints[c].shared;
  };
  auto add = [&](Bound& b, std::size_t at, const std::vector<std::uint32_t>& route) {
    if (at == kNone) {
      b.open = true;
      return;
    }
    const std::uint32_t c = route[at];
    if (b.links.insert(c).second) b.sum += constraints[c].capacity;
  };
  for (const std::vector<std::uint32_t>& route : routes) {
    // Nearest bounding constraint before each position, then after it.
    std::vector<std::size_t> before(route.size(), kNone), after(route.size(), kNone);
    for (std::size_t i = 0, last = kNone; i < route.size(); ++i) {
      before[i] = last;
      if (bounding(route[i])) last = i;
    }
    for (std::size_t i = route.size(), next = kNone; i-- > 0;) {
      after[i] = next;
      if (bounding(route[i])) next = i;
    }
    for (std::size_t i = 0; i < route.size(); ++i) {
      if (!constraints[route[i]].candidate) continue;
      add(sides[route[i]].before, before[i], route);
      add(sides[route[i]].after, after[i], route);
    }
  }
  std::vector<char> implied(constraints.size(), 0);
  for (std::size_t c = 0; c < constraints.size(); ++c) {
    if (!constraints[c].candidate || !constraints[c].shared) continue;
    const double limit = constraints[c].capacity * (1.0 + tolerance);
    const Sides& s = sides[c];
    const bool before = !s.before.open && s.before.sum <= limit;
    const bool after = !s.after.open && s.after.sum <= limit;
    implied[c] = before || after ? 1 : 0;
  }
  return implied;
}

}  // namespace gradsync::detail
