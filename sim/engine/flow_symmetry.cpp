// Exact reductions of a flow-fidelity phase: mirrored components, uniform multiplicity
// (flow_symmetry.hpp).
#include "flow_symmetry.hpp"

#include <boost/pending/disjoint_sets.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>
#include <unordered_map>

namespace gradsync::detail {
namespace {

bool nearly_equal(double a, double b) {
  return std::abs(a - b) <= 1e-6 * std::max(std::abs(a), std::abs(b));
}

// A component's flows (sorted by src, dst, channel) with each pair's flows merged when every
// pair carries the same number m > 1 of flows of nearly one size; `merged` counts the folded.
std::vector<DeviceFlow> merge_uniform(std::vector<DeviceFlow> flows, std::size_t& merged) {
  std::vector<DeviceFlow> out;
  std::size_t multiplicity = 0;
  for (std::size_t i = 0; i < flows.size();) {
    std::size_t j = i + 1;
    DeviceFlow pair = flows[i];
    while (j < flows.size() && flows[j].src == pair.src && flows[j].dst == pair.dst) {
      if (!nearly_equal(flows[j].bytes, flows[i].bytes)) return flows;
      pair.bytes += flows[j].bytes;
      ++j;
    }
    if (multiplicity == 0) multiplicity = j - i;
    if (j - i != multiplicity) return flows;
    out.push_back(pair);
    i = j;
  }
  if (multiplicity <= 1) return flows;
  merged += flows.size() - out.size();
  return out;
}

// The component as a max-min system, independent of which devices and links it uses: per flow
// (in endpoint-order order) its bytes, latency, class and ports, each port as its order of first
// use, capacity and policy. Equal signatures = the same system.
std::vector<double> signature(
    std::vector<DeviceFlow> flows,
    const std::function<const FlowShape&(DeviceId, DeviceId)>& shape_of) {
  std::stable_sort(flows.begin(), flows.end(), [&](const DeviceFlow& a, const DeviceFlow& b) {
    const FlowShape& sa = shape_of(a.src, a.dst);
    const FlowShape& sb = shape_of(b.src, b.dst);
    return std::tie(sa.src_order, sa.dst_order, a.channel) <
           std::tie(sb.src_order, sb.dst_order, b.channel);
  });
  std::vector<double> out;
  std::unordered_map<std::uintptr_t, std::size_t> label;
  for (const DeviceFlow& f : flows) {
    const FlowShape& s = shape_of(f.src, f.dst);
    out.insert(out.end(), {f.bytes, s.latency_s, static_cast<double>(s.route_class),
                           static_cast<double>(s.ports.size())});
    for (const FlowShape::Port& p : s.ports) {
      const std::size_t id = label.try_emplace(p.id, label.size()).first->second;
      out.insert(out.end(), {static_cast<double>(id), p.capacity, static_cast<double>(p.policy)});
    }
  }
  return out;
}

struct SignatureHash {
  std::size_t operator()(const std::vector<double>& v) const noexcept {
    std::uint64_t h = 0x9e3779b97f4a7c15ULL ^ v.size();
    for (double d : v) {
      std::uint64_t bits = 0;
      std::memcpy(&bits, &d, sizeof bits);
      h = (h ^ bits) * 0x100000001b3ULL;
      h ^= h >> 29;
    }
    return static_cast<std::size_t>(h);
  }
};

}  // namespace

ReducedPhase reduce_phase(const std::vector<DeviceFlow>& flows,
                          const std::function<const FlowShape&(DeviceId, DeviceId)>& shape_of) {
  ReducedPhase out;
  std::vector<std::size_t> rank(flows.size()), parent(flows.size());
  boost::disjoint_sets<std::size_t*, std::size_t*> sets(rank.data(), parent.data());
  for (std::size_t i = 0; i < flows.size(); ++i) sets.make_set(i);
  std::unordered_map<std::uintptr_t, std::size_t> first_user;
  for (std::size_t i = 0; i < flows.size(); ++i)
    for (const FlowShape::Port& p : shape_of(flows[i].src, flows[i].dst).ports) {
      const auto [it, fresh] = first_user.try_emplace(p.id, i);
      if (!fresh) sets.union_set(i, it->second);
    }
  // Components in order of their first flow; each keeps the input order (src, dst, channel).
  std::vector<std::vector<DeviceFlow>> components;
  std::unordered_map<std::size_t, std::size_t> component_of_root;
  for (std::size_t i = 0; i < flows.size(); ++i) {
    const auto [it, fresh] = component_of_root.try_emplace(sets.find_set(i), components.size());
    if (fresh) components.emplace_back();
    components[it->second].push_back(flows[i]);
  }
  std::unordered_map<std::vector<double>, bool, SignatureHash> seen;
  for (std::vector<DeviceFlow>& component : components) {
    std::vector<DeviceFlow> reduced = merge_uniform(std::move(component), out.merged);
    const bool plain = std::all_of(reduced.begin(), reduced.end(), [&](const DeviceFlow& f) {
      return shape_of(f.src, f.dst).plain;
    });
    std::vector<DeviceFlow>& into =
        plain && !seen.emplace(signature(reduced, shape_of), true).second ? out.mirrored
                                                                          : out.simulate;
    into.insert(into.end(), reduced.begin(), reduced.end());
  }
  return out;
}

}  // namespace gradsync::detail
