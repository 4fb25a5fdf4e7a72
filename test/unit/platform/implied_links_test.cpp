// Constraints that can never bind (sim/platform/implied_links.hpp) on hand-built routes.
#include <doctest/doctest.h>

#include <vector>

#include "implied_links.hpp"

using gradsync::detail::Constraint;
using gradsync::detail::implied_constraints;

TEST_CASE("a leaf's uplinks are implied when its host ports add up to no more") {
  // 0, 1, 2: host ports into the leaf (100 each); 3: the leaf's uplink aggregate; 4: the far
  // leaf's downlink aggregate; 5, 6, 7: far host ports (100 each).
  std::vector<Constraint> c{{100, true, false}, {100, true, false}, {100, true, false},
                            {200, true, true},  {200, true, true},  {100, true, false},
                            {100, true, false}, {100, true, false}};
  SUBCASE("two hosts behind 200: both aggregates implied (uplink by its sources, downlink by "
          "its destinations)") {
    const auto implied = implied_constraints(c, {{0, 3, 4, 5}, {1, 3, 4, 6}});
    CHECK(implied == std::vector<char>{0, 0, 0, 1, 1, 0, 0, 0});
  }
  SUBCASE("three hosts to three hosts through 200 (oversubscribed): both may bind") {
    const auto implied = implied_constraints(c, {{0, 3, 4, 5}, {1, 3, 4, 6}, {2, 3, 4, 7}});
    CHECK(implied[3] == 0);
    CHECK(implied[4] == 0);
  }
  SUBCASE("three hosts to two: the links after bound the uplink (its flows all end there)") {
    const auto implied = implied_constraints(c, {{0, 3, 4, 5}, {1, 3, 4, 6}, {2, 3, 4, 6}});
    CHECK(implied[3] == 1);
    CHECK(implied[4] == 1);
  }
  SUBCASE("one host sending twice counts its port once") {
    const auto implied = implied_constraints(c, {{0, 3, 4, 5}, {0, 3, 4, 6}, {1, 3, 4, 6}});
    CHECK(implied[3] == 1);
  }
}

TEST_CASE("only shared constraints bound, and only candidates are dropped") {
  // 0: a per-flow bound (FATPIPE) of 1 before the candidate, 1: the candidate of 10, nothing after.
  std::vector<Constraint> c{{1, false, false}, {10, true, true}};
  CHECK(implied_constraints(c, {{0, 1}}) == std::vector<char>{0, 0});
  // The same with a shared port of 1 before: implied.
  c[0].shared = true;
  CHECK(implied_constraints(c, {{0, 1}}) == std::vector<char>{0, 1});
  // A non-candidate is never dropped, however large.
  c[1].candidate = false;
  CHECK(implied_constraints(c, {{0, 1}}) == std::vector<char>{0, 0});
}

TEST_CASE("the nearest shared constraint on each side bounds a chain of candidates") {
  // host 0 -> leaf uplinks 1 -> spine uplinks 2 -> spine downlinks 3 -> leaf downlinks 4 -> host 5
  std::vector<Constraint> c{{50, true, false}, {60, true, true}, {40, true, true},
                            {60, true, true},  {60, true, true}, {50, true, false}};
  const auto implied = implied_constraints(c, {{0, 1, 2, 3, 4, 5}});
  CHECK(implied == std::vector<char>{0, 1, 0, 1, 1, 0});  // 40 < 50 on both sides
}
