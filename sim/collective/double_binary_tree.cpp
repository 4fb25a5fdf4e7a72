// NCCL's double binary tree (NVIDIA/nccl src/graph/trees.cc, ncclGetBtree/ncclGetDtree),
// reimplemented from its documented rules:
//  - tree 0 over nodes 0..N-1 is rooted at 0, whose only child is the largest power of two
//    below N (N > 1). Node v > 0 with lowest set bit b has parent (v - b) | 2b, or v - b when
//    that is out of range; its children are v - b/2 and v + b/2, the latter halved toward v
//    (v + b/4, …) until it is in range, or none when b = 1 (odd nodes are leaves).
//  - tree 1 mirrors tree 0 (node v plays N-1-v, root N-1) when N is even, and shifts it by one
//    (node v plays v-1 mod N, root 1) when N is odd.
// With N even, tree 0's interior nodes are even and tree 1's are odd, so each node forwards
// (has children) in at most one tree, and each tree's leaves are the other's interior nodes.
#include <array>
#include <cstdint>
#include <stdexcept>

#include "gradsync/collective/collective.hpp"

namespace gradsync {
namespace {

struct Links {
  std::uint32_t parent = kNoRank;
  std::array<std::uint32_t, 2> children{kNoRank, kNoRank};
};

Links btree_links(std::uint32_t n, std::uint32_t v) {
  Links links;
  if (v == 0) {
    std::uint32_t top = 1;
    while (top < n) top <<= 1;
    if (n > 1) links.children[0] = top >> 1;
    return links;
  }
  const std::uint32_t low = v & (~v + 1);  // lowest set bit
  const std::uint32_t up = (v ^ low) | (low << 1);
  links.parent = up < n ? up : (v ^ low);
  std::uint32_t half = low >> 1;
  if (half == 0) return links;
  links.children[0] = v - half;
  while (half != 0 && v + half >= n) half >>= 1;
  if (half != 0) links.children[1] = v + half;
  return links;
}

}  // namespace

std::array<BinaryTree, 2> build_double_binary_tree(std::uint32_t nodes) {
  if (nodes == 0) throw std::invalid_argument("build_double_binary_tree: zero nodes");
  std::array<BinaryTree, 2> trees;
  for (BinaryTree& tree : trees) {
    tree.parent.assign(nodes, kNoRank);
    tree.children.assign(nodes, {kNoRank, kNoRank});
  }
  const bool mirror = nodes % 2 == 0;
  // role(v): the tree-0 node that v plays in tree 1; back(u): the inverse.
  const auto role = [&](std::uint32_t v) { return mirror ? nodes - 1 - v : (v + nodes - 1) % nodes; };
  const auto back = [&](std::uint32_t u) {
    if (u == kNoRank) return kNoRank;
    return mirror ? nodes - 1 - u : (u + 1) % nodes;
  };
  for (std::uint32_t v = 0; v < nodes; ++v) {
    const Links own = btree_links(nodes, v);
    trees[0].parent[v] = own.parent;
    trees[0].children[v] = own.children;
    const Links played = btree_links(nodes, role(v));
    trees[1].parent[v] = back(played.parent);
    trees[1].children[v] = {back(played.children[0]), back(played.children[1])};
  }
  trees[0].root = 0;
  trees[1].root = back(0);
  return trees;
}

}  // namespace gradsync
