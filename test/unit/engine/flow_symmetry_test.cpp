// The exact reductions of a flow-fidelity phase (sim/engine/flow_symmetry.hpp), on synthetic
// routes: which components are mirrored, when a pair's flows merge, and when neither applies.
#include <doctest/doctest.h>

#include <map>
#include <utility>
#include <vector>

#include "flow_symmetry.hpp"

using namespace gradsync;
using detail::DeviceFlow;
using detail::FlowShape;

namespace {

// Routes by hand: each (src, dst) pair's ports (link ids with a capacity), latency and order.
struct Routes {
  std::map<std::pair<DeviceId, DeviceId>, FlowShape> shapes;
  void add(DeviceId src, DeviceId dst, std::vector<std::uintptr_t> links, double capacity = 1e9,
           std::uint32_t src_order = 0, std::uint32_t dst_order = 1, bool plain = true) {
    FlowShape s;
    for (std::uintptr_t l : links) s.ports.push_back({l, capacity, 1});
    s.latency_s = 1e-6;
    s.plain = plain;
    s.src_order = src_order;
    s.dst_order = dst_order;
    shapes[{src, dst}] = s;
  }
  detail::ReducedPhase reduce(const std::vector<DeviceFlow>& flows) const {
    return detail::reduce_phase(flows, [this](DeviceId s, DeviceId d) -> const FlowShape& {
      return shapes.at({s, d});
    });
  }
};

double total_bytes(const std::vector<DeviceFlow>& flows) {
  double b = 0.0;
  for (const DeviceFlow& f : flows) b += f.bytes;
  return b;
}

}  // namespace

TEST_CASE("flow reductions: identical servers are simulated once") {
  // Two servers, each a pair of flows sharing the GPU port link: 0->1, 0->2 on link 10 (and 11,
  // 12); the same on 20 (21, 22) for 3->4, 3->5.
  Routes r;
  r.add(0, 1, {10, 11}, 1e9, 0, 1);
  r.add(0, 2, {10, 12}, 1e9, 0, 2);
  r.add(3, 4, {20, 21}, 1e9, 0, 1);
  r.add(3, 5, {20, 22}, 1e9, 0, 2);
  const std::vector<DeviceFlow> flows{{0, 1, 0, 5e6}, {0, 2, 0, 7e6}, {3, 4, 0, 5e6}, {3, 5, 0, 7e6}};
  const auto reduced = r.reduce(flows);
  CHECK(reduced.simulate.size() == 2);
  CHECK(reduced.mirrored.size() == 2);
  CHECK(total_bytes(reduced.simulate) + total_bytes(reduced.mirrored) == doctest::Approx(24e6));
}

TEST_CASE("flow reductions: a different capacity, size or coupling is not mirrored") {
  Routes r;
  r.add(0, 1, {10, 11}, 1e9, 0, 1);
  r.add(0, 2, {10, 12}, 1e9, 0, 2);
  r.add(3, 4, {20, 21}, 5e8, 0, 1);  // a slower link in the second server
  r.add(3, 5, {20, 22}, 1e9, 0, 2);
  std::vector<DeviceFlow> flows{{0, 1, 0, 5e6}, {0, 2, 0, 7e6}, {3, 4, 0, 5e6}, {3, 5, 0, 7e6}};
  CHECK(r.reduce(flows).mirrored.empty());
  r.add(3, 4, {20, 21}, 1e9, 0, 1);
  flows[2].bytes = 6e6;  // other bytes
  CHECK(r.reduce(flows).mirrored.empty());
  flows[2].bytes = 5e6;
  r.add(3, 4, {20, 10}, 1e9, 0, 1);  // shares link 10 with the first server: one component
  CHECK(r.reduce(flows).mirrored.empty());
  r.add(3, 4, {20, 21}, 1e9, 0, 1, /*plain=*/false);  // queue pairs or adaptive spreading
  CHECK(r.reduce(flows).mirrored.empty());
}

TEST_CASE("flow reductions: a pair's flows merge only at uniform multiplicity") {
  Routes r;
  r.add(0, 1, {10});
  r.add(2, 3, {10});
  // Two channels on each pair, one component (link 10): merged into one flow per pair.
  std::vector<DeviceFlow> flows{{0, 1, 0, 4e6}, {0, 1, 1, 4e6}, {2, 3, 0, 3e6}, {2, 3, 1, 3e6}};
  auto reduced = r.reduce(flows);
  REQUIRE(reduced.simulate.size() == 2);
  CHECK(reduced.merged == 2);
  CHECK(reduced.simulate[0].bytes == doctest::Approx(8e6));
  CHECK(reduced.simulate[1].bytes == doctest::Approx(6e6));
  // One pair with a single flow: merging would change the other pair's share, so nothing merges.
  flows.pop_back();
  reduced = r.reduce(flows);
  CHECK(reduced.merged == 0);
  CHECK(reduced.simulate.size() == 3);
  // Flows of one pair of different sizes do not merge either.
  flows = {{0, 1, 0, 4e6}, {0, 1, 1, 5e6}, {2, 3, 0, 3e6}, {2, 3, 1, 3e6}};
  CHECK(r.reduce(flows).merged == 0);
}
