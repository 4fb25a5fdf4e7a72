// Ring AllReduce = reduce-scatter + all-gather over ranks 0 → 1 → … → n-1 → 0, and its two
// halves on their own. `channels` rings each carry 1/channels of the data; each ring step's
// block is cut into `pipeline` sub-chunks that travel as independent lanes.
//
// Chunk layout: n blocks of channels·pipeline chunks; chunk = block·(C·P) + channel·P + q.
// Rank r ends the reduce-scatter owning block r. Per rank and per phase, (n-1)/n·S is sent.
// Time: 2(n-1)·α + 2(n-1)/n · S/B (DESIGN.md §1; NCCL's ring, REFERENCES.md §3).
#include <cstdint>
#include <numeric>
#include <vector>

#include <fmt/format.h>

#include "gradsync/collective.hpp"
#include "ring_pass.hpp"

namespace gradsync {
namespace {

struct RingLayout {
  std::uint32_t ranks;
  std::uint32_t lanes;     // channels · pipeline chunks per block
  std::uint32_t pipeline;
  [[nodiscard]] std::uint8_t channel_of(std::uint32_t chunk) const {
    return static_cast<std::uint8_t>(chunk % lanes / pipeline);
  }
};

RingLayout check_ring_args(const char* planner, std::uint32_t ranks, Bytes bytes,
                           const RingOptions& options, std::uint64_t passes) {
  detail::require(ranks >= 1, planner, "needs at least one rank");
  detail::require(options.channels >= 1 && options.channels <= 256, planner,
                  fmt::format("channels must be 1..256, got {}", options.channels));
  detail::require(options.pipeline >= 1, planner, "pipeline must be at least 1");
  detail::require(bytes.bytes() >= 0.0, planner, "negative size");
  const std::uint64_t lanes = std::uint64_t{options.channels} * options.pipeline;
  const std::uint64_t transfers = passes * (ranks - 1) * ranks * lanes;
  detail::require(ranks * lanes < kNoTransfer && transfers < kNoTransfer, planner,
                  fmt::format("{} ranks × {} lanes is too large a plan", ranks, lanes));
  return {ranks, static_cast<std::uint32_t>(lanes), options.pipeline};
}

Plan ring_base(CollectiveOp op, std::uint32_t ranks, Bytes bytes, const RingOptions& options,
               const RingLayout& layout, std::uint64_t passes) {
  Plan plan;
  plan.op = op;
  plan.algorithm = Algorithm::Ring;
  plan.ranks = ranks;
  plan.contributors = ranks;
  plan.total_bytes = bytes;
  plan.chunk_bytes = split_bytes(bytes, ranks * layout.lanes);
  plan.steps = static_cast<std::uint32_t>(passes * (ranks - 1));
  plan.channels = options.channels;
  plan.transfers.reserve(passes * (ranks - 1) * ranks * layout.lanes);
  return plan;
}

std::vector<std::uint32_t> ring_members(std::uint32_t ranks) {
  std::vector<std::uint32_t> members(ranks);
  std::iota(members.begin(), members.end(), 0U);
  return members;
}

std::vector<std::uint32_t> block_owners(const RingLayout& layout) {
  std::vector<std::uint32_t> owner(std::size_t{layout.ranks} * layout.lanes);
  for (std::size_t c = 0; c < owner.size(); ++c)
    owner[c] = static_cast<std::uint32_t>(c / layout.lanes);
  return owner;
}

}  // namespace

Plan plan_ring_allreduce(std::uint32_t ranks, Bytes bytes, const RingOptions& options) {
  const RingLayout layout = check_ring_args("plan_ring_allreduce", ranks, bytes, options, 2);
  Plan plan = ring_base(CollectiveOp::AllReduce, ranks, bytes, options, layout, 2);
  const std::vector<std::uint32_t> members = ring_members(ranks);
  const auto channel_of = [&](std::uint32_t chunk) { return layout.channel_of(chunk); };
  const detail::RingPass rs =
      detail::append_ring_pass(plan, members, 0, layout.lanes, layout.lanes,
                               detail::RingPassKind::ReduceScatter, detail::kNoFirstDeps,
                               detail::kNoPriorWrite, channel_of);
  // Member i starts the all-gather with block i, which arrived in the last reduce-scatter
  // step from i-1; its link last carried its own final reduce-scatter send.
  const auto after_rs = [&](std::uint32_t i, std::uint32_t chunk) {
    const std::uint32_t u = chunk % layout.lanes;
    const std::uint32_t last = rs.steps() - 1;
    return std::array<TransferId, 2>{rs.at(last, (i + ranks - 1) % ranks, u), rs.at(last, i, u)};
  };
  detail::append_ring_pass(plan, members, 0, layout.lanes, layout.lanes,
                           detail::RingPassKind::AllGather, after_rs, detail::kNoPriorWrite, channel_of);
  return plan;
}

Plan plan_ring_reduce_scatter(std::uint32_t ranks, Bytes bytes, const RingOptions& options) {
  const RingLayout layout =
      check_ring_args("plan_ring_reduce_scatter", ranks, bytes, options, 1);
  Plan plan = ring_base(CollectiveOp::ReduceScatter, ranks, bytes, options, layout, 1);
  plan.chunk_owner = block_owners(layout);
  const std::vector<std::uint32_t> members = ring_members(ranks);
  detail::append_ring_pass(plan, members, 0, layout.lanes, layout.lanes,
                           detail::RingPassKind::ReduceScatter, detail::kNoFirstDeps,
                           detail::kNoPriorWrite,
                           [&](std::uint32_t chunk) { return layout.channel_of(chunk); });
  return plan;
}

Plan plan_ring_allgather(std::uint32_t ranks, Bytes bytes, const RingOptions& options) {
  const RingLayout layout = check_ring_args("plan_ring_allgather", ranks, bytes, options, 1);
  Plan plan = ring_base(CollectiveOp::AllGather, ranks, bytes, options, layout, 1);
  plan.chunk_owner = block_owners(layout);
  const std::vector<std::uint32_t> members = ring_members(ranks);
  detail::append_ring_pass(plan, members, 0, layout.lanes, layout.lanes,
                           detail::RingPassKind::AllGather, detail::kNoFirstDeps,
                           detail::kNoPriorWrite,
                           [&](std::uint32_t chunk) { return layout.channel_of(chunk); });
  return plan;
}

}  // namespace gradsync
