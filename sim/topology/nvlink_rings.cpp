// Rings over a direct NVLink mesh (nvlink_rings.hpp): the directed Hamiltonian cycles along
// NVLink pairs, then the largest multiset of them the pairs' capacities hold. Both searches
// are depth-first with a step budget, as NCCL's own graph search is time-bounded
// (src/graph/search.cc, NCCL_SEARCH_GLOBAL_TIMEOUT).
#include "gradsync/topology/nvlink_rings.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <stdexcept>

namespace gradsync {

namespace {

using Matrix = std::vector<std::vector<std::uint32_t>>;
using Ring = std::vector<std::uint32_t>;

constexpr std::size_t kStepBudget = 200'000;  // DFS steps per exhaustive search
constexpr std::size_t kMaxCycles = 1024;      // cycles an exact packing considers
constexpr std::size_t kRingBudget = 20'000;   // DFS steps per greedy ring

// Every directed Hamiltonian cycle starting at rank 0, widest pairs first; `complete` says
// whether the search saw them all (within the step budget and kMaxCycles).
std::vector<Ring> hamiltonian_cycles(const Matrix& cap, bool& complete) {
  const auto n = static_cast<std::uint32_t>(cap.size());
  std::vector<Ring> cycles;
  Ring path{0};
  std::vector<bool> used(n, false);
  used[0] = true;
  std::size_t steps = 0;
  // Each rank's successors, widest pair first (ties: lower rank).
  std::vector<std::vector<std::uint32_t>> next(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    for (std::uint32_t j = 0; j < n; ++j)
      if (j != i && cap[i][j] > 0) next[i].push_back(j);
    std::stable_sort(next[i].begin(), next[i].end(),
                     [&](std::uint32_t a, std::uint32_t b) { return cap[i][a] > cap[i][b]; });
  }
  std::function<void()> extend;
  extend = [&] {
    if (++steps > kStepBudget || cycles.size() >= kMaxCycles) return;
    const std::uint32_t last = path.back();
    if (path.size() == n) {
      if (cap[last][0] > 0) cycles.push_back(path);
      return;
    }
    for (std::uint32_t j : next[last]) {
      if (used[j]) continue;
      used[j] = true;
      path.push_back(j);
      extend();
      path.pop_back();
      used[j] = false;
      if (steps > kStepBudget || cycles.size() >= kMaxCycles) return;
    }
  };
  extend();
  complete = steps <= kStepBudget && cycles.size() < kMaxCycles;
  // Cycles whose narrowest pair is widest first: they leave the single links to the rest.
  auto narrowest = [&](const Ring& r) {
    std::uint32_t m = cap[r.back()][r.front()];
    for (std::size_t k = 0; k + 1 < r.size(); ++k) m = std::min(m, cap[r[k]][r[k + 1]]);
    return m;
  };
  std::stable_sort(cycles.begin(), cycles.end(),
                   [&](const Ring& a, const Ring& b) { return narrowest(a) > narrowest(b); });
  return cycles;
}

// The largest multiset of `cycles` that fits `cap` (each cycle uses one unit per pair).
class Packer {
 public:
  Packer(const std::vector<Ring>& cycles, Matrix cap, std::size_t max_rings)
      : cycles_(cycles), cap_(std::move(cap)), max_rings_(max_rings) {}

  std::vector<Ring> run() {
    search(0);
    std::vector<Ring> rings;
    for (std::size_t k : best_) rings.push_back(cycles_[k]);
    return rings;
  }

 private:
  bool fits(const Ring& r) const {
    for (std::size_t k = 0; k < r.size(); ++k)
      if (cap_[r[k]][r[(k + 1) % r.size()]] == 0) return false;
    return true;
  }
  void take(const Ring& r, int sign) {
    for (std::size_t k = 0; k < r.size(); ++k)
      cap_[r[k]][r[(k + 1) % r.size()]] = static_cast<std::uint32_t>(
          static_cast<int>(cap_[r[k]][r[(k + 1) % r.size()]]) - sign);
  }
  // Every ring leaves each rank once: no rank's remaining out-capacity can be exceeded.
  std::size_t bound() const {
    std::uint64_t m = UINT64_MAX;
    for (const auto& row : cap_)
      m = std::min<std::uint64_t>(m, std::accumulate(row.begin(), row.end(), std::uint64_t{0}));
    return current_.size() + static_cast<std::size_t>(std::min<std::uint64_t>(m, max_rings_));
  }
  void search(std::size_t from) {
    if (++steps_ > kStepBudget) return;
    if (current_.size() > best_.size()) best_ = current_;
    if (best_.size() >= max_rings_ || bound() <= best_.size()) return;
    for (std::size_t k = from; k < cycles_.size(); ++k) {
      if (!fits(cycles_[k])) continue;
      take(cycles_[k], +1);
      current_.push_back(k);
      search(k);  // the same cycle may be taken again
      current_.pop_back();
      take(cycles_[k], -1);
      if (steps_ > kStepBudget || best_.size() >= max_rings_) return;
    }
  }

