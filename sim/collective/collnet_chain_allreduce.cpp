// CollNetChain AllReduce (collective.hpp): NCCL's CollNet chain (NVIDIA/nccl
// src/device/all_reduce.h, runTreeUpDown over the collnetChain channels; connect.cc hangs each
// node's GPUs on a chain below the channel's head, whose "up" is the CollNet network), with the
// network part reduced in the SHARP switch the servers' head NICs share.
//
// Ranks: GPUs 0..G-1 node-major, SHARP switch s at G + s. Channel c carries chunks
// c·P .. c·P+P-1 (S/channels); its head is local GPU h = c·ppn/channels and a server's chain
// walks locals h, h+1, …, h+ppn-1 (mod ppn), so the channels leave each server through
// different GPUs, hence different NICs. For chunk k of channel c on server a:
//   up(pos):   chain position pos → pos-1, Reduce; after up(pos+1) of the chunk and behind
//              the previous chunk on that link (pos = ppn-1 .. 1);
//   head up:   the head → the SHARP switch of local h, Reduce; after up(1);
//   head down: the switch → the head, Copy; after every server's head up of the chunk;
//   down(pos): chain position pos-1 → pos, Copy; after the copy into pos-1.
// Per chunk 2·G transfers; steps = 2·ppn.
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "gradsync/collective/collective.hpp"
#include "ring_pass.hpp"

namespace gradsync {

Plan plan_collnet_chain_allreduce(std::uint32_t gpus, Bytes bytes,
                                  const CollNetChainOptions& options) {
  constexpr const char* kPlanner = "plan_collnet_chain_allreduce";
  const std::uint32_t ppn = options.ranks_per_node;
  const std::uint32_t real_pipeline = options.pipeline;
  const std::uint32_t channels = options.channels;
  detail::require(channels >= 1 && channels <= 64, kPlanner,
                  fmt::format("channels must be 1..64, got {}", channels));
  std::uint32_t nodes = 0, pipeline = 0;
  Plan plan = detail::start_collnet_plan(kPlanner, Algorithm::CollNetChain, gpus, bytes, ppn,
                                         options.sharp_of_local, channels, real_pipeline,
                                         options.flows_only, nodes, pipeline);
  plan.steps = 2 * ppn;

  // The rank at chain position `pos` of server `a` on channel `c`.
  const auto at = [&](std::uint32_t c, std::uint32_t a, std::uint32_t pos) {
    return a * ppn + (c * ppn / channels + pos) % ppn;
  };
  // Per channel and GPU: the last transfer up out of it and down into it (a GPU has one chain
  // link up and one down per channel).
  std::vector<std::vector<TransferId>> up_prev(channels, std::vector<TransferId>(gpus, kNoTransfer));
  std::vector<std::vector<TransferId>> down_prev(channels,
                                                 std::vector<TransferId>(gpus, kNoTransfer));
  std::vector<TransferId> head_ups(nodes);
  for (std::uint32_t k = 0; k < pipeline; ++k) {
    for (std::uint32_t c = 0; c < channels; ++c) {
      const std::uint32_t chunk = c * pipeline + k;
      const auto ch = static_cast<std::uint8_t>(c);
      const std::uint32_t sharp = gpus + options.sharp_of_local[c * ppn / channels];
      for (std::uint32_t a = 0; a < nodes; ++a) {
        TransferId below = kNoTransfer;  // what came up into the current position
        for (std::uint32_t pos = ppn - 1; pos >= 1; --pos) {
          const std::uint32_t r = at(c, a, pos);
          below = up_prev[c][r] = plan.add_streamed(r, at(c, a, pos - 1), chunk,
                                                    TransferKind::Reduce, std::array{below},
                                                    up_prev[c][r], ch);
        }
        const std::uint32_t head = at(c, a, 0);
        head_ups[a] = up_prev[c][head] = plan.add_streamed(
            head, sharp, chunk, TransferKind::Reduce, std::array{below}, up_prev[c][head], ch);
      }
      // The last server's head up first (dep0: the data dependency check_plan searches first).
      const std::vector<TransferId> all_ups(head_ups.rbegin(), head_ups.rend());
      for (std::uint32_t a = 0; a < nodes; ++a) {
        const std::uint32_t head = at(c, a, 0);
        TransferId above = down_prev[c][head] = plan.add_streamed(
            sharp, head, chunk, TransferKind::Copy, all_ups, down_prev[c][head], ch);
        for (std::uint32_t pos = 1; pos < ppn; ++pos) {
          const std::uint32_t r = at(c, a, pos);
          above = down_prev[c][r] = plan.add_streamed(at(c, a, pos - 1), r, chunk,
                                                      TransferKind::Copy, std::array{above},
                                                      down_prev[c][r], ch);
        }
      }
    }
  }
  // Flow fidelity: as the tree, every chunk pays a step latency per link in turn and the
  // pipeline fills over the chain's links, charged at half a chunk per link (each link carries
  // the up and the down stream).
  const Bytes chunk_size = detail::first_chunk(bytes, channels * real_pipeline);
  plan.end_phase(plan.steps + real_pipeline - 1, chunk_size * (plan.steps - 1) * 0.5);
  if (options.flows_only) make_flows_only(plan, std::uint64_t{2} * gpus * channels * real_pipeline);
  return plan;
}

}  // namespace gradsync
