// Fluid fixed points for the RoCE corrections (fabric_model.hpp): max-min by progressive
// filling, PFC's per-ingress-port sharing with head-of-line victims, and lossy go-back-N.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "gradsync/fabric/fabric_model.hpp"

namespace gradsync {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kSaturated = 1e-9;  // relative slack under which a port counts as full

// The flows through each port, in flow order: visits[start[p] .. start[p + 1]) are the
// (flow, index of p in the flow's path) of port p. Routes are simple paths, so a flow visits a
// port at most once. O(flow-ports + ports); every fixed point below walks it instead of
// scanning all flows per port.
struct PortIndex {
  struct Visit {
    std::size_t flow;
    std::size_t index;
  };
  std::vector<std::size_t> start;
  std::vector<Visit> visits;

  PortIndex(std::span<const FluidFlow> flows, std::size_t ports) : start(ports + 1, 0) {
    for (const FluidFlow& f : flows)
      for (const auto& [p, c] : f.ports) ++start[p + 1];
    for (std::size_t p = 0; p < ports; ++p) start[p + 1] += start[p];
    visits.resize(start[ports]);
    std::vector<std::size_t> fill(start.begin(), start.end() - 1);
    for (std::size_t f = 0; f < flows.size(); ++f)
      for (std::size_t i = 0; i < flows[f].ports.size(); ++i)
        visits[fill[flows[f].ports[i].first]++] = Visit{f, i};
  }
  [[nodiscard]] std::span<const Visit> at(std::size_t port) const {
    return {visits.data() + start[port], start[port + 1] - start[port]};
  }
};
}  // namespace

namespace {
// max_min_rates() with each flow's cap taken from `caps` (same indexing; <= 0: none).
std::vector<double> max_min_with_caps(std::span<const FluidFlow> flows,
                                      const std::vector<double>& capacity,
                                      const std::vector<double>& caps) {
  // Progressive filling: every unfrozen flow's rate is the common `level`; each round raises it
  // to the next port (or cap) that fills, and freezes the flows there. A port -> flows index
  // keeps a round at O(ports in use + flows frozen), not O(all flows + all ports).
  const std::size_t n = flows.size();
  const std::size_t ports = capacity.size();
  std::vector<double> rate(n, 0.0);
  std::vector<bool> frozen(n, false);
  const PortIndex index(flows, ports);
  std::vector<std::size_t> used;  // ports some unfrozen flow crosses
  for (std::size_t p = 0; p < ports; ++p)
    if (!index.at(p).empty()) used.push_back(p);
  std::vector<double> left = capacity;
  std::vector<double> weight(ports, 0.0);  // shares of the unfrozen flows, summed in flow order
  const auto reweigh = [&](std::size_t p) {
    double w = 0.0;
    for (const auto& [f, i] : index.at(p))
      if (!frozen[f]) w += flows[f].ports[i].second;
    weight[p] = w;
  };
  for (std::size_t p : used) reweigh(p);
  // Flows with a cap, lowest first: the next cap to bind is the first unfrozen one.
  std::vector<std::size_t> capped;
  for (std::size_t f = 0; f < n; ++f)
    if (caps[f] > 0.0) capped.push_back(f);
  std::stable_sort(capped.begin(), capped.end(),
                   [&](std::size_t a, std::size_t b) { return caps[a] < caps[b]; });
  std::size_t next_cap = 0;
  std::size_t unfrozen = n;
  double level = 0.0;
  std::vector<std::size_t> freezing, touched;
  std::vector<bool> mark(ports, false);
  for (std::size_t round = 0; unfrozen > 0 && round <= n; ++round) {
    double delta = kInf;
    while (next_cap < capped.size() && frozen[capped[next_cap]]) ++next_cap;
    if (next_cap < capped.size()) delta = caps[capped[next_cap]] - level;
    for (std::size_t p : used)
      if (weight[p] > 0.0) delta = std::min(delta, std::max(left[p], 0.0) / weight[p]);
    if (!std::isfinite(delta)) {  // unconstrained flows
      for (std::size_t f = 0; f < n; ++f)
        if (!frozen[f]) rate[f] = kInf;
      break;
    }
    level += delta;
    for (std::size_t p : used) left[p] -= delta * weight[p];
    // Freeze the flows at their cap and those crossing a port that filled.
    for (std::size_t k = next_cap;
         k < capped.size() && level >= caps[capped[k]] * (1.0 - kSaturated); ++k)
      if (!frozen[capped[k]]) freezing.push_back(capped[k]);
    for (std::size_t p : used)
      if (weight[p] > 0.0 && left[p] <= capacity[p] * kSaturated)
        for (const auto& [f, i] : index.at(p))
          if (!frozen[f]) freezing.push_back(f);
    for (std::size_t f : freezing) {
      if (frozen[f]) continue;
      frozen[f] = true;
      rate[f] = level;
      --unfrozen;
      for (const auto& [p, c] : flows[f].ports)
        if (!mark[p]) {
          mark[p] = true;
          touched.push_back(p);
        }
    }
    for (std::size_t p : touched) {
      reweigh(p);
      mark[p] = false;
    }
    // Ports left with no unfrozen flow take no part in later rounds.
    std::erase_if(used, [&](std::size_t p) { return !(weight[p] > 0.0); });
    freezing.clear();
    touched.clear();
  }
  return rate;
}
}  // namespace