  const std::vector<Ring>& cycles_;
  Matrix cap_;
  std::size_t max_rings_;
  std::vector<std::size_t> current_, best_;
  std::size_t steps_ = 0;
};

// Larger meshes (too many cycles to pack exactly): one ring at a time, each the first cycle
// a depth-first search finds going to the successor with the most capacity left, until none
// is left; pack_rings() keeps the best of a few tie-break schedules (`shift`).
std::vector<Ring> greedy_rings(Matrix cap, std::size_t max_rings, std::uint32_t shift) {
  const auto n = static_cast<std::uint32_t>(cap.size());
  std::vector<Ring> rings;
  while (rings.size() < max_rings) {
    const auto stride = static_cast<std::uint32_t>(1 + (rings.size() + shift) % (n - 1));
    Ring path{0};
    std::vector<bool> used(n, false);
    used[0] = true;
    std::size_t steps = 0;
    std::function<bool()> extend;
    extend = [&]() -> bool {
      if (++steps > kRingBudget) return false;
      const std::uint32_t last = path.back();
      if (path.size() == n) return cap[last][0] > 0;
      std::vector<std::uint32_t> next;
      for (std::uint32_t j = 0; j < n; ++j)
        if (!used[j] && cap[last][j] > 0) next.push_back(j);
      // Ties: the successor at this ring's stride first (ring r prefers rank + 1 + r mod
      // (n-1)), so rings spread over the pairs as a circulant decomposition does.
      const auto offset = [&](std::uint32_t j) { return (j + 2 * n - last - stride) % n; };
      std::stable_sort(next.begin(), next.end(), [&](std::uint32_t a, std::uint32_t b) {
        return cap[last][a] != cap[last][b] ? cap[last][a] > cap[last][b] : offset(a) < offset(b);
      });
      for (std::uint32_t j : next) {
        used[j] = true;
        path.push_back(j);
        if (extend()) return true;
        path.pop_back();
        used[j] = false;
        if (steps > kRingBudget) return false;
      }
      return false;
    };
    if (!extend()) break;
    for (std::size_t k = 0; k < path.size(); ++k) --cap[path[k]][path[(k + 1) % path.size()]];
    rings.push_back(std::move(path));
  }
  return rings;
}

}  // namespace

std::vector<std::vector<std::uint32_t>> pack_rings(
    const std::vector<std::vector<std::uint32_t>>& capacity, std::size_t max_rings) {
  const std::size_t n = capacity.size();
  for (const auto& row : capacity)
    if (row.size() != n) throw std::invalid_argument("pack_rings: capacity must be square");
  if (n < 2 || max_rings == 0) return {};
  bool complete = false;
  const std::vector<Ring> cycles = hamiltonian_cycles(capacity, complete);
  if (complete) return Packer(cycles, capacity, max_rings).run();
  std::vector<Ring> best;
  for (std::uint32_t shift = 0; shift < std::min<std::size_t>(n - 1, 4); ++shift) {
    std::vector<Ring> rings = greedy_rings(capacity, max_rings, shift);
    if (rings.size() > best.size()) best = std::move(rings);
  }
  return best;
}

std::vector<std::vector<double>> direct_nvlink_matrix(
    const Topology& topology, const std::vector<DeviceId>& ranks,
    const std::function<double(const Link&)>& weight) {
  const std::size_t n = ranks.size();
  std::vector<std::vector<double>> m(n, std::vector<double>(n, 0.0));
  std::vector<std::size_t> rank_of(topology.devices().size(), n);
  for (std::size_t r = 0; r < n; ++r) rank_of[ranks[r]] = r;
  for (std::size_t r = 0; r < n; ++r)
    for (LinkId id : topology.links_of(ranks[r])) {
      const Link& l = topology.link(id);
      if (l.fabric != Fabric::NvLink) continue;
      const std::size_t peer = rank_of[l.other(ranks[r])];
      if (peer < n && peer != r) m[r][peer] += weight(l);
    }
  return m;
}

bool direct_nvlink_mesh(const Topology& topology, const std::vector<DeviceId>& ranks) {
  if (ranks.size() < 2) return false;
  for (DeviceId g : ranks)
    if (topology.device(g).node != topology.device(ranks.front()).node) return false;
  for (DeviceId g : ranks)
    for (LinkId id : topology.links_of(g)) {
      const Link& l = topology.link(id);
      if (l.fabric == Fabric::NvLink && topology.device(l.other(g)).kind == DeviceKind::NvSwitch)
        return false;
    }
  const auto m = direct_nvlink_matrix(topology, ranks, [](const Link&) { return 1.0; });
  for (const auto& row : m)
    for (double v : row)
      if (v > 0.0) return true;
  return false;
}

namespace {

// Each directed pair's capacity in half units of the narrowest NVLinked pair.
Matrix half_units(const Topology& topology, const std::vector<DeviceId>& ranks) {
  const auto bw = direct_nvlink_matrix(
      topology, ranks, [](const Link& l) { return l.bandwidth.bytes_per_second(); });
  double unit = 0.0;
  for (const auto& row : bw)
    for (double b : row)
      if (b > 0.0) unit = unit > 0.0 ? std::min(unit, b) : b;
  Matrix cap(bw.size(), std::vector<std::uint32_t>(bw.size(), 0));
  for (std::size_t i = 0; i < bw.size(); ++i)
    for (std::size_t j = 0; j < bw.size(); ++j)
      cap[i][j] = unit > 0.0 ? static_cast<std::uint32_t>(std::floor(2.0 * bw[i][j] / unit + 1e-9)) : 0;
  return cap;
}

}  // namespace

std::vector<std::vector<std::uint32_t>> nvlink_mesh_rings(const Topology& topology,
                                                          const std::vector<DeviceId>& ranks) {
  if (ranks.size() < 3 || !direct_nvlink_mesh(topology, ranks)) return {};
  return pack_rings(half_units(topology, ranks), 64);
}

double nvlink_ring_share(const Topology& topology, const std::vector<DeviceId>& gpus) {
  const std::vector<Ring> rings = nvlink_mesh_rings(topology, gpus);
  if (rings.empty()) return 0.0;
  const Matrix cap = half_units(topology, gpus);
  double total = 0.0;
  for (const auto& row : cap)
    for (std::uint32_t c : row) total += c;
  const double used = static_cast<double>(rings.size() * gpus.size());  // one unit per hop
  return total > 0.0 ? std::min(1.0, used / total) : 0.0;
}

}  // namespace gradsync
