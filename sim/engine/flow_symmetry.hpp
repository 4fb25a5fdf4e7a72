// Internal to the engine: exact reductions of one flow-fidelity phase before SimGrid sees it.
//
// A phase starts all its flows at once and ends when the last one arrives. SimGrid's cost grows
// with the flows in flight (each completion scans every detached Comm: quadratic in flows), so a
// 16k-GPU ring (262,144 flows) cannot be replayed flow by flow. Two reductions keep its answer
// exactly, and never apply where their condition does not hold:
//
//   * Mirrored components. Flows that share a link (a SimGrid constraint) are coupled; the
//     phase splits into connected components (one per server's NVLink domain, one for the
//     network, …). Two components whose flows, listed in the same order, have the same bytes,
//     latency and route class, and routes through links of the same capacity and sharing
//     policy in the same pattern (links relabelled in order of first use), are the same
//     max-min system: their flows finish at the same times. One is simulated; the others are
//     counted (their bytes still reach the per-link totals) but not replayed.
//   * Uniform multiplicity. When every source-destination pair of a component carries the same
//     number m of flows of (nearly, 1e-6) the same size — channels that walk the same ring
//     order — max-min gives each the same rate, and merging each pair's m flows into one of
//     m times the bytes scales every share by m: the times do not change (max-min fairness is
//     homogeneous). Pairs with different counts are not merged (a merged flow would weigh as
//     one where it shares a link).
//
// Both are checked per phase from the routes, so a broken symmetry (an oversubscribed or failed
// link, a random placement, ECMP collisions) only means less reduction. The engine skips them
// where a flow's start depends on the other flows started with it (the RoCE PFC and lossy
// tiers, TCP incast).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "gradsync/topology/topology.hpp"

namespace gradsync::detail {

struct DeviceFlow {
  DeviceId src = 0;
  DeviceId dst = 0;
  std::uint8_t channel = 0;
  double bytes = 0.0;
};

// What decides a flow's simulated behaviour besides its bytes, from its pair's route.
struct FlowShape {
  // The constraints (SimGrid links) the flow's sub-flows cross: an identity, the capacity and
  // the sharing policy of each.
  struct Port {
    std::uintptr_t id = 0;
    double capacity = 0.0;
    int policy = 0;
  };
  std::vector<Port> ports;
  double latency_s = 0.0;   // what the flow is charged before its bytes
  int route_class = 0;      // anything else that changes its wire bytes (NCCL's protocol factor)
  // Its component may be mirrored only when the flow is one sub-flow on one path (no queue
  // pairs, no adaptive spreading over aggregate links).
  bool plain = true;
  std::uint32_t src_order = 0;  // the endpoints' order in their server (local index)
  std::uint32_t dst_order = 0;
};

struct ReducedPhase {
  std::vector<DeviceFlow> simulate;  // to replay (merged flows carry their pair's bytes)
  std::vector<DeviceFlow> mirrored;  // finish with a simulated flow: count their bytes only
  std::size_t merged = 0;            // flows folded into another by uniform multiplicity
};

// `flows` sorted by (src, dst, channel); `shape_of(src, dst)` describes a pair's route.
[[nodiscard]] ReducedPhase reduce_phase(
    const std::vector<DeviceFlow>& flows,
    const std::function<const FlowShape&(DeviceId src, DeviceId dst)>& shape_of);

}  // namespace gradsync::detail
