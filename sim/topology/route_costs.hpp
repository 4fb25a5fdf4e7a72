// The costs both halves of the router share (router.cpp walks shortest paths,
// router_distances.cpp finds the distances they follow, router_entries.cpp walks into a
// left-out server): the unknown distance, a PCIe switch without P2P, the cost-to-dst of a
// device entered from a GPU, and the ECMP pick among next hops. Internal to sim/topology.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "gradsync/topology/topology.hpp"
#include "gradsync/units/splitmix64.hpp"

namespace gradsync::route_costs {

inline constexpr std::uint64_t kUnreachable = std::numeric_limits<std::uint64_t>::max();

// Cost-to-dst of `v` for a flow that entered it from a GPU (see router.cpp's header comment).
inline std::uint64_t distance_from_gpu(
    const std::vector<std::uint64_t>& dist,
    const std::vector<std::pair<DeviceId, std::uint64_t>>& from_gpu, DeviceId v) {
  for (const auto& [sw, d] : from_gpu)
    if (sw == v) return d;
  return dist[v];
}

inline bool is_no_p2p_switch(const Device& d) {
  return d.kind == DeviceKind::PcieSwitch && !d.p2p;
}

// Which of `candidates` next hops a flow takes at device `at`: a seeded hash of (flow, device),
// as a switch hashing each flow would (splitmix64.hpp).
inline std::size_t ecmp_pick(std::uint64_t flow_hash, DeviceId at, std::size_t candidates) {
  return candidates == 1 ? 0 : splitmix64(flow_hash ^ splitmix64(at)) % candidates;
}

}  // namespace gradsync::route_costs
