// Double-binary-tree AllReduce, NCCL style (NVIDIA/nccl src/graph/trees.cc
// for the trees, src/graph/connect.cc for hanging them on a chain inside each node).
//
// Ranks are node-major (rank = node·ppn + local; or servers of different sizes, node_sizes,
// each a consecutive block, as torchrun fills 12 ranks into 8 + 4). Each tree spans the nodes
// (build_double_binary_tree); inside a node its ranks form a chain below the node's head:
// tree 0's head is local 0 (chain 0 ← 1 ← … ← ppn-1), tree 1's head is local ppn-1 (chain
// walked the other way), so the two trees' inter-node traffic leaves from different GPUs.
// A head's children are its chain successor and the heads of its child nodes (≤ 3, NCCL's
// NCCL_MAX_TREE_ARITY).
//
// Tree t carries chunks t·P .. t·P+P-1 (half of S). Chunk k of a rank goes up (Reduce into the
// parent) once chunk k arrived from every child, behind its own chunk k-1 on that link; the
// root broadcasts chunk k (Copy) once every child's chunk k arrived, each rank forwarding it
// down as soon as it arrived, behind chunk k-1. Per rank and tree, S/2 crosses each incident
// tree edge in each direction.
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "gradsync/collective/collective.hpp"
#include "ring_pass.hpp"

