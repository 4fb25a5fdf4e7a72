// NVLSTree AllReduce (collective.hpp): NCCL's default for large messages on several NVSwitch
// servers of Hopper or later (NVIDIA/nccl src/device/all_reduce.h, runTreeSplit for
// NCCL_ALGO_NVLS_TREE). Per server, the NVSwitch reduces every GPU's data in the fabric
// (multimem.ld_reduce) and hands shard l to local GPU l; GPU l all-reduces its shard with GPU l
// of the other servers over its NIC along a binary tree of servers (NCCL's double binary
// tree); then GPU l stores the result into the switch (multimem.st), which multicasts it to
// the server's other GPUs.
//
// Ranks: GPUs 0..G-1 node-major (G = N·ppn), then the N switches: rank G + a is server a's
// NVSwitch. Chunk (c·ppn + l) is shard l of pipeline step c (S/(P·ppn) bytes); it uses tree
// (c + l) mod 2 of the double binary tree, so both trees carry half of every NIC's shards.
// Servers of different sizes (node_sizes, 8 + 4): the H GPUs of the smallest server are the
// heads, local GPUs 0 … H-1 of every server, shards of S/(P·H): NCCL's NVLS graph keeps the
// channels (heads) that every node's search found, the fewest (init.cc: the minimum over nodes).
// For server a, shard (c, l):
//   push(i):   GPU i → switch a, Reduce; after push(i) of the previous chunk (same port);
//   deliver:   switch a → GPU l, Copy; after every push of the chunk in server a;
//   up:        GPU l of a → GPU l of parent(a), Reduce; after a's delivery, the ups of a's
//              children, and the parent's delivery (whose Copy it must not race);
//   down:      GPU l of parent(a) → GPU l of a, Copy; after the parent holds the full sum;
//   store:     GPU l → switch a, Copy; once GPU l holds the full sum;
//   multicast: switch a → GPU i (i ≠ l), Copy; after the store.
// Per GPU port: S + S/ppn out, S in; per NIC: the tree traffic of S/ppn (binary tree: up to
// 3·S/(2·ppn) each way at interior servers, S/(2·ppn) at leaves). One phase: everything
// streams; steps = 4 + 2·ceil(log2 N).
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "gradsync/collective/collective.hpp"
#include "ring_pass.hpp"

namespace gradsync {
namespace {

// Servers of a tree ordered leaves first (decreasing depth), so children precede parents.
std::vector<std::uint32_t> bottom_up(const BinaryTree& tree) {
  const auto n = static_cast<std::uint32_t>(tree.parent.size());
  std::vector<std::uint32_t> depth(n, 0);
  for (std::uint32_t v = 0; v < n; ++v)
    for (std::uint32_t u = v; tree.parent[u] != kNoRank; u = tree.parent[u]) ++depth[v];
  std::vector<std::uint32_t> order(n);
  for (std::uint32_t v = 0; v < n; ++v) order[v] = v;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return depth[a] > depth[b]; });
  return order;
}

}  // namespace

