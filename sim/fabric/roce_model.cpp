// Fluid fixed points for the RoCE corrections (fabric_model.hpp): max-min by progressive
// filling, PFC's per-ingress-port sharing with head-of-line victims, and lossy go-back-N.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "gradsync/fabric_model.hpp"

namespace gradsync {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kSaturated = 1e-9;  // relative slack under which a port counts as full
}  // namespace

std::vector<double> max_min_rates(const std::vector<FluidFlow>& flows,
                                  const std::vector<double>& capacity) {
  const std::size_t n = flows.size();
  std::vector<double> rate(n, 0.0);
  std::vector<bool> frozen(n, false);
  std::vector<double> left = capacity;
  std::vector<double> weight(capacity.size(), 0.0);
  for (std::size_t round = 0; round <= n; ++round) {
    std::fill(weight.begin(), weight.end(), 0.0);
    bool any = false;
    double delta = kInf;
    for (std::size_t f = 0; f < n; ++f) {
      if (frozen[f]) continue;
      any = true;
      for (const auto& [p, c] : flows[f].ports) weight[p] += c;
      if (flows[f].cap > 0.0) delta = std::min(delta, flows[f].cap - rate[f]);
    }
    if (!any) break;
    for (std::size_t p = 0; p < weight.size(); ++p)
      if (weight[p] > 0.0) delta = std::min(delta, std::max(left[p], 0.0) / weight[p]);
    if (!std::isfinite(delta)) {  // unconstrained flows
      for (std::size_t f = 0; f < n; ++f)
        if (!frozen[f]) rate[f] = kInf;
      break;
    }
    for (std::size_t f = 0; f < n; ++f)
      if (!frozen[f]) rate[f] += delta;
    for (std::size_t p = 0; p < weight.size(); ++p) left[p] -= delta * weight[p];
    for (std::size_t f = 0; f < n; ++f) {
      if (frozen[f]) continue;
      bool stop = flows[f].cap > 0.0 && rate[f] >= flows[f].cap * (1.0 - kSaturated);
      for (const auto& [p, c] : flows[f].ports)
        if (left[p] <= capacity[p] * kSaturated) stop = true;
      if (stop) frozen[f] = true;
    }
  }
  return rate;
}

std::vector<double> pfc_rates(const std::vector<FluidFlow>& flows,
                              const std::vector<double>& capacity,
                              const std::vector<bool>& switch_egress) {
  const std::vector<double> fair = max_min_rates(flows, capacity);
  std::vector<double> load(capacity.size(), 0.0);
  for (std::size_t f = 0; f < flows.size(); ++f)
    for (const auto& [p, c] : flows[f].ports) load[p] += c * fair[f];

  std::vector<FluidFlow> capped = flows;
  // Congested switch egress ports, in port order (deterministic).
  for (std::size_t e = 0; e < capacity.size(); ++e) {
    if (!switch_egress[e] || load[e] < capacity[e] * (1.0 - 1e-6)) continue;
    // Flows through e, grouped by the port they entered the switch from (their previous port;
    // a flow starting at the switch forms its own group).
    std::map<std::size_t, std::vector<std::size_t>> by_ingress;
    std::vector<std::pair<std::size_t, std::size_t>> position;  // (flow, index of e in its path)
    for (std::size_t f = 0; f < flows.size(); ++f) {
      const auto& ports = flows[f].ports;
      for (std::size_t i = 0; i < ports.size(); ++i)
        if (ports[i].first == e) {
          const std::size_t key = i == 0 ? capacity.size() + f : ports[i - 1].first;
          by_ingress[key].push_back(f);
          position.emplace_back(f, i);
          break;
        }
    }
    // Round robin over ingress ports, then equal per flow within a port.
    const double per_port = capacity[e] / static_cast<double>(by_ingress.size());
    std::map<std::size_t, double> congested_rate;  // flow -> its PFC rate at e
    for (const auto& [ingress, members] : by_ingress)
      for (std::size_t f : members) {
        double coef = 1.0;
        for (const auto& [p, c] : flows[f].ports)
          if (p == e) coef = c;
        const double r = per_port / static_cast<double>(members.size()) / coef;
        congested_rate[f] = r;
        capped[f].cap = capped[f].cap > 0.0 ? std::min(capped[f].cap, r) : r;
      }
    // Head-of-line victims: every port upstream of e on a congested flow's path is paused
    // while that flow waits; another flow on such a port moves at most at the congested flow's
    // rate (their packets interleave in one queue).
    std::map<std::size_t, double> paused;  // port -> the fastest congested flow held there
    for (const auto& [f, i] : position)
      for (std::size_t k = 0; k < i; ++k) {
        const std::size_t p = flows[f].ports[k].first;
        paused[p] = std::max(paused[p], congested_rate[f]);
      }
    for (std::size_t v = 0; v < flows.size(); ++v) {
      if (congested_rate.count(v) != 0) continue;
      for (const auto& [p, c] : flows[v].ports) {
        const auto it = paused.find(p);
        if (it == paused.end()) continue;
        capped[v].cap = capped[v].cap > 0.0 ? std::min(capped[v].cap, it->second) : it->second;
      }
    }
  }
  return max_min_rates(capped, capacity);
}

double lossy_goodput_fraction(int flows, Bytes bdp, Bytes buffer, bool ecn) {
  if (ecn || flows <= 1 || !(bdp.bytes() > 0.0)) return 1.0;
  return std::min(1.0, (bdp.bytes() + buffer.bytes()) / (flows * bdp.bytes()));
}

bool lossy_burst_overflows(Bytes burst, Bytes bdp, Bytes buffer) {
  return burst.bytes() > bdp.bytes() + buffer.bytes();
}

}  // namespace gradsync