std::vector<double> max_min_rates(std::span<const FluidFlow> flows,
                                  const std::vector<double>& capacity) {
  std::vector<double> caps(flows.size());
  for (std::size_t f = 0; f < flows.size(); ++f) caps[f] = flows[f].cap;
  return max_min_with_caps(flows, capacity, caps);
}

std::vector<double> pfc_rates(std::span<const FluidFlow> flows,
                              const std::vector<double>& capacity,
                              const std::vector<bool>& switch_egress) {
  return pfc_rates(flows, capacity, switch_egress, max_min_rates(flows, capacity));
}

std::vector<double> pfc_rates(std::span<const FluidFlow> flows,
                              const std::vector<double>& capacity,
                              const std::vector<bool>& switch_egress,
                              const std::vector<double>& fair) {
  const std::size_t n = flows.size();
  const std::size_t ports = capacity.size();
  std::vector<double> load(ports, 0.0);
  for (std::size_t f = 0; f < n; ++f)
    for (const auto& [p, c] : flows[f].ports) load[p] += c * fair[f];

  const PortIndex index(flows, ports);  // each congested port costs its own flows only

  std::vector<double> caps(n);
  for (std::size_t f = 0; f < n; ++f) caps[f] = flows[f].cap;
  const auto cap_at = [&](std::size_t f, double r) {
    caps[f] = caps[f] > 0.0 ? std::min(caps[f], r) : r;
  };
  bool congested = false;
  std::vector<double> congested_rate(n, -1.0);  // at the port being handled; < 0: not congested
  std::vector<double> paused(ports, -1.0);      // port -> the fastest congested flow held there
  std::vector<std::size_t> paused_ports;
  // Congested switch egress ports, in port order (deterministic).
  for (std::size_t e = 0; e < ports; ++e) {
    if (!switch_egress[e] || load[e] < capacity[e] * (1.0 - 1e-6)) continue;
    congested = true;
    // Flows through e, grouped by the port they entered the switch from (their previous port;
    // a flow starting at the switch forms its own group).
    std::map<std::size_t, std::vector<PortIndex::Visit>> by_ingress;
    for (const PortIndex::Visit& v : index.at(e))
      by_ingress[v.index == 0 ? ports + v.flow : flows[v.flow].ports[v.index - 1].first].push_back(v);
    // Round robin over ingress ports, then equal per flow within a port.
    const double per_port = capacity[e] / static_cast<double>(by_ingress.size());
    for (const auto& [ingress, members] : by_ingress)
      for (const auto& [f, i] : members) {
        const double r = per_port / static_cast<double>(members.size()) / flows[f].ports[i].second;
        congested_rate[f] = r;
        cap_at(f, r);
      }
    // Head-of-line victims: every port upstream of e on a congested flow's path is paused
    // while that flow waits; another flow on such a port moves at most at the congested flow's
    // rate (their packets interleave in one queue).
    for (const auto& [f, i] : index.at(e)) {
      for (std::size_t k = 0; k < i; ++k) {
        const std::size_t p = flows[f].ports[k].first;
        if (paused[p] < 0.0) paused_ports.push_back(p);
        paused[p] = std::max(paused[p], congested_rate[f]);
      }
    }
    for (std::size_t p : paused_ports) {
      for (const auto& [f, i] : index.at(p))
        if (congested_rate[f] < 0.0) cap_at(f, paused[p]);
      paused[p] = -1.0;
    }
    paused_ports.clear();
    for (const auto& [f, i] : index.at(e)) congested_rate[f] = -1.0;
  }
  if (!congested) return fair;  // no pause: the caps are the flows' own
  return max_min_with_caps(flows, capacity, caps);
}

