// Ring orders and chains on servers of directly NVLinked GPUs (mesh_ring_orders.hpp): each
// channel's path across servers cut at the GPUs nearest its NIC, and the ranks renumbered
// along a server's first ring.
#include "gradsync/collective/mesh_ring_orders.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <optional>
#include <utility>

#include "gradsync/fabric/fabric_model.hpp"

namespace gradsync {

namespace {

using Ring = std::vector<std::uint32_t>;

// Which NIC each GPU of a server is nearest to, by hops, then its rail: one router and one
// pass over the devices for every server a call looks at.
class NicLocator {
 public:
  explicit NicLocator(const Topology& topology) : topology_(topology), router_(topology) {
    for (DeviceId d = 0; d < topology.devices().size(); ++d)
      if (topology.device(d).kind == DeviceKind::Nic) nics_[topology.device(d).node].push_back(d);
  }
  // The NICs of the server of these GPUs.
  [[nodiscard]] std::size_t nic_count(const std::vector<DeviceId>& gpus) const {
    const auto it = nics_.find(topology_.device(gpus.front()).node);
    return it == nics_.end() ? 0 : it->second.size();
  }
  // Each GPU's nearest NIC of its server (index into that server's NICs; 0 without NICs).
  [[nodiscard]] std::vector<std::size_t> nearest(const std::vector<DeviceId>& gpus) const {
    std::vector<std::size_t> near(gpus.size(), 0);
    const auto it = nics_.find(topology_.device(gpus.front()).node);
    if (it == nics_.end()) return near;
    for (std::size_t g = 0; g < gpus.size(); ++g) {
      // Ties go to the GPU's rail NICs (rail_nics: behind a switch without GPU <-> NIC P2P,
      // every NIC of the socket is as many hops away, and NCCL uses the one on its switch).
      std::vector<DeviceId> rails;
      for (const RailNic& r : rail_nics(topology_, gpus[g])) rails.push_back(r.nic);
      std::pair<std::size_t, bool> best{SIZE_MAX, true};
      for (std::size_t k = 0; k < it->second.size(); ++k) {
        const bool off_rail =
            std::find(rails.begin(), rails.end(), it->second[k]) == rails.end();
        if (const std::pair key{router_.hops(gpus[g], it->second[k]), off_rail}; key < best) {
          best = key;
          near[g] = k;
        }
      }
    }
    return near;
  }