namespace gradsync {
namespace {

struct RankTree {
  std::uint32_t root = 0;
  std::vector<std::uint32_t> parent;                 // kNoRank for the root
  std::vector<std::vector<std::uint32_t>> children;  // chain successor first
  std::vector<std::uint32_t> order;                  // breadth-first from the root
  std::uint32_t height = 0;                          // edges from root to the deepest rank
};

// The servers' consecutive rank blocks: sizes[k] ranks from first[k].
struct Servers {
  std::vector<std::uint32_t> sizes;
  std::vector<std::uint32_t> first;
};

// The chain of each node starts at a position of its local order (pair `p` of `pairs`:
// p·size/pairs, or the order's first rank; `last_head`: the last) and walks up
// (chain_down) or down it, wrapping around. `order_of(node)`: local ranks (empty: 0 … size-1).
template <typename OrderOf>
RankTree hang_chains(const BinaryTree& nodes_tree, const Servers& servers, bool chain_down,
                     std::uint32_t p, std::uint32_t pairs, bool last_head, OrderOf order_of) {
  const auto nodes = static_cast<std::uint32_t>(nodes_tree.parent.size());
  const std::uint32_t ranks = servers.first.back() + servers.sizes.back();
  const auto rank_of = [&](std::uint32_t node, std::uint32_t chain_pos) {
    const std::uint32_t size = servers.sizes[node];
    const std::vector<std::uint32_t>& order = order_of(node);
    const std::uint32_t head = last_head ? size - 1 : !order.empty() ? 0 : p * size / pairs;
    const std::uint32_t at = chain_down ? (head + chain_pos) % size : (head + size - chain_pos) % size;
    return servers.first[node] + (order.empty() ? at : order[at]);
  };
  RankTree tree;
  tree.parent.assign(ranks, kNoRank);
  tree.children.assign(ranks, {});
  for (std::uint32_t node = 0; node < nodes; ++node) {
    for (std::uint32_t pos = 1; pos < servers.sizes[node]; ++pos) {
      tree.parent[rank_of(node, pos)] = rank_of(node, pos - 1);
      tree.children[rank_of(node, pos - 1)].push_back(rank_of(node, pos));
    }
    const std::uint32_t head = rank_of(node, 0);
    if (nodes_tree.parent[node] != kNoRank)
      tree.parent[head] = rank_of(nodes_tree.parent[node], 0);
    for (const std::uint32_t child : nodes_tree.children[node])
      if (child != kNoRank) tree.children[head].push_back(rank_of(child, 0));
  }
  tree.root = rank_of(nodes_tree.root, 0);
  std::vector<std::uint32_t> depth(ranks, 0);
  tree.order.reserve(ranks);
  tree.order.push_back(tree.root);
  for (std::size_t i = 0; i < tree.order.size(); ++i) {
    const std::uint32_t r = tree.order[i];
    for (const std::uint32_t c : tree.children[r]) {
      depth[c] = depth[r] + 1;
      tree.height = std::max(tree.height, depth[c]);
      tree.order.push_back(c);
    }
  }
  return tree;
}

}  // namespace

Plan plan_tree_allreduce(std::uint32_t ranks, Bytes bytes, const TreeOptions& options) {
  constexpr const char* kPlanner = "plan_tree_allreduce";
  const std::uint32_t ppn = options.ranks_per_node;
  const std::uint32_t real_pipeline = options.pipeline;
  // Flows-only: every chunk of a tree uses the tree's connections, so one chunk per tree.
  const std::uint32_t pipeline = detail::built_steps(options.flows_only, real_pipeline, 1);
  detail::require(ranks >= 1, kPlanner, "needs at least one rank");
  Servers servers;
  if (options.node_sizes.empty()) {
    detail::require(ppn >= 1 && ranks % ppn == 0, kPlanner,
                    fmt::format("ranks_per_node {} does not divide {} ranks", ppn, ranks));
    servers.sizes.assign(ranks / ppn, ppn);
  } else {
    std::uint64_t listed = 0;
    for (const std::uint32_t size : options.node_sizes) {
      detail::require(size >= 1, kPlanner, "a server holds at least one rank");
      listed += size;
    }
    detail::require(listed == ranks, kPlanner,
                    fmt::format("node_sizes list {} ranks, not {}", listed, ranks));
    servers.sizes = options.node_sizes;
  }
  for (std::uint32_t k = 0, at = 0; k < servers.sizes.size(); at += servers.sizes[k++])
    servers.first.push_back(at);
  const auto nodes = static_cast<std::uint32_t>(servers.sizes.size());
  detail::require(pipeline >= 1, kPlanner, "pipeline must be at least 1");
  const std::uint32_t tree_count = options.trees;
  detail::require(tree_count >= 2 && tree_count <= 64 && tree_count % 2 == 0, kPlanner,
                  fmt::format("trees must be even, 2..64, got {}", tree_count));
  detail::require(bytes.bytes() >= 0.0, kPlanner, "negative size");
  detail::require(std::uint64_t{ranks} * real_pipeline * 2 * tree_count < kNoTransfer, kPlanner,
                  "too large a plan");
  detail::require(options.server_orders.empty() || options.server_orders.size() == nodes,
                  kPlanner, "server_orders needs one list of orders per server");
  for (std::uint32_t k = 0; k < options.server_orders.size(); ++k)
    for (const auto& order : options.server_orders[k])
      detail::require_permutation(order, servers.sizes[k], kPlanner,
                                  "a server's order must list each of its ranks once");
  if (options.server_orders.empty())  // else server_orders replace them
    for (const auto& order : options.local_orders)
      for (const std::uint32_t size : servers.sizes)
        detail::require_permutation(order, size, kPlanner,
                                    "a local order must list every local rank once (servers of "
                                    "different sizes take server_orders)");

  const std::array<BinaryTree, 2> node_trees = build_double_binary_tree(nodes);
  const std::uint32_t pairs = tree_count / 2;
  std::vector<RankTree> trees;
  trees.reserve(tree_count);
  const std::vector<std::uint32_t> none;
  for (std::uint32_t p = 0; p < pairs; ++p) {
    // With orders, pair p chains along its server's order p (cyclically), headed at its first.
    const auto order_of = [&](std::uint32_t node) -> const std::vector<std::uint32_t>& {
      const auto& orders = options.server_orders.empty() ? options.local_orders
                                                         : options.server_orders[node];
      return orders.empty() ? none : orders[p % orders.size()];
    };
    trees.push_back(hang_chains(node_trees[0], servers, true, p, pairs, false, order_of));
    trees.push_back(hang_chains(node_trees[1], servers, false, p, pairs, pairs == 1, order_of));
  }
  std::uint32_t height = 0;
  for (const RankTree& t : trees) height = std::max(height, t.height);

  Plan plan;
  plan.op = CollectiveOp::AllReduce;
  plan.algorithm = Algorithm::Tree;
  plan.ranks = ranks;
  plan.contributors = ranks;
  plan.total_bytes = bytes;
  plan.chunk_bytes = detail::fold_chunks(
      split_bytes(bytes, tree_count * real_pipeline), real_pipeline, pipeline, tree_count,
      [](std::uint32_t k, std::uint32_t t, std::uint32_t p) { return t * p + k; });
  plan.steps = 2 * height;
  plan.channels = tree_count;
  const std::uint64_t full_transfers = std::uint64_t{2} * tree_count * (ranks - 1) * real_pipeline;
  detail::reserve_transfers(plan, options.flows_only ? full_transfers / real_pipeline : full_transfers,
                            kPlanner);

  // Per tree: the transfer that carried the current/previous chunk up from each rank, and
  // down into each rank (a rank has one parent, so both are indexed by the child rank).
  std::vector<std::vector<TransferId>> up_prev(tree_count), up_cur(tree_count),
      down_prev(tree_count), down_cur(tree_count);
  for (std::size_t t = 0; t < tree_count; ++t) {
    up_prev[t].assign(ranks, kNoTransfer);
    up_cur[t].assign(ranks, kNoTransfer);
    down_prev[t].assign(ranks, kNoTransfer);
    down_cur[t].assign(ranks, kNoTransfer);
  }
  std::vector<TransferId> deps;
  for (std::uint32_t k = 0; k < pipeline; ++k) {
    for (std::uint32_t t = 0; t < tree_count; ++t) {
      const RankTree& tree = trees[t];
      const std::uint32_t chunk = t * pipeline + k;
      const auto channel = static_cast<std::uint8_t>(t);
      // Reduce up, deepest ranks first.
      for (auto it = tree.order.rbegin(); it != tree.order.rend(); ++it) {
        const std::uint32_t r = *it;
        if (r == tree.root) continue;
        deps.clear();
        for (const std::uint32_t c : tree.children[r]) deps.push_back(up_cur[t][c]);
        up_cur[t][r] = plan.add_streamed(r, tree.parent[r], chunk, TransferKind::Reduce, deps,
                                         up_prev[t][r], channel);
      }
      // Broadcast down, root first.
      for (const std::uint32_t r : tree.order) {
        for (const std::uint32_t c : tree.children[r]) {
          deps.clear();
          if (r == tree.root) {
            for (const std::uint32_t rc : tree.children[r]) deps.push_back(up_cur[t][rc]);
          } else {
            deps.push_back(down_cur[t][r]);
          }
          down_cur[t][c] = plan.add_streamed(r, c, chunk, TransferKind::Copy, deps,
                                             down_prev[t][c], channel);
        }
      }
      std::swap(up_prev[t], up_cur[t]);
      std::swap(down_prev[t], down_cur[t]);
    }
  }
  // Flow fidelity: every chunk pays a step latency on each link in turn (P + 2·height - 1
  // latencies on the critical path), and the pipeline fills over 2·height links. The fill is
  // charged at half a chunk per link: links are shared by the two trees' up and down streams
  // (calibrated against step fidelity, test "engine: step and flow agree").
  const Bytes chunk_size = detail::first_chunk(bytes, tree_count * real_pipeline);
  plan.end_phase(plan.steps + real_pipeline - 1,
                 chunk_size * (plan.steps > 0 ? plan.steps - 1 : 0) * 0.5);
  if (options.flows_only) make_flows_only(plan, full_transfers);
  return plan;
}

}  // namespace gradsync
