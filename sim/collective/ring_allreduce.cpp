// Ring AllReduce = reduce-scatter + all-gather over ranks 0 → 1 → … → n-1 → 0, and its two
// halves on their own. `channels` rings each carry 1/channels of the data; each ring step's
// block is cut into `pipeline` sub-chunks that travel as independent lanes.
//
// Chunk layout: n blocks of channels·pipeline chunks; chunk = block·(C·P) + channel·P + q.
// Rank r ends the reduce-scatter owning block r. Per rank and per phase, (n-1)/n·S is sent.
// Time: 2(n-1)·α + 2(n-1)/n · S/B (Patarasuk & Yuan, JPDC 2009; sim/collective/README.md).
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "gradsync/collective/collective.hpp"
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
  detail::require(ranks * lanes < kNoTransfer && (options.flows_only || transfers < kNoTransfer),
                  planner,
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
  if (!options.flows_only)
    detail::reserve_transfers(plan, passes * (ranks - 1) * ranks * layout.lanes, "plan_ring");
  return plan;
}

// The flows-only form of a ring pass or of both (ring AllReduce), without its transfers: per
// channel, position i sends to position i+1 every block of the channel but one — in the
// reduce-scatter all but block i (it ends owning it), in the all-gather all but block i+1 (the
// block its successor started with); see append_ring_pass().
void ring_flows(Plan& plan, const RingLayout& layout,
                const std::vector<std::vector<std::uint32_t>>& rings, bool reduce_scatter,
                bool all_gather) {
  const std::uint32_t m = layout.ranks;
  FlowPhase phase{plan.steps, Bytes(0.0), {}};
  if (m > 1) {
    std::vector<double> block(m);
    for (std::uint32_t c = 0; c < rings.size(); ++c) {
      double total = 0.0;
      for (std::uint32_t j = 0; j < m; ++j) {
        double b = 0.0;
        for (std::uint32_t v = 0; v < layout.pipeline; ++v)
          b += plan.chunk_bytes[std::size_t{j} * layout.lanes + c * layout.pipeline + v].bytes();
        block[j] = b;
        total += b;
      }
      for (std::uint32_t i = 0; i < m; ++i) {
        double bytes = 0.0;
        if (reduce_scatter) bytes += total - block[i];
        if (all_gather) bytes += total - block[(i + 1) % m];
        phase.flows.push_back(PlanFlow{rings[c][i], rings[c][(i + 1) % m],
                                       static_cast<std::uint8_t>(c), Bytes(bytes)});
      }
    }
  }
  std::sort(phase.flows.begin(), phase.flows.end(), [](const PlanFlow& a, const PlanFlow& b) {
    return std::tie(a.src, a.dst, a.channel) < std::tie(b.src, b.dst, b.channel);
  });
  plan.flows_only = true;
  plan.transfer_count = (reduce_scatter && all_gather ? 2ULL : 1ULL) * (m - 1) * m * layout.lanes;
  plan.connection_count = phase.flows.size();
  plan.flow_phases.push_back(std::move(phase));
}

std::vector<std::uint32_t> ring_members(std::uint32_t ranks) {
  std::vector<std::uint32_t> members(ranks);
  std::iota(members.begin(), members.end(), 0U);
  return members;
}

// The ring each channel walks: options.orders[c], checked to be a permutation, or 0..n-1.
std::vector<std::vector<std::uint32_t>> channel_rings(const char* planner, std::uint32_t ranks,
                                                      const RingOptions& options) {
  if (options.orders.empty())
    return std::vector<std::vector<std::uint32_t>>(options.channels, ring_members(ranks));
  detail::require(options.orders.size() == options.channels, planner,
                  fmt::format("{} ring orders for {} channels", options.orders.size(),
                              options.channels));
  for (const auto& order : options.orders)
    detail::require_permutation(order, ranks, planner, "a ring order must list every rank once");
  return options.orders;
}