 private:
  const Topology& topology_;
  Router router_;
  std::map<int, std::vector<DeviceId>> nics_;  // per server
};

// One local path per channel: distinct rings cut open between GPUs near the channel's NIC.
std::vector<Ring> rail_paths(const std::vector<Ring>& rings, const std::vector<std::size_t>& near,
                             std::size_t nic_count, std::uint32_t channels) {
  std::vector<Ring> distinct;
  for (const Ring& r : rings)
    if (std::find(distinct.begin(), distinct.end(), r) == distinct.end()) distinct.push_back(r);
  std::vector<std::uint32_t> used(distinct.size(), 0);
  std::vector<Ring> paths;
  for (std::uint32_t c = 0; c < channels; ++c) {
    const std::size_t nic = nic_count > 0 ? c % nic_count : 0;
    std::size_t best_ring = 0, best_at = 0;
    int best_score = -1;
    for (std::size_t step = 0; step < distinct.size(); ++step) {
      const std::size_t i = (c + step) % distinct.size();
      const Ring& r = distinct[i];
      for (std::size_t at = 0; at < r.size(); ++at) {
        const std::uint32_t in = r[at], out = r[(at + r.size() - 1) % r.size()];
        // Entering by the channel's NIC, leaving by it too (NCCL's default, no cross-NIC
        // rings) or else by the next one, as the rail rings do when each NIC has one GPU.
        const int leave = near[out] == nic ? 4 : near[out] == (nic + 1) % std::max<std::size_t>(nic_count, 1) ? 3 : 0;
        const int score = 4 * (near[in] == nic) + leave -
                          static_cast<int>(std::min<std::uint32_t>(used[i], 2));
        if (score > best_score) {
          best_score = score;
          best_ring = i;
          best_at = at;
        }
      }
    }
    ++used[best_ring];
    const Ring& r = distinct[best_ring];
    Ring path;
    for (std::size_t k = 0; k < r.size(); ++k) path.push_back(r[(best_at + k) % r.size()]);
    paths.push_back(std::move(path));
  }
  return paths;
}

}  // namespace

std::vector<std::vector<std::uint32_t>> server_mesh_rings(const Topology& topology,
                                                          const std::vector<DeviceId>& ranks,
                                                          std::uint32_t ranks_per_node) {
  if (ranks.empty()) return {};
  const bool one_server = std::all_of(ranks.begin(), ranks.end(), [&](DeviceId d) {
    return topology.device(d).node == topology.device(ranks.front()).node;
  });
  if (one_server) return nvlink_mesh_rings(topology, ranks);
  if (ranks_per_node < 3 || ranks.size() % ranks_per_node != 0) return {};
  std::vector<Ring> first;
  for (std::size_t s = 0; s < ranks.size(); s += ranks_per_node) {
    const std::vector<DeviceId> server(ranks.begin() + static_cast<std::ptrdiff_t>(s),
                                       ranks.begin() + static_cast<std::ptrdiff_t>(s + ranks_per_node));
    auto rings = nvlink_mesh_rings(topology, server);
    if (rings.empty()) return {};  // also a block that spans servers (no direct mesh)
    if (s == 0) first = std::move(rings);
    else if (rings != first) return {};
  }
  return first;
}

std::vector<std::vector<std::uint32_t>> mesh_rail_paths(
    const Topology& topology, const std::vector<DeviceId>& ranks, std::uint32_t ranks_per_node,
    const std::vector<std::vector<std::uint32_t>>& rings, std::uint32_t channels) {
  if (rings.empty() || channels == 0 || ranks.size() <= ranks_per_node) return {};
  const std::vector<DeviceId> server(ranks.begin(), ranks.begin() + ranks_per_node);
  const NicLocator nics(topology);
  return rail_paths(rings, nics.nearest(server), nics.nic_count(server), channels);
}

std::vector<DeviceId> nvlink_chain_order(const Topology& topology, std::vector<DeviceId> ranks,
                                         std::uint32_t ranks_per_node) {
  const bool one_server = !ranks.empty() && std::all_of(ranks.begin(), ranks.end(), [&](DeviceId d) {
    return topology.device(d).node == topology.device(ranks.front()).node;
  });
  const std::size_t block = one_server ? ranks.size() : ranks_per_node;
  if (block < 3 || ranks.size() % block != 0) return ranks;
  for (std::size_t s = 0; s < ranks.size(); s += block) {
    const std::vector<DeviceId> server(ranks.begin() + static_cast<std::ptrdiff_t>(s),
                                       ranks.begin() + static_cast<std::ptrdiff_t>(s + block));
    const auto rings = nvlink_mesh_rings(topology, server);
    if (rings.empty()) continue;
    for (std::size_t k = 0; k < block; ++k) ranks[s + k] = server[rings.front()[k]];
  }
  return ranks;
}

std::vector<std::vector<std::vector<std::uint32_t>>> mesh_server_paths(
    const Topology& topology, const std::vector<DeviceId>& ranks,
    const std::vector<std::uint32_t>& node_sizes, std::uint32_t channels) {
  std::vector<std::vector<Ring>> out;
  std::optional<NicLocator> nics;  // built for the first server with rings
  bool any = false;
  std::size_t first = 0;
  for (std::uint32_t size : node_sizes) {
    if (first + size > ranks.size() || channels == 0) return {};
    const std::vector<DeviceId> server(ranks.begin() + static_cast<std::ptrdiff_t>(first),
                                       ranks.begin() + static_cast<std::ptrdiff_t>(first + size));
    first += size;
    const std::vector<Ring> rings = nvlink_mesh_rings(topology, server);
    if (rings.empty()) {
      Ring identity(size);
      std::iota(identity.begin(), identity.end(), 0U);
      out.push_back({identity});
      continue;
    }
    any = true;
    if (!nics) nics.emplace(topology);
    out.push_back(rail_paths(rings, nics->nearest(server), nics->nic_count(server), channels));
  }
  if (!any || first != ranks.size()) return {};
  return out;
}

}  // namespace gradsync
