// Broadcast and Reduce from a root as a pipelined chain along the ring (NCCL runs both with
// its Ring algorithm): Broadcast copies root → root+1 → … → root-1, Reduce sums
// root+1 → root+2 → … → root-1 → root, each channel along its ring order when given (across
// servers, NCCL's rings: rail_ring_orders()). `channels` chains each carry 1/channels of the data in
// `pipeline` chunks; chunk k moves on as soon as it arrived, behind chunk k-1 on each link.
// Chunk = channel·P + q. Every rank but the last of the chain sends S once; every rank but the
// first receives S once.
// Time: (n-1 + P-1)·(α + S/(C·P·B)) per channel; bus factor 1 (nccl-tests).
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "gradsync/collective/collective.hpp"
#include "ring_pass.hpp"

namespace gradsync {
namespace {

Plan plan_chain(const char* planner, CollectiveOp op, std::uint32_t ranks, std::uint32_t root,
                Bytes bytes, const RingOptions& options) {
  detail::require(ranks >= 1, planner, "needs at least one rank");
  detail::require(root < ranks, planner, fmt::format("root {} is not a rank of {}", root, ranks));
  detail::require(options.channels >= 1 && options.channels <= 256, planner,
                  fmt::format("channels must be 1..256, got {}", options.channels));
  detail::require(options.pipeline >= 1, planner, "pipeline must be at least 1");
  detail::require(bytes.bytes() >= 0.0, planner, "negative size");
  const std::uint64_t real_chunks = std::uint64_t{options.channels} * options.pipeline;
  detail::require(real_chunks * ranks < kNoTransfer, planner, "too large a plan");
  // Flows-only: every chunk of a channel follows the channel's chain.
  const std::uint32_t pipeline = detail::built_steps(options.flows_only, options.pipeline, 1);
  const std::uint64_t chunks = std::uint64_t{options.channels} * pipeline;

  Plan plan;
  plan.op = op;
  plan.algorithm = Algorithm::Ring;
  plan.ranks = ranks;
  plan.contributors = ranks;
  plan.root = root;
  plan.total_bytes = bytes;
  plan.chunk_bytes = detail::fold_chunks(
      split_bytes(bytes, static_cast<std::uint32_t>(real_chunks)), options.pipeline, pipeline,
      options.channels,
      [](std::uint32_t q, std::uint32_t ch, std::uint32_t p) { return ch * p + q; });
  plan.steps = ranks - 1;
  plan.channels = options.channels;
  detail::reserve_transfers(plan, chunks * (ranks - 1), planner);

  // Channel ch's chain follows its ring order (options.orders[ch], else 0, 1, …, n-1): position
  // p of the chain sends to position p+1; Broadcast starts at the root, Reduce ends there.
  const bool ordered = !options.orders.empty();
  detail::require(!ordered || options.orders.size() == options.channels, planner,
                  "one ring order per channel");
  std::vector<std::uint32_t> first(options.channels, 0);  // per channel: position of the chain's head
  for (std::uint32_t ch = 0; ch < options.channels; ++ch) {
    std::uint32_t root_pos = root;
    if (ordered) {
      const auto& order = options.orders[ch];
      detail::require(order.size() == ranks, planner, "a ring order must visit every rank");
      std::vector<bool> seen(ranks, false);
      for (std::uint32_t i = 0; i < ranks; ++i) {
        detail::require(order[i] < ranks && !seen[order[i]], planner,
                        "a ring order must visit every rank once");
        seen[order[i]] = true;
        if (order[i] == root) root_pos = i;
      }
    }
    first[ch] = op == CollectiveOp::Broadcast ? root_pos : (root_pos + 1) % ranks;
  }
  const auto rank_at = [&](std::uint32_t ch, std::uint32_t pos) {
    return ordered ? options.orders[ch][pos % ranks] : pos % ranks;
  };
  const TransferKind kind =
      op == CollectiveOp::Broadcast ? TransferKind::Copy : TransferKind::Reduce;
  const std::uint32_t hops = ranks - 1;
  // Chunk-major order: the transfer of (chunk c, hop p) is first_id[c] + p.
  std::vector<TransferId> first_id(chunks, kNoTransfer);
  for (std::uint32_t q = 0; q < pipeline; ++q) {
    for (std::uint32_t ch = 0; ch < options.channels; ++ch) {
      const std::uint32_t chunk = ch * pipeline + q;
      const std::uint32_t previous = q == 0 ? kNoTransfer : chunk - 1;  // same channel
      first_id[chunk] = static_cast<TransferId>(plan.transfers.size());
      for (std::uint32_t p = 0; p < hops; ++p) {
        const TransferId data = p == 0 ? kNoTransfer : first_id[chunk] + p - 1;
        const TransferId link = previous == kNoTransfer ? kNoTransfer : first_id[previous] + p;
        plan.add(rank_at(ch, first[ch] + p), rank_at(ch, first[ch] + p + 1), chunk, kind,
                 {data, link}, static_cast<std::uint8_t>(ch));
      }
    }
  }
  // Flow fidelity: each chunk pays a step latency per hop (P + hops - 1 latencies on the
  // critical path) and the pipeline fills over the hops, charged at half a chunk per hop as
  // for the tree (calibrated against step fidelity, test "engine: step and flow agree").
  const Bytes chunk_size = detail::first_chunk(bytes, static_cast<std::uint32_t>(real_chunks));
  plan.end_phase(hops + options.pipeline - 1, chunk_size * (hops > 0 ? hops - 1 : 0) * 0.5);
  if (options.flows_only) make_flows_only(plan, real_chunks * (ranks - 1));
  return plan;
}

}  // namespace

Plan plan_ring_broadcast(std::uint32_t ranks, std::uint32_t root, Bytes bytes,
                         const RingOptions& options) {
  return plan_chain("plan_ring_broadcast", CollectiveOp::Broadcast, ranks, root, bytes, options);
}

Plan plan_ring_reduce(std::uint32_t ranks, std::uint32_t root, Bytes bytes,
                      const RingOptions& options) {
  return plan_chain("plan_ring_reduce", CollectiveOp::Reduce, ranks, root, bytes, options);
}

}  // namespace gradsync