// Chunk layout: block j (ring position j) of channel c, pipeline lane v, is chunk
// j·lanes + c·pipeline + v. Appends one ring pass per channel over that channel's ring.
template <typename FirstDeps>
std::vector<detail::RingPass> append_channel_passes(
    Plan& plan, const RingLayout& layout, const std::vector<std::vector<std::uint32_t>>& rings,
    detail::RingPassKind kind, FirstDeps&& first_deps) {
  std::vector<detail::RingPass> passes;
  for (std::uint32_t c = 0; c < rings.size(); ++c) {
    const std::uint32_t base = c * layout.pipeline;
    passes.push_back(detail::append_ring_pass(
        plan, rings[c], base, layout.lanes, layout.pipeline, kind,
        [&](std::uint32_t i, std::uint32_t chunk) { return first_deps(c, i, chunk); },
        detail::kNoPriorWrite, [c](std::uint32_t) { return static_cast<std::uint8_t>(c); }));
  }
  return passes;
}

// Block owners by ring position: position i of channel c holds block i of that channel.
std::vector<std::uint32_t> block_owners(const RingLayout& layout,
                                        const std::vector<std::vector<std::uint32_t>>& rings) {
  std::vector<std::uint32_t> owner(std::size_t{layout.ranks} * layout.lanes);
  for (std::size_t chunk = 0; chunk < owner.size(); ++chunk) {
    const std::size_t position = chunk / layout.lanes;
    const std::size_t channel = chunk % layout.lanes / layout.pipeline;
    owner[chunk] = rings[channel][position];
  }
  return owner;
}

constexpr auto kNoChannelFirstDeps = [](std::uint32_t, std::uint32_t, std::uint32_t) {
  return std::array<TransferId, 2>{kNoTransfer, kNoTransfer};
};

}  // namespace

Plan plan_ring_allreduce(std::uint32_t ranks, Bytes bytes, const RingOptions& options) {
  const char* planner = "plan_ring_allreduce";
  const RingLayout layout = check_ring_args(planner, ranks, bytes, options, 2);
  Plan plan = ring_base(CollectiveOp::AllReduce, ranks, bytes, options, layout, 2);
  const auto rings = channel_rings(planner, ranks, options);
  if (options.flows_only) {
    ring_flows(plan, layout, rings, true, true);
    return plan;
  }
  const auto rs = append_channel_passes(plan, layout, rings, detail::RingPassKind::ReduceScatter,
                                        kNoChannelFirstDeps);
  // Position i starts the all-gather with block i, which arrived in the last reduce-scatter
  // step from position i-1; its link last carried its own final reduce-scatter send.
  const auto after_rs = [&](std::uint32_t c, std::uint32_t i, std::uint32_t chunk) {
    const std::uint32_t v = chunk % layout.pipeline;
    const std::uint32_t last = rs[c].steps() - 1;
    return std::array<TransferId, 2>{rs[c].at(last, (i + ranks - 1) % ranks, v),
                                     rs[c].at(last, i, v)};
  };
  append_channel_passes(plan, layout, rings, detail::RingPassKind::AllGather, after_rs);
  return plan;
}

namespace {

// One ring pass on its own (ReduceScatter or AllGather): rank at position i of channel c owns
// block i of that channel (chunk_owner).
Plan plan_ring_half(const char* planner, CollectiveOp op, std::uint32_t ranks, Bytes bytes,
                    const RingOptions& options) {
  const bool reduce_scatter = op == CollectiveOp::ReduceScatter;
  const RingLayout layout = check_ring_args(planner, ranks, bytes, options, 1);
  Plan plan = ring_base(op, ranks, bytes, options, layout, 1);
  const auto rings = channel_rings(planner, ranks, options);
  plan.chunk_owner = block_owners(layout, rings);
  if (options.flows_only) {
    ring_flows(plan, layout, rings, reduce_scatter, !reduce_scatter);
    return plan;
  }
  append_channel_passes(plan, layout, rings,
                        reduce_scatter ? detail::RingPassKind::ReduceScatter
                                       : detail::RingPassKind::AllGather,
                        kNoChannelFirstDeps);
  return plan;
}

}  // namespace

Plan plan_ring_reduce_scatter(std::uint32_t ranks, Bytes bytes, const RingOptions& options) {
  return plan_ring_half("plan_ring_reduce_scatter", CollectiveOp::ReduceScatter, ranks, bytes,
                        options);
}

Plan plan_ring_allgather(std::uint32_t ranks, Bytes bytes, const RingOptions& options) {
  return plan_ring_half("plan_ring_allgather", CollectiveOp::AllGather, ranks, bytes, options);
}