Plan plan_nvls_tree_allreduce(std::uint32_t gpus, Bytes bytes, const NvlsTreeOptions& options) {
  constexpr const char* kPlanner = "plan_nvls_tree_allreduce";
  const std::uint32_t real_chunks = options.pipeline;
  // The servers' blocks of consecutive GPUs: ranks_per_node each, or node_sizes.
  std::vector<std::uint32_t> sizes = options.node_sizes;
  if (sizes.empty()) {
    detail::require_servers(kPlanner, gpus, options.ranks_per_node, real_chunks, bytes.bytes());
    sizes.assign(gpus / options.ranks_per_node, options.ranks_per_node);
  } else {
    std::uint64_t listed = 0;
    for (const std::uint32_t m : sizes) {
      detail::require(m >= 1 && m <= 256, kPlanner, "a server holds 1..256 GPUs");
      listed += m;
    }
    detail::require(listed == gpus, kPlanner,
                    fmt::format("node_sizes list {} GPUs, not {}", listed, gpus));
    detail::require_servers(kPlanner, gpus, 1, real_chunks, bytes.bytes());
  }
  std::vector<std::uint32_t> first;
  for (std::uint32_t a = 0, at = 0; a < sizes.size(); at += sizes[a++]) first.push_back(at);
  const auto nodes = static_cast<std::uint32_t>(sizes.size());
  // Heads (shards per step): one per GPU of the smallest server, local GPUs 0 … H-1 of each.
  const std::uint32_t heads = *std::min_element(sizes.begin(), sizes.end());
  // Flows-only: step c uses tree (c + l) mod 2 for shard l, so two steps hold every connection.
  const std::uint32_t chunks = detail::built_steps(options.flows_only, real_chunks, 2);
  const std::uint64_t per_step =
      std::uint64_t{heads} * (2 * std::uint64_t{gpus} + nodes + 2 * std::uint64_t{nodes - 1});
  detail::require(per_step * real_chunks < kNoTransfer && std::uint64_t{gpus} + nodes < kNoRank,
                  kPlanner, "too large a plan");

  Plan plan;
  plan.op = CollectiveOp::AllReduce;
  plan.algorithm = Algorithm::NvlsTree;
  plan.ranks = gpus + nodes;
  plan.contributors = gpus;
  plan.total_bytes = bytes;
  plan.chunk_bytes = detail::fold_chunks(
      split_bytes(bytes, real_chunks * heads), real_chunks, chunks, heads,
      [heads](std::uint32_t c, std::uint32_t l, std::uint32_t) { return c * heads + l; });
  plan.channels = 2;
  detail::reserve_transfers(plan, per_step * chunks, kPlanner);

  const std::array<BinaryTree, 2> trees = build_double_binary_tree(nodes);
  const std::array<std::vector<std::uint32_t>, 2> order{bottom_up(trees[0]), bottom_up(trees[1])};
  const auto gpu = [&](std::uint32_t node, std::uint32_t local) { return first[node] + local; };
  const auto nvswitch = [&](std::uint32_t node) { return gpus + node; };

  std::vector<TransferId> last_push(gpus, kNoTransfer);       // per GPU port
  // Per switch → GPU connection, two streams: deliveries of the GPU's own shards and
  // multicasts of the others' (one chain would make every shard wait for the previous one's
  // round trip between servers).
  std::vector<TransferId> last_delivery(gpus, kNoTransfer);
  std::vector<TransferId> last_multicast(gpus, kNoTransfer);
  std::vector<TransferId> last_store(gpus, kNoTransfer);      // per GPU → switch (store)
  // Per (tree, GPU): the last tree message up from / down to that GPU.
  std::vector<TransferId> last_up(2 * std::size_t{gpus}, kNoTransfer);
  std::vector<TransferId> last_down(2 * std::size_t{gpus}, kNoTransfer);
  std::vector<TransferId> pushes, delivered(nodes), up(nodes), full(nodes);

  for (std::uint32_t c = 0; c < chunks; ++c) {
    for (std::uint32_t l = 0; l < heads; ++l) {
      const std::uint32_t chunk = c * heads + l;
      const auto t = static_cast<std::uint8_t>((c + l) % 2);
      const BinaryTree& tree = trees[t];
      const auto children_up = [&](std::uint32_t a) {
        std::vector<TransferId> out;
        for (std::uint32_t child : tree.children[a])
          if (child != kNoRank) out.push_back(up[child]);
        return out;
      };
      // What GPU l of server a waits for before it holds the full sum: the copy down from its
      // parent, or at the root its delivery and its children's ups.
      const auto holds_sum = [&](std::uint32_t a) {
        if (full[a] != kNoTransfer) return std::vector<TransferId>{full[a]};
        std::vector<TransferId> out{delivered[a]};
        const std::vector<TransferId> children = children_up(a);
        out.insert(out.end(), children.begin(), children.end());
        return out;
      };
      // In-switch reduction, then the server's sum to GPU l.
      for (std::uint32_t a = 0; a < nodes; ++a) {
        pushes.clear();
        for (std::uint32_t i = 0; i < sizes[a]; ++i) {
          const std::uint32_t g = gpu(a, i);
          pushes.push_back(last_push[g] = plan.add_streamed(g, nvswitch(a), chunk,
                                                            TransferKind::Reduce, {}, last_push[g], t));
        }
        const std::uint32_t g = gpu(a, l);
        // The last push first (dep0: the data dependency check_plan searches first).
        std::rotate(pushes.begin(), pushes.end() - 1, pushes.end());
        delivered[a] = last_delivery[g] = plan.add_streamed(nvswitch(a), g, chunk,
                                                            TransferKind::Copy, pushes,
                                                            last_delivery[g], t);
      }
      // Up the tree: a server's partial sum (its own and its children's) to its parent, after
      // the parent's own delivery (a Copy into the same buffer).
      for (std::uint32_t a : order[t]) {
        const std::uint32_t parent = tree.parent[a];
        if (parent == kNoRank) {
          up[a] = kNoTransfer;
          continue;
        }
        std::vector<TransferId> data{delivered[a]};
        const std::vector<TransferId> children = children_up(a);
        data.insert(data.end(), children.begin(), children.end());
        data.push_back(delivered[parent]);
        TransferId& previous = last_up[t * std::size_t{gpus} + gpu(a, l)];
        up[a] = previous = plan.add_streamed(gpu(a, l), gpu(parent, l), chunk,
                                             TransferKind::Reduce, data, previous, t);
      }
      // Down the tree: the full sum from the root to every server (parents before children).
      // full[a]: the transfer after which GPU l of server a holds the full sum (kNoTransfer for
      // the root, which holds it once its delivery and its children's ups have arrived).
      for (auto it = order[t].rbegin(); it != order[t].rend(); ++it) {
        const std::uint32_t a = *it;
        const std::uint32_t parent = tree.parent[a];
        if (parent == kNoRank) {
          full[a] = kNoTransfer;
          continue;
        }
        TransferId& previous = last_down[t * std::size_t{gpus} + gpu(a, l)];
        full[a] = previous = plan.add_streamed(gpu(parent, l), gpu(a, l), chunk,
                                               TransferKind::Copy, holds_sum(parent), previous, t);
      }
      // Multicast inside each server: GPU l stores the full sum, the switch writes it to the rest.
      for (std::uint32_t a = 0; a < nodes; ++a) {
        const std::uint32_t g = gpu(a, l);
        const TransferId store = last_store[g] = plan.add_streamed(
            g, nvswitch(a), chunk, TransferKind::Copy, holds_sum(a), last_store[g], t);
        for (std::uint32_t i = 0; i < sizes[a]; ++i) {
          if (i == l) continue;
          const std::uint32_t dst = gpu(a, i);
          last_multicast[dst] = plan.add_streamed(nvswitch(a), dst, chunk, TransferKind::Copy,
                                                  std::array{store}, last_multicast[dst], t);
        }
      }
    }
  }
  std::uint32_t height = 0;
  while ((1u << height) < nodes) ++height;
  plan.steps = 4 + 2 * height;
  // One phase: pushes, tree and multicast stream; the fill is one pipeline step per stage.
  const Bytes step_bytes = Bytes(bytes.bytes() / real_chunks);
  plan.end_phase(plan.steps, Bytes(step_bytes.bytes() * (plan.steps - 1) / heads + step_bytes.bytes()));
  if (options.flows_only) make_flows_only(plan, per_step * real_chunks);
  return plan;
}

}  // namespace gradsync
