// Plan bookkeeping shared by every planner: appending transfers with their dependencies,
// per-rank byte counts, names of the enums, and the byte split all planners use.
#include <array>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "gradsync/collective/collective.hpp"
#include "gradsync/units/name_table.hpp"

namespace gradsync {

namespace {

// Every collective's spelling, in CollectiveOp's order.
constexpr std::array<std::pair<CollectiveOp, std::string_view>, 5> kCollectiveOps{{
    {CollectiveOp::AllReduce, "allreduce"},
    {CollectiveOp::ReduceScatter, "reducescatter"},
    {CollectiveOp::AllGather, "allgather"},
    {CollectiveOp::Broadcast, "broadcast"},
    {CollectiveOp::Reduce, "reduce"},
}};

constexpr std::array<std::pair<ServerPlacement, std::string_view>, 2> kServerPlacements{{
    {ServerPlacement::Dedicated, "dedicated"},
    {ServerPlacement::Colocated, "colocated"},
}};

// The registry, in Algorithm's order.
constexpr std::array<AlgorithmInfo, 8> kAlgorithms{{
    {Algorithm::Ring, "ring", true, false, AutoUse::Always},
    {Algorithm::Tree, "tree", true, true, AutoUse::Always},
    {Algorithm::Hierarchical, "hierarchical", false, true, AutoUse::WithoutNccl},
    {Algorithm::ParameterServer, "ps", false, true, AutoUse::Never},
    {Algorithm::Nvls, "nvls", true, true, AutoUse::InSwitch},
    {Algorithm::NvlsTree, "nvlstree", true, true, AutoUse::InSwitch},
    {Algorithm::CollNetChain, "collnetchain", true, true, AutoUse::InSwitch},
    {Algorithm::CollNetDirect, "collnetdirect", true, true, AutoUse::InSwitch},
}};
static_assert([] {
  for (std::size_t i = 0; i < kAlgorithms.size(); ++i)
    if (static_cast<std::size_t>(kAlgorithms[i].algorithm) != i) return false;
  return true;
}(), "kAlgorithms is in Algorithm's order");

}  // namespace

std::string_view to_string(CollectiveOp op) { return name_in(kCollectiveOps, op); }

std::optional<CollectiveOp> collective_op_from_string(std::string_view text) {
  return value_in(kCollectiveOps, text);
}

std::string_view to_string(ServerPlacement placement) {
  return name_in(kServerPlacements, placement);
}

std::optional<ServerPlacement> server_placement_from_string(std::string_view text) {
  return value_in(kServerPlacements, text);
}

std::vector<std::string> server_placement_names() { return names_in(kServerPlacements); }

std::vector<std::string> collective_op_names() { return names_in(kCollectiveOps); }

std::span<const AlgorithmInfo> algorithm_registry() { return kAlgorithms; }

const AlgorithmInfo& algorithm_info(Algorithm algorithm) {
  return kAlgorithms.at(static_cast<std::size_t>(algorithm));
}

std::string_view to_string(Algorithm algorithm) { return algorithm_info(algorithm).name; }

std::vector<std::string> algorithm_names(bool (*keep)(const AlgorithmInfo&)) {
  std::vector<std::string> out;
  for (const AlgorithmInfo& a : kAlgorithms)
    if (keep == nullptr || keep(a)) out.emplace_back(a.name);
  return out;
}

std::vector<Algorithm> auto_candidates(CollectiveOp op, std::uint32_t ranks,
                                       std::uint32_t ranks_per_node, bool nccl) {
  std::vector<Algorithm> out;
  const bool allreduce = op == CollectiveOp::AllReduce;
  for (const AlgorithmInfo& a : kAlgorithms) {
    if (a.allreduce_only && !allreduce) continue;
    if (a.in_auto == AutoUse::Always ||
        (a.in_auto == AutoUse::WithoutNccl && !nccl && ranks_per_node > 1 &&
         ranks > ranks_per_node))
      out.push_back(a.algorithm);
  }
  return out;
}

std::string_view to_string(TransferKind kind) {
  switch (kind) {
    case TransferKind::Reduce: return "reduce";
    case TransferKind::Copy: return "copy";
  }
  return "?";
}

TransferId Plan::add(std::uint32_t src, std::uint32_t dst, std::uint32_t chunk,
                     TransferKind kind, std::span<const TransferId> deps,
                     std::uint8_t channel) {
  if (transfers.size() >= static_cast<std::size_t>(kNoTransfer))
    throw std::length_error("plan has too many transfers for 32-bit transfer ids");
  Transfer t;
  t.src = src;
  t.dst = dst;
  t.chunk = chunk;
  t.kind = kind;
  t.channel = channel;
  std::vector<TransferId> rest;
  for (const TransferId d : deps) {
    if (d == kNoTransfer) continue;
    if (t.dep0 == kNoTransfer) {
      t.dep0 = d;
    } else if (t.dep1 == kNoTransfer) {
      t.dep1 = d;
    } else {
      rest.push_back(d);
    }
  }
  if (!rest.empty()) t.extra_deps = add_dep_set(std::move(rest));
  transfers.push_back(t);
  return static_cast<TransferId>(transfers.size() - 1);
}

TransferId Plan::add(std::uint32_t src, std::uint32_t dst, std::uint32_t chunk,
                     TransferKind kind, std::initializer_list<TransferId> deps,
                     std::uint8_t channel) {
  return add(src, dst, chunk, kind, std::span<const TransferId>(deps.begin(), deps.size()),
             channel);
}

TransferId Plan::add_streamed(std::uint32_t src, std::uint32_t dst, std::uint32_t chunk,
                              TransferKind kind, std::span<const TransferId> data,
                              TransferId previous, std::uint8_t channel) {
  const TransferId id = add(src, dst, chunk, kind, data, channel);
  Transfer& t = transfers[id];
  // add() filled dep0, dep1, extra from `data`; move its dep1 to the extra set, put `previous`.
  if (t.dep1 != kNoTransfer) {
    if (t.extra_deps == kNoDepSet) {
      t.extra_deps = add_dep_set({t.dep1});
    } else {
      extra_deps[t.extra_deps].push_back(t.dep1);
    }
  }
  t.dep1 = previous;
  return id;
}

std::uint32_t Plan::add_dep_set(std::vector<TransferId> deps) {
  extra_deps.push_back(std::move(deps));
  return static_cast<std::uint32_t>(extra_deps.size() - 1);
}

TransferId Plan::add_after_set(std::uint32_t src, std::uint32_t dst, std::uint32_t chunk,
                               TransferKind kind, std::uint32_t dep_set, std::uint8_t channel) {
  const TransferId id = add(src, dst, chunk, kind, std::span<const TransferId>{}, channel);
  transfers[id].extra_deps = dep_set;
  return id;
}

std::vector<Bytes> Plan::bytes_sent_per_rank() const {
  std::vector<Bytes> sent(ranks, Bytes{0.0});
  for (const Transfer& t : transfers) sent[t.src] += bytes_of(t);
  for (const FlowPhase& phase : flow_phases)  // flows-only plans
    for (const PlanFlow& f : phase.flows) sent[f.src] += f.bytes;
  return sent;
}

std::vector<Bytes> Plan::bytes_received_per_rank() const {
  std::vector<Bytes> received(ranks, Bytes{0.0});
  for (const Transfer& t : transfers) received[t.dst] += bytes_of(t);
  for (const FlowPhase& phase : flow_phases)
    for (const PlanFlow& f : phase.flows) received[f.dst] += f.bytes;
  return received;
}

std::vector<Bytes> split_bytes(Bytes total, std::uint32_t parts) {
  if (parts == 0) throw std::invalid_argument("split_bytes: zero parts");
  if (!(total.bytes() >= 0.0) || !std::isfinite(total.bytes()))
    throw std::invalid_argument(fmt::format("split_bytes: bad size {}", total.bytes()));
  const double piece = std::floor(total.bytes() / parts);
  std::vector<Bytes> out(parts, Bytes{piece});
  out.back() = Bytes{total.bytes() - piece * (parts - 1)};
  return out;
}

}  // namespace gradsync