std::vector<std::size_t> connected_flows(std::span<const FluidFlow> flows, std::size_t ports,
                                         std::span<const std::size_t> seed_flows,
                                         std::span<const std::size_t> seed_ports) {
  const PortIndex index(flows, ports);
  std::vector<bool> in_component(flows.size(), false), port_seen(ports, false);
  std::vector<std::size_t> queue;
  const auto visit_port = [&](std::size_t p) {
    if (port_seen[p]) return;
    port_seen[p] = true;
    for (const auto& [f, i] : index.at(p))
      if (!in_component[f]) {
        in_component[f] = true;
        queue.push_back(f);
      }
  };
  for (std::size_t f : seed_flows)
    if (!in_component[f]) {
      in_component[f] = true;
      queue.push_back(f);
    }
  for (std::size_t p : seed_ports) visit_port(p);
  for (std::size_t q = 0; q < queue.size(); ++q)
    for (const auto& [p, c] : flows[queue[q]].ports) visit_port(p);
  std::sort(queue.begin(), queue.end());
  return queue;
}

NewFlowRates pfc_rates_on(std::span<const FluidFlow> flows, const std::vector<double>& capacity,
                          const std::vector<bool>& switch_egress,
                          std::span<const std::size_t> members) {
  NewFlowRates out;
  if (members.size() == flows.size()) {
    out.fair = max_min_rates(flows, capacity);
    out.pfc = pfc_rates(flows, capacity, switch_egress, out.fair);
    return out;
  }
  std::vector<FluidFlow> component;
  component.reserve(members.size());
  for (std::size_t f : members) component.push_back(flows[f]);
  out.fair = max_min_rates(component, capacity);
  out.pfc = pfc_rates(component, capacity, switch_egress, out.fair);
  return out;
}

NewFlowRates pfc_rates_of_new(std::span<const FluidFlow> flows,
                              const std::vector<double>& capacity,
                              const std::vector<bool>& switch_egress, std::size_t first_new) {
  // Flows interact only through shared ports, so the fixed point of the new flows is that of
  // their connected component, in flow order (the new flows come last).
  std::vector<std::size_t> seeds;
  for (std::size_t f = first_new; f < flows.size(); ++f) seeds.push_back(f);
  const std::vector<std::size_t> members = connected_flows(flows, capacity.size(), seeds, {});
  NewFlowRates out = pfc_rates_on(flows, capacity, switch_egress, members);
  const auto old = static_cast<std::ptrdiff_t>(members.size() - seeds.size());
  out.fair.erase(out.fair.begin(), out.fair.begin() + old);
  out.pfc.erase(out.pfc.begin(), out.pfc.begin() + old);
  return out;
}

double lossy_goodput_fraction(int flows, Bytes bdp, Bytes buffer, bool ecn) {
  if (ecn || flows <= 1 || !(bdp.bytes() > 0.0)) return 1.0;
  return std::min(1.0, (bdp.bytes() + buffer.bytes()) / (flows * bdp.bytes()));
}

bool lossy_burst_overflows(Bytes burst, Bytes bdp, Bytes buffer) {
  return burst.bytes() > bdp.bytes() + buffer.bytes();
}

}  // namespace gradsync
