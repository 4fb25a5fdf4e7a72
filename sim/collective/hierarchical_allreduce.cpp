// Hierarchical AllReduce (the Horovod/NCCL "2D" scheme): ring reduce-scatter
// inside each node, ring AllReduce across nodes per rail (the ranks with the same local index,
// which in a rail-optimized cluster share a NIC rail), ring all-gather inside each node.
//
// Ranks are node-major (rank = node·ppn + local); N = ranks/ppn nodes. Chunk layout:
// chunk = (l·N + m)·P + q for part l (the local index that reduces it across nodes), node
// block m (the node that owns it in the inter-node ring) and pipeline lane q. Channel = l.
// Per rank: intra-node (ppn-1)/ppn·S in each intra phase, inter-node 2(N-1)/N·S/ppn; in total
// 2(n-1)/n·S, the same as a flat ring, but only S/ppn of it crosses the network per rank.
#include <array>
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "gradsync/collective/collective.hpp"
#include "ring_pass.hpp"

namespace gradsync {

Plan plan_hierarchical_allreduce(std::uint32_t ranks, Bytes bytes,
                                 const HierarchicalOptions& options) {
  constexpr const char* kPlanner = "plan_hierarchical_allreduce";
  const std::uint32_t ppn = options.ranks_per_node;
  const std::uint32_t pipeline = options.pipeline;
  detail::require(ranks >= 1, kPlanner, "needs at least one rank");
  detail::require(ppn >= 1 && ranks % ppn == 0, kPlanner,
                  fmt::format("ranks_per_node {} does not divide {} ranks", ppn, ranks));
  detail::require(ppn <= 256, kPlanner, "at most 256 ranks per node (one channel per rail)");
  detail::require(pipeline >= 1, kPlanner, "pipeline must be at least 1");
  detail::require(bytes.bytes() >= 0.0, kPlanner, "negative size");
  // The local orders the intra-node rings walk: one sub-plan each on its share of the data.
  std::vector<std::vector<std::uint32_t>> orders = options.local_orders;
  if (orders.empty()) {
    orders.emplace_back(ppn);
    for (std::uint32_t l = 0; l < ppn; ++l) orders.back()[l] = l;
  }
  detail::require(orders.size() * ppn <= 256, kPlanner,
                  "at most 256 channels (local orders x ranks per node)");
  for (const auto& order : orders)
    detail::require_permutation(order, ppn, kPlanner, "a local order must list every local rank once");
  const auto rings = static_cast<std::uint32_t>(orders.size());
  const std::uint32_t nodes = ranks / ppn;
  const std::uint64_t total = std::uint64_t{rings} * ranks * pipeline *
                              (2 * std::uint64_t{ppn - 1} + 2 * std::uint64_t{nodes - 1});
  detail::require(std::uint64_t{rings} * ranks * pipeline < kNoTransfer && total < kNoTransfer,
                  kPlanner, "too large a plan");

  Plan plan;
  plan.op = CollectiveOp::AllReduce;
  plan.algorithm = Algorithm::Hierarchical;
  plan.ranks = ranks;
  plan.contributors = ranks;
  plan.total_bytes = bytes;
  plan.chunk_bytes = split_bytes(bytes, rings * ranks * pipeline);
  plan.steps = 2 * (ppn - 1) + 2 * (nodes - 1);
  plan.channels = rings * ppn;
  detail::reserve_transfers(plan, total, kPlanner);

  // Sub-plan k (local order k) owns chunks [k·ranks·P, (k+1)·ranks·P); within it position j
  // of the order plays local rank j of the single-order scheme.
  const std::uint32_t sub_chunks = ranks * pipeline;
  const std::uint32_t part_chunks = nodes * pipeline;  // chunks of one part l
  const auto channel_of = [&](std::uint32_t chunk) {
    return static_cast<std::uint8_t>((chunk / sub_chunks) * ppn + (chunk % sub_chunks) / part_chunks);
  };
  const auto rank_of = [&](std::uint32_t k, std::uint32_t a, std::uint32_t j) {
    return a * ppn + orders[k][j];
  };
  std::vector<std::uint32_t> members;

  // 1. Reduce-scatter inside each node: position l ends with part l reduced over the node.
  std::vector<std::vector<detail::RingPass>> intra_rs(rings, std::vector<detail::RingPass>(nodes));
  for (std::uint32_t k = 0; k < rings; ++k)
    for (std::uint32_t a = 0; a < nodes; ++a) {
      members.clear();
      for (std::uint32_t l = 0; l < ppn; ++l) members.push_back(rank_of(k, a, l));
      intra_rs[k][a] = detail::append_ring_pass(plan, members, k * sub_chunks, part_chunks,
                                                part_chunks, detail::RingPassKind::ReduceScatter,
                                                detail::kNoFirstDeps, detail::kNoPriorWrite,
                                                channel_of);
    }
  plan.end_phase(ppn - 1);
  // The phase-1 write of chunk (part l, lane u) into position l of node a: the node's sum.
  const auto node_sum = [&](std::uint32_t k, std::uint32_t a, std::uint32_t l, std::uint32_t u) {
    if (ppn == 1) return kNoTransfer;
    return intra_rs[k][a].at(ppn - 2, (l + ppn - 1) % ppn, u);
  };

  // 2. Ring AllReduce of part l across nodes on rail l: blocks m of P chunks. Each block
  // member a forwards also holds its node's sum, so the forwarding send waits for it; the
  // node's own block (kept, not forwarded) is waited for before the all-gather hands it on.
  std::vector<std::vector<detail::RingPass>> inter_rs(rings, std::vector<detail::RingPass>(ppn));
  std::vector<std::vector<detail::RingPass>> inter_ag(rings, std::vector<detail::RingPass>(ppn));
  for (std::uint32_t k = 0; k < rings; ++k)
    for (std::uint32_t l = 0; l < ppn; ++l) {
      members.clear();
      for (std::uint32_t a = 0; a < nodes; ++a) members.push_back(rank_of(k, a, l));
      const std::uint32_t base = k * sub_chunks + l * part_chunks;
      const auto node_sum_of = [&](std::uint32_t a, std::uint32_t chunk) {
        return node_sum(k, a, l, chunk - base);
      };
      inter_rs[k][l] = detail::append_ring_pass(
          plan, members, base, pipeline, pipeline, detail::RingPassKind::ReduceScatter,
          [&](std::uint32_t a, std::uint32_t chunk) {
            return std::array<TransferId, 2>{node_sum_of(a, chunk), kNoTransfer};
          },
          node_sum_of, channel_of);
      const detail::RingPass& rs = inter_rs[k][l];
      inter_ag[k][l] = detail::append_ring_pass(
          plan, members, base, pipeline, pipeline, detail::RingPassKind::AllGather,
          [&](std::uint32_t a, std::uint32_t chunk) {
            const std::uint32_t q = (chunk - base) % pipeline;
            const std::uint32_t last = rs.steps() - 1;
            const TransferId own_sum = node_sum_of(a, chunk);
            return std::array<TransferId, 2>{rs.at(last, (a + nodes - 1) % nodes, q),
                                             own_sum != kNoTransfer ? own_sum : rs.at(last, a, q)};
          },
          detail::kNoPriorWrite, channel_of);
    }
  plan.end_phase(2 * (nodes - 1));
  // What position l of node a must wait for before handing on chunk (part l, lane u = m·P + q):
  // the all-gather copy that brought block m, or for its own block the all-gather send that
  // waited for both sums (node and network).
  const auto final_part = [&](std::uint32_t k, std::uint32_t a, std::uint32_t l, std::uint32_t u) {
    if (nodes == 1) return node_sum(k, a, l, u);
    const std::uint32_t m = u / pipeline;
    const std::uint32_t q = u % pipeline;
    if (m == a) return inter_ag[k][l].at(0, a, q);
    return inter_ag[k][l].at((a + nodes - 1 - m) % nodes, (a + nodes - 1) % nodes, q);
  };

  // 3. All-gather inside each node: position l hands part l to the others.
  for (std::uint32_t k = 0; k < rings; ++k)
    for (std::uint32_t a = 0; a < nodes; ++a) {
      members.clear();
      for (std::uint32_t l = 0; l < ppn; ++l) members.push_back(rank_of(k, a, l));
      detail::append_ring_pass(
          plan, members, k * sub_chunks, part_chunks, part_chunks, detail::RingPassKind::AllGather,
          [&](std::uint32_t l, std::uint32_t chunk) {
            const std::uint32_t u = (chunk - k * sub_chunks) % part_chunks;
            return std::array<TransferId, 2>{final_part(k, a, l, u), intra_rs[k][a].at(ppn - 2, l, u)};
          },
          detail::kNoPriorWrite, channel_of);
    }
  plan.end_phase(ppn - 1);
  return plan;
}

}  // namespace gradsync