std::vector<std::vector<std::uint32_t>> rail_ring_orders(std::uint32_t ranks,
                                                         std::uint32_t ranks_per_node,
                                                         std::uint32_t channels) {
  detail::require(ranks_per_node >= 1 && ranks % ranks_per_node == 0, "rail_ring_orders",
                  "ranks must be a multiple of ranks_per_node");
  return rail_ring_orders(std::vector<std::uint32_t>(ranks / ranks_per_node, ranks_per_node),
                          channels);
}

namespace {

// Channel c walks server k along path_of(c, k, size of k): forward on even servers, backward
// on odd ones, so every crossing between servers of one size stays on one rail.
template <typename PathOf>
std::vector<std::vector<std::uint32_t>> walk_servers(const std::vector<std::uint32_t>& node_sizes,
                                                     std::uint32_t channels, PathOf path_of) {
  std::uint64_t ranks = 0;
  for (std::uint32_t p : node_sizes) ranks += p;
  std::vector<std::vector<std::uint32_t>> orders(channels);
  for (std::uint32_t c = 0; c < channels; ++c) {
    orders[c].reserve(ranks);
    std::uint32_t first = 0;  // the server's first rank
    for (std::size_t k = 0; k < node_sizes.size(); ++k) {
      const std::uint32_t ppn = node_sizes[k];
      const std::vector<std::uint32_t> path = path_of(c, k, ppn);
      for (std::uint32_t j = 0; j < ppn; ++j)
        orders[c].push_back(first + (k % 2 == 0 ? path[j] : path[ppn - 1 - j]));
      first += ppn;
    }
  }
  return orders;
}

}  // namespace

std::vector<std::vector<std::uint32_t>> rail_ring_orders(
    const std::vector<std::uint32_t>& node_sizes, std::uint32_t channels) {
  detail::require(channels >= 1, "rail_ring_orders", "needs at least one channel");
  detail::require(!node_sizes.empty() && std::all_of(node_sizes.begin(), node_sizes.end(),
                                                     [](std::uint32_t p) { return p >= 1; }),
                  "rail_ring_orders", "every server needs at least one rank");
  return walk_servers(node_sizes, channels, [&](std::uint32_t c, std::size_t, std::uint32_t ppn) {
    // Local path x, x+2, x+3, …, x+ppn-1, x+1: starts on rail x, ends on rail y = x+1.
    const auto x = static_cast<std::uint32_t>(std::uint64_t{c} * ppn / channels);
    std::vector<std::uint32_t> path{x};
    for (std::uint32_t j = 2; j < ppn; ++j) path.push_back((x + j) % ppn);
    if (ppn > 1) path.push_back((x + 1) % ppn);
    return path;
  });
}

std::vector<std::vector<std::uint32_t>> rail_ring_orders(
    std::uint32_t ranks, const std::vector<std::vector<std::uint32_t>>& local_paths,
    std::uint32_t channels) {
  detail::require(!local_paths.empty(), "rail_ring_orders", "needs a local path");
  const auto ppn = static_cast<std::uint32_t>(local_paths.front().size());
  detail::require(ppn >= 1 && ranks % ppn == 0, "rail_ring_orders",
                  "ranks must be a multiple of the local path's length");
  const std::uint32_t servers = ranks / ppn;
  return rail_ring_orders(std::vector<std::uint32_t>(servers, ppn),
                          std::vector<std::vector<std::vector<std::uint32_t>>>(servers, local_paths),
                          channels);
}

std::vector<std::vector<std::uint32_t>> rail_ring_orders(
    const std::vector<std::uint32_t>& node_sizes,
    const std::vector<std::vector<std::vector<std::uint32_t>>>& server_paths,
    std::uint32_t channels) {
  detail::require(channels >= 1, "rail_ring_orders", "needs at least one channel");
  detail::require(server_paths.size() == node_sizes.size(), "rail_ring_orders",
                  "one list of local paths per server");
  for (std::size_t k = 0; k < node_sizes.size(); ++k) {
    detail::require(node_sizes[k] >= 1 && !server_paths[k].empty(), "rail_ring_orders",
                    "every server needs a rank and a local path");
    for (const auto& path : server_paths[k])
      detail::require_permutation(path, node_sizes[k], "rail_ring_orders",
                                  "a local path must list every local rank once");
  }
  return walk_servers(node_sizes, channels, [&](std::uint32_t c, std::size_t k, std::uint32_t) {
    return server_paths[k][c % server_paths[k].size()];
  });
}

}  // namespace gradsync
