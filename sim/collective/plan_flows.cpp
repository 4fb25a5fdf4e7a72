// Flows-only plans (collective.hpp): what flow fidelity replays, per phase the bytes of each
// connection, summed from a full plan's transfers or built directly by the planners.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "gradsync/collective/collective.hpp"

namespace gradsync {
namespace {

// Bytes per (destination rank, channel) of one source rank, sorted by key: a phase has
// millions of transfers but few connections per rank, so a binary search in a short list.
struct ConnectionBytes {
  std::uint64_t key;  // destination << 8 | channel
  double bytes;
};

std::uint64_t connection_key(std::uint32_t dst, std::uint8_t channel) {
  return (static_cast<std::uint64_t>(dst) << 8) | channel;
}

}  // namespace

std::vector<FlowPhase> flow_phases_of(const Plan& plan) {
  if (plan.flows_only) return plan.flow_phases;
  std::vector<Plan::Phase> phases = plan.phases;
  if (phases.empty())
    phases.push_back(Plan::Phase{static_cast<TransferId>(plan.transfers.size()), plan.steps,
                                 Bytes(0.0)});
  std::vector<FlowPhase> out;
  out.reserve(phases.size());
  std::vector<std::vector<ConnectionBytes>> per_source(plan.ranks);
  TransferId begin = 0;
  for (const Plan::Phase& phase : phases) {
    for (auto& v : per_source) v.clear();
    for (TransferId id = begin; id < phase.end; ++id) {
      const Transfer& t = plan.transfers[id];
      const std::uint64_t key = connection_key(t.dst, t.channel);
      auto& v = per_source[t.src];
      auto it = std::lower_bound(v.begin(), v.end(), key,
                                 [](const ConnectionBytes& f, std::uint64_t k) { return f.key < k; });
      if (it == v.end() || it->key != key) it = v.insert(it, ConnectionBytes{key, 0.0});
      it->bytes += plan.bytes_of(t).bytes();
    }
    FlowPhase fp{phase.steps, phase.fill, {}};
    for (std::uint32_t src = 0; src < plan.ranks; ++src)
      for (const ConnectionBytes& c : per_source[src])
        fp.flows.push_back(PlanFlow{src, static_cast<std::uint32_t>(c.key >> 8),
                                    static_cast<std::uint8_t>(c.key & 0xff), Bytes(c.bytes)});
    out.push_back(std::move(fp));
    begin = phase.end;
  }
  return out;
}

std::uint64_t plan_transfer_count(const Plan& plan) {
  return plan.flows_only ? plan.transfer_count : plan.transfers.size();
}

namespace {

std::uint64_t distinct_connections(const std::vector<FlowPhase>& phases) {
  if (phases.size() == 1) return phases.front().flows.size();  // one entry per connection
  std::vector<std::uint64_t> keys;
  for (const FlowPhase& p : phases)
    for (const PlanFlow& f : p.flows)
      keys.push_back((static_cast<std::uint64_t>(f.src) << 40) |
                     (static_cast<std::uint64_t>(f.dst) << 8) | f.channel);
  std::sort(keys.begin(), keys.end());
  return static_cast<std::uint64_t>(std::unique(keys.begin(), keys.end()) - keys.begin());
}

}  // namespace

std::uint64_t plan_connection_count(const Plan& plan) {
  if (plan.flows_only) return plan.connection_count;
  return distinct_connections(flow_phases_of(plan));
}

void make_flows_only(Plan& plan, std::uint64_t full_transfers) {
  if (plan.flows_only) return;
  plan.flow_phases = flow_phases_of(plan);
  plan.transfer_count = full_transfers > 0 ? full_transfers : plan.transfers.size();
  plan.connection_count = distinct_connections(plan.flow_phases);
  plan.flows_only = true;
  plan.phases.clear();
  std::vector<Transfer>().swap(plan.transfers);
  std::vector<std::vector<TransferId>>().swap(plan.extra_deps);
}

Plan replicate_plan(const Plan& plan, std::uint32_t copies) {
  if (copies == 0) throw std::invalid_argument("replicate_plan: at least one copy");
  Plan out;
  out.op = plan.op;
  out.algorithm = plan.algorithm;
  out.ranks = plan.ranks * copies;
  out.contributors = plan.contributors;
  out.root = plan.root;
  out.total_bytes = plan.total_bytes;
  out.chunk_bytes = plan.chunk_bytes;
  out.chunk_owner = plan.chunk_owner;
  out.steps = plan.steps;
  out.channels = plan.channels;
  out.copies = plan.copies * copies;
  const std::vector<FlowPhase> phases = flow_phases_of(plan);
  for (const FlowPhase& phase : phases) {
    FlowPhase rep{phase.steps, phase.fill, {}};
    rep.flows.reserve(phase.flows.size() * copies);
    for (std::uint32_t c = 0; c < copies; ++c)
      for (const PlanFlow& f : phase.flows)
        rep.flows.push_back({f.src + c * plan.ranks, f.dst + c * plan.ranks, f.channel, f.bytes});
    out.flow_phases.push_back(std::move(rep));
  }
  out.transfer_count = plan_transfer_count(plan) * copies;
  out.connection_count = plan_connection_count(plan) * copies;
  out.flows_only = true;
  return out;
}

}  // namespace gradsync
