// Collective planners and the plan checker. Every planner, over many rank counts, channels and
// pipeline depths, must produce a plan that check_plan() accepts (every rank ends with the
// right contributions, no races, no double counting), with the per-rank bytes and step counts
// of its closed form (sim/collective/README.md). The dependency depth of each plan (its length
// in transfers, each counted as one unit of time) shows pipelining: a pipelined tree takes
// 2·height + P - 1 units, not 2·height·P. Then check_plan() itself is shown to reject broken
// plans: a missing dependency, a contribution counted twice, a rank missing a chunk, ...
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <set>
#include <vector>

#include "gradsync/collective/collective.hpp"
#include "gradsync/scenario/scenario.hpp"
#include "gradsync/units/units.hpp"

using namespace gradsync;
using namespace gradsync::literals;

namespace {

constexpr std::array<std::uint32_t, 8> kRankCounts{1, 2, 3, 4, 7, 8, 16, 64};

// The SHARP switch each local GPU index reaches: one switch (0) for all, or rail switch l.
std::vector<std::uint32_t> sharp_of_local(std::uint32_t ppn, bool rails) {
  std::vector<std::uint32_t> sharp(ppn, 0);
  if (rails)
    for (std::uint32_t l = 0; l < ppn; ++l) sharp[l] = l;
  return sharp;
}

// Longest dependency chain, counting each transfer as one time unit.
std::uint32_t dependency_depth(const Plan& plan) {
  std::vector<std::uint32_t> finish(plan.transfers.size(), 0);
  std::uint32_t depth = 0;
  for (TransferId id = 0; id < plan.transfers.size(); ++id) {
    std::uint32_t start = 0;
    plan.for_each_dep(id, [&](TransferId d) { start = std::max(start, finish[d]); });
    finish[id] = start + 1;
    depth = std::max(depth, finish[id]);
  }
  return depth;
}

std::size_t dependency_count(const Plan& plan, TransferId id) {
  std::size_t n = 0;
  plan.for_each_dep(id, [&](TransferId) { ++n; });
  return n;
}

double total(const std::vector<Bytes>& per_rank) {
  double sum = 0.0;
  for (const Bytes b : per_rank) sum += b.bytes();
  return sum;
}

std::uint32_t ceil_log2(std::uint32_t n) {
  std::uint32_t bits = 0;
  while ((std::uint32_t{1} << bits) < n) ++bits;
  return bits;
}

#define REQUIRE_PLAN_OK(plan)                    \
  do {                                           \
    const PlanCheck check_ = check_plan(plan);   \
    INFO(check_.problem);                        \
    REQUIRE(check_.ok);                          \
  } while (false)

}  // namespace

// ---- ring ----------------------------------------------------------------------------------

TEST_CASE("collective names: every op's spelling reads back, in the enum's order") {
  const std::vector<std::string> names = gradsync::collective_op_names();
  REQUIRE(names.size() == 5);
  CHECK(names.front() == "allreduce");
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto op = gradsync::collective_op_from_string(names[i]);
    REQUIRE(op.has_value());
    CHECK(static_cast<std::size_t>(*op) == i);
    CHECK(gradsync::to_string(*op) == names[i]);
  }
  CHECK_FALSE(gradsync::collective_op_from_string("all_reduce").has_value());
}

TEST_CASE("ring allreduce: 2(n-1) steps, 2(n-1)/n·S per rank, correct for every n") {
  for (const std::uint32_t n : kRankCounts) {
    for (const std::uint32_t channels : {1U, 2U, 4U}) {
      for (const std::uint32_t pipeline : {1U, 3U}) {
        CAPTURE(n);
        CAPTURE(channels);
        CAPTURE(pipeline);
        // A size that splits evenly, so the byte counts are exact.
        const Bytes s{4096.0 * n * channels * pipeline};
        const Plan plan = plan_ring_allreduce(n, s, {.channels = channels, .pipeline = pipeline});
        REQUIRE_PLAN_OK(plan);
        CHECK(plan.op == CollectiveOp::AllReduce);
        CHECK(plan.algorithm == Algorithm::Ring);
        CHECK(plan.steps == 2 * (n - 1));
        CHECK(plan.channels == channels);
        CHECK(plan.chunks() == std::size_t{n} * channels * pipeline);
        CHECK(plan.transfers.size() == std::size_t{2} * (n - 1) * n * channels * pipeline);
        // Lanes are independent rings: the dependency depth is 2(n-1) whatever the pipeline.
        CHECK(dependency_depth(plan) == 2 * (n - 1));
        const double per_rank = 2.0 * (n - 1) / n * s.bytes();
        for (const Bytes b : plan.bytes_sent_per_rank()) CHECK(b.bytes() == per_rank);
        for (const Bytes b : plan.bytes_received_per_rank()) CHECK(b.bytes() == per_rank);
        // Every channel carries 1/channels of the traffic.
        std::vector<double> per_channel(channels, 0.0);
        for (const Transfer& t : plan.transfers) per_channel[t.channel] += plan.bytes_of(t).bytes();
        for (const double b : per_channel) CHECK(b == doctest::Approx(n * per_rank / channels));
        // Each transfer waits for at most the data and the previous send on its link.
        for (TransferId id = 0; id < plan.transfers.size(); ++id)
          CHECK(dependency_count(plan, id) <= 2);
      }
    }
  }
}

TEST_CASE("ring allreduce: the ring is 0 → 1 → … → n-1 → 0 and step 1 follows step 0") {
  const Plan plan = plan_ring_allreduce(4, 4_KiB);
  for (const Transfer& t : plan.transfers) CHECK(t.dst == (t.src + 1) % 4);
  // Rank 1's first send reduces block 0 into rank 2; its second forwards block 3, which it
  // received from rank 0 in step 0.
  const Transfer& second = plan.transfers[4 + 1];
  CHECK(second.src == 1);
  CHECK(second.chunk == 3);
  CHECK(second.kind == TransferKind::Reduce);
  CHECK(plan.transfers[second.dep0].src == 0);
  CHECK(plan.transfers[second.dep0].chunk == 3);
  CHECK(plan.transfers[second.dep1].src == 1);  // previous send on the same link
  // The all-gather copies.
  CHECK(plan.transfers.back().kind == TransferKind::Copy);
}

TEST_CASE("ring reduce-scatter and all-gather: n-1 steps, (n-1)/n·S per rank") {
  for (const std::uint32_t n : kRankCounts) {
    for (const std::uint32_t channels : {1U, 3U}) {
      for (const std::uint32_t pipeline : {1U, 2U}) {
        CAPTURE(n);
        CAPTURE(channels);
        CAPTURE(pipeline);
        const Bytes s{1024.0 * n * channels * pipeline};
        const double per_rank = (n - 1.0) / n * s.bytes();
        for (const Plan& plan :
             {plan_ring_reduce_scatter(n, s, {.channels = channels, .pipeline = pipeline}),
              plan_ring_allgather(n, s, {.channels = channels, .pipeline = pipeline})}) {
          CAPTURE(to_string(plan.op));
          REQUIRE_PLAN_OK(plan);
          CHECK(plan.steps == n - 1);
          CHECK(dependency_depth(plan) == n - 1);
          REQUIRE(plan.chunk_owner.size() == plan.chunks());
          // Rank r owns block r: chunks r·C·P .. (r+1)·C·P - 1.
          for (std::size_t c = 0; c < plan.chunks(); ++c)
            CHECK(plan.chunk_owner[c] == c / (channels * pipeline));
          for (const Bytes b : plan.bytes_sent_per_rank()) CHECK(b.bytes() == per_rank);
          for (const Bytes b : plan.bytes_received_per_rank()) CHECK(b.bytes() == per_rank);
        }
      }
    }
  }
}

TEST_CASE("ring broadcast and reduce: a pipelined chain, n-1 + P-1 deep") {
  for (const std::uint32_t n : kRankCounts) {
    for (const std::uint32_t pipeline : {1U, 4U}) {
      for (const std::uint32_t root : {0U, n / 2, n - 1}) {
        CAPTURE(n);
        CAPTURE(pipeline);
        CAPTURE(root);
        const Bytes s{1000.0 * pipeline * 2};
        const Plan bcast = plan_ring_broadcast(n, root, s, {.channels = 2, .pipeline = pipeline});
        const Plan reduce = plan_ring_reduce(n, root, s, {.channels = 2, .pipeline = pipeline});
        REQUIRE_PLAN_OK(bcast);
        REQUIRE_PLAN_OK(reduce);
        for (const Plan* plan : {&bcast, &reduce}) {
          CHECK(plan->steps == n - 1);
          CHECK(plan->transfers.size() == std::size_t{n - 1} * 2 * pipeline);
          CHECK(dependency_depth(*plan) == (n == 1 ? 0 : n - 1 + pipeline - 1));
        }
        // Broadcast: every rank but root-1 (the chain's end) sends S; every rank but the root
        // receives S. Reduce: every rank but the root sends S; every rank but root+1 receives S.
        const auto sent_b = bcast.bytes_sent_per_rank();
        const auto recv_b = bcast.bytes_received_per_rank();
        const auto sent_r = reduce.bytes_sent_per_rank();
        const auto recv_r = reduce.bytes_received_per_rank();
        for (std::uint32_t r = 0; r < n; ++r) {
          const bool chain_end = r == (root + n - 1) % n;
          const bool chain_start = r == (root + 1) % n;
          CHECK(sent_b[r].bytes() == (n > 1 && !chain_end ? s.bytes() : 0.0));
          CHECK(recv_b[r].bytes() == (r != root ? s.bytes() : 0.0));
          CHECK(sent_r[r].bytes() == (r != root ? s.bytes() : 0.0));
          CHECK(recv_r[r].bytes() == (n > 1 && !chain_start ? s.bytes() : 0.0));
        }
      }
    }
  }
}

// ---- double binary tree -------------------------------------------------------------------

TEST_CASE("double binary tree: both trees span the nodes, NCCL's roots and shapes") {
  for (std::uint32_t nodes = 1; nodes <= 130; ++nodes) {
    CAPTURE(nodes);
    const auto trees = build_double_binary_tree(nodes);
    CHECK(trees[0].root == 0);
    CHECK(trees[1].root == (nodes % 2 == 1 && nodes > 1 ? 1U : nodes - 1));
    for (const BinaryTree& tree : trees) {
      CHECK(tree.parent[tree.root] == kNoRank);
      // Parent and child links agree, and every node is reached from the root.
      std::size_t edges = 0;
      for (std::uint32_t v = 0; v < nodes; ++v) {
        for (const std::uint32_t c : tree.children[v]) {
          if (c == kNoRank) continue;
          ++edges;
          CHECK(tree.parent[c] == v);
        }
        if (v != tree.root) {
          REQUIRE(tree.parent[v] < nodes);
          const auto& siblings = tree.children[tree.parent[v]];
          CHECK((siblings[0] == v || siblings[1] == v));
        }
      }
      CHECK(edges == nodes - 1);
      std::vector<std::uint32_t> depth(nodes, 0);
      std::vector<std::uint32_t> order{tree.root};
      std::uint32_t height = 0;
      for (std::size_t i = 0; i < order.size(); ++i)
        for (const std::uint32_t c : tree.children[order[i]])
          if (c != kNoRank) {
            depth[c] = depth[order[i]] + 1;
            height = std::max(height, depth[c]);
            order.push_back(c);
          }
      CHECK(order.size() == nodes);
      CHECK(height == ceil_log2(nodes));
      // The root has a single child, as in NCCL.
      CHECK(tree.children[tree.root][1] == kNoRank);
    }
  }
  // NCCL's illustration for 14 ranks: 0 → 8 → {4, 12}, 12 → {10, 13}.
  const auto t14 = build_double_binary_tree(14);
  CHECK(t14[0].children[0] == std::array<std::uint32_t, 2>{8, kNoRank});
  CHECK(t14[0].children[8] == std::array<std::uint32_t, 2>{4, 12});
  CHECK(t14[0].children[12] == std::array<std::uint32_t, 2>{10, 13});
  CHECK(t14[0].parent[13] == 12);
}

TEST_CASE("double binary tree: with an even node count each node forwards in at most one tree") {
  for (std::uint32_t nodes = 2; nodes <= 128; nodes += 2) {
    CAPTURE(nodes);
    const auto trees = build_double_binary_tree(nodes);
    for (std::uint32_t v = 0; v < nodes; ++v) {
      const bool interior0 = trees[0].children[v][0] != kNoRank;
      const bool interior1 = trees[1].children[v][0] != kNoRank;
      CHECK(!(interior0 && interior1));
    }
  }
  // With an odd count the shifted tree makes node 0 interior in both (NCCL accepts this).
  const auto odd = build_double_binary_tree(13);
  CHECK(odd[0].children[0][0] != kNoRank);
  CHECK(odd[1].children[0][0] != kNoRank);
}

TEST_CASE("tree allreduce: correct, 2·height steps, pipelined to 2·height + P - 1") {
  for (const std::uint32_t n : kRankCounts) {
    for (const std::uint32_t ppn : {1U, 2U, 4U, 8U}) {
      if (n % ppn != 0) continue;
      for (const std::uint32_t pipeline : {1U, 4U}) {
        CAPTURE(n);
        CAPTURE(ppn);
        CAPTURE(pipeline);
        const std::uint32_t nodes = n / ppn;
        const Bytes s{2048.0 * pipeline};
        const Plan plan =
            plan_tree_allreduce(n, s, {.ranks_per_node = ppn, .pipeline = pipeline});
        REQUIRE_PLAN_OK(plan);
        CHECK(plan.algorithm == Algorithm::Tree);
        CHECK(plan.channels == 2);
        const std::uint32_t height = n == 1 ? 0 : ceil_log2(nodes) + ppn - 1;
        CHECK(plan.steps == 2 * height);
        CHECK(dependency_depth(plan) == (n == 1 ? 0 : 2 * height + pipeline - 1));
        // Each tree is a spanning tree over the ranks, S/2 each way on each of its n-1 edges:
        // 2(n-1)·S in all, like a ring. Every rank sends what it receives.
        CHECK(plan.transfers.size() == std::size_t{4} * (n - 1) * pipeline);
        CHECK(total(plan.bytes_sent_per_rank()) == 2.0 * (n - 1) * s.bytes());
        const auto sent = plan.bytes_sent_per_rank();
        const auto received = plan.bytes_received_per_rank();
        for (std::uint32_t r = 0; r < n; ++r) CHECK(sent[r] == received[r]);
        // Tree 0 carries the first half of the data, tree 1 the second.
        for (const Transfer& t : plan.transfers) CHECK(t.channel == t.chunk / pipeline);
        // Tree 1's chain runs the other way: with several ranks per node, the two trees'
        // inter-node traffic leaves from local 0 and local ppn-1.
        for (const Transfer& t : plan.transfers) {
          if (t.src / ppn == t.dst / ppn) continue;
          const std::uint32_t head = t.channel == 0 ? 0 : ppn - 1;
          CHECK(t.src % ppn == head);
          CHECK(t.dst % ppn == head);
        }
      }
    }
  }
}

TEST_CASE("tree allreduce with one pair of trees per NIC: every GPU carries 4S/trees off-node") {
  // 4 nodes of 8 GPUs with 8 NICs (one per GPU): 16 trees, pair p hangs from local rank p.
  const std::uint32_t ppn = 8, nodes = 4, n = ppn * nodes, trees = 16;
  for (const std::uint32_t pipeline : {1U, 3U}) {
    CAPTURE(pipeline);
    const Bytes s{1024.0 * trees * pipeline};
    const Plan plan = plan_tree_allreduce(
        n, s, {.ranks_per_node = ppn, .pipeline = pipeline, .trees = trees});
    REQUIRE_PLAN_OK(plan);
    CHECK(plan.channels == trees);
    CHECK(plan.steps == 2 * (ceil_log2(nodes) + ppn - 1));
    CHECK(total(plan.bytes_sent_per_rank()) == doctest::Approx(2.0 * (n - 1) * s.bytes()));
    // Off-node bytes sent and received per (node, local rank): a node is interior in one shape
    // and a leaf in the other, so each GPU (NIC) moves at most 4·S/trees each way, and the 8
    // GPUs of a node all take part. (With one head per node, one NIC would carry it all.)
    std::vector<double> out(n, 0.0), in(n, 0.0);
    for (const Transfer& t : plan.transfers) {
      if (t.src / ppn == t.dst / ppn) continue;
      CHECK(t.src % ppn == (t.channel / 2) * ppn / (trees / 2));
      CHECK(t.dst % ppn == t.src % ppn);
      out[t.src] += plan.chunk_bytes[t.chunk].bytes();
      in[t.dst] += plan.chunk_bytes[t.chunk].bytes();
    }
    for (std::uint32_t r = 0; r < n; ++r) {
      CAPTURE(r);
      CHECK(out[r] > 0.0);
      CHECK(out[r] <= 4.0 * s.bytes() / trees * (1 + 1e-12));
      CHECK(in[r] <= 4.0 * s.bytes() / trees * (1 + 1e-12));
    }
  }
  CHECK_THROWS_AS(plan_tree_allreduce(8, Bytes(64.0), {.ranks_per_node = 4, .trees = 3}),
                  std::invalid_argument);
}

TEST_CASE("tree allreduce, one rank per node, power of two: ends send S, the rest 2S") {
  for (const std::uint32_t n : {2U, 4U, 8U, 16U, 64U}) {
    CAPTURE(n);
    const Bytes s = 64_KiB;
    const Plan plan = plan_tree_allreduce(n, s, {.pipeline = 8});
    REQUIRE_PLAN_OK(plan);
    const auto sent = plan.bytes_sent_per_rank();
    const auto received = plan.bytes_received_per_rank();
    for (std::uint32_t r = 0; r < n; ++r) {
      const double expected = (r == 0 || r == n - 1) ? s.bytes() : 2.0 * s.bytes();
      CHECK(sent[r].bytes() == expected);
      CHECK(received[r].bytes() == expected);
    }
    // A rank that forwards (receives a reduction from a child) does so in one tree only.
    std::vector<std::array<bool, 2>> interior(n, {false, false});
    for (const Transfer& t : plan.transfers)
      if (t.kind == TransferKind::Reduce) interior[t.dst][t.channel] = true;
    for (std::uint32_t r = 0; r < n; ++r) CHECK(!(interior[r][0] && interior[r][1]));
  }
}

TEST_CASE("tree allreduce: chunk k goes up once chunk k arrived from every child") {
  // 8 nodes of 2 ranks: node heads have up to 3 children (chain successor and two nodes).
  const std::uint32_t pipeline = 3;
  const Plan plan = plan_tree_allreduce(16, 96_KiB, {.ranks_per_node = 2, .pipeline = pipeline});
  REQUIRE_PLAN_OK(plan);
  std::size_t max_deps = 0;
  for (TransferId id = 0; id < plan.transfers.size(); ++id) {
    const Transfer& t = plan.transfers[id];
    max_deps = std::max(max_deps, dependency_count(plan, id));
    if (t.kind != TransferKind::Reduce) continue;
    // Its dependencies: the same chunk reduced into the sender by each child, and the
    // sender's previous chunk on this link. Nothing else.
    std::size_t same_chunk = 0;
    std::size_t previous_chunk = 0;
    plan.for_each_dep(id, [&](TransferId d) {
      const Transfer& dep = plan.transfers[d];
      CHECK(dep.kind == TransferKind::Reduce);
      if (dep.chunk == t.chunk) {
        CHECK(dep.dst == t.src);
        ++same_chunk;
      } else {
        CHECK(dep.chunk + 1 == t.chunk);
        CHECK(dep.src == t.src);
        CHECK(dep.dst == t.dst);
        ++previous_chunk;
      }
    });
    std::size_t children = 0;
    for (const Transfer& other : plan.transfers)
      if (other.kind == TransferKind::Reduce && other.dst == t.src && other.chunk == t.chunk)
        ++children;
    CHECK(same_chunk == children);
    CHECK(previous_chunk == (t.chunk % pipeline == 0 ? 0U : 1U));
  }
  CHECK(max_deps == 4);  // a node head: 3 children + its previous chunk
  CHECK(!plan.extra_deps.empty());
}

// ---- hierarchical --------------------------------------------------------------------------

TEST_CASE("hierarchical allreduce: intra-node ring, per-rail ring across nodes, intra ring") {
  struct Shape {
    std::uint32_t ranks;
    std::uint32_t ppn;
  };
  for (const Shape shape : {Shape{1, 1}, Shape{2, 1}, Shape{2, 2}, Shape{3, 1}, Shape{4, 2},
                            Shape{7, 7}, Shape{7, 1}, Shape{6, 3}, Shape{8, 4}, Shape{8, 8},
                            Shape{16, 4}, Shape{64, 8}}) {
    for (const std::uint32_t pipeline : {1U, 2U}) {
      const std::uint32_t n = shape.ranks;
      const std::uint32_t ppn = shape.ppn;
      const std::uint32_t nodes = n / ppn;
      CAPTURE(n);
      CAPTURE(ppn);
      CAPTURE(pipeline);
      const Bytes s{512.0 * n * pipeline};
      const Plan plan =
          plan_hierarchical_allreduce(n, s, {.ranks_per_node = ppn, .pipeline = pipeline});
      REQUIRE_PLAN_OK(plan);
      CHECK(plan.algorithm == Algorithm::Hierarchical);
      CHECK(plan.steps == 2 * (ppn - 1) + 2 * (nodes - 1));
      CHECK(plan.channels == ppn);
      CHECK(dependency_depth(plan) == plan.steps);
      std::vector<double> intra(n, 0.0), inter(n, 0.0);
      for (const Transfer& t : plan.transfers) {
        const bool same_node = t.src / ppn == t.dst / ppn;
        (same_node ? intra : inter)[t.src] += plan.bytes_of(t).bytes();
        // Across nodes, only ranks of the same rail talk.
        if (!same_node) CHECK(t.src % ppn == t.dst % ppn);
      }
      for (std::uint32_t r = 0; r < n; ++r) {
        CHECK(intra[r] == doctest::Approx(2.0 * (ppn - 1) / ppn * s.bytes()));
        CHECK(inter[r] == doctest::Approx(2.0 * (nodes - 1) / nodes * s.bytes() / ppn));
        CHECK(intra[r] + inter[r] == doctest::Approx(2.0 * (n - 1) / n * s.bytes()));
      }
    }
  }
}

TEST_CASE("hierarchical allreduce over several local orders: each walks its ring, same bytes") {
  // Two servers of 4 GPUs whose NVLink rings are 0 3 2 1 and 0 1 3 2 (a partial mesh): each
  // order carries half the data; intra-node sends follow the orders' successors only.
  const std::vector<std::vector<std::uint32_t>> orders{{0, 3, 2, 1}, {0, 1, 3, 2}};
  const std::uint32_t n = 8, ppn = 4;
  const Bytes s{4096.0 * n};
  const Plan plan = plan_hierarchical_allreduce(
      n, s, {.ranks_per_node = ppn, .pipeline = 2, .local_orders = orders});
  REQUIRE_PLAN_OK(plan);
  CHECK(plan.channels == 2 * ppn);
  CHECK(dependency_depth(plan) == plan.steps);
  std::vector<double> intra(n, 0.0), inter(n, 0.0);
  std::set<std::pair<std::uint32_t, std::uint32_t>> local_hops;
  for (const Transfer& t : plan.transfers) {
    const bool same_node = t.src / ppn == t.dst / ppn;
    (same_node ? intra : inter)[t.src] += plan.bytes_of(t).bytes();
    if (same_node) local_hops.insert({t.src % ppn, t.dst % ppn});
    else CHECK(t.src % ppn == t.dst % ppn);
  }
  // The successors of both rings, nothing else (0 -> 2 is in neither).
  CHECK(local_hops == std::set<std::pair<std::uint32_t, std::uint32_t>>{
                          {0, 3}, {3, 2}, {2, 1}, {1, 0}, {0, 1}, {1, 3}, {2, 0}});
  for (std::uint32_t r = 0; r < n; ++r) {
    CHECK(intra[r] == doctest::Approx(2.0 * (ppn - 1) / ppn * s.bytes()));
    CHECK(inter[r] == doctest::Approx(2.0 * 1 / 2 * s.bytes() / ppn));
  }
  CHECK_THROWS_AS((void)plan_hierarchical_allreduce(
                      n, s, {.ranks_per_node = ppn, .local_orders = {{0, 1, 1, 2}}}),
                  std::invalid_argument);
}

TEST_CASE("tree allreduce with local orders chains each pair along its order") {
  // Two servers of 4 GPUs; pair 0 chains along 0 3 2 1, pair 1 along 2 0 1 3 (cyclic orders
  // of a mesh): every hop inside a server joins neighbours of one order, and each pair's
  // trees leave a server from its order's first GPU.
  const std::vector<std::vector<std::uint32_t>> orders{{0, 3, 2, 1}, {2, 0, 1, 3}};
  const std::uint32_t n = 8, ppn = 4;
  const Plan plan = plan_tree_allreduce(
      n, Bytes{64.0 * 1024}, {.ranks_per_node = ppn, .pipeline = 2, .trees = 4, .local_orders = orders});
  REQUIRE_PLAN_OK(plan);
  const auto neighbours = [&](std::uint32_t a, std::uint32_t b) {
    for (const auto& o : orders)
      for (std::size_t k = 0; k < o.size(); ++k) {
        const std::uint32_t x = o[k], y = o[(k + 1) % o.size()];
        if ((a == x && b == y) || (a == y && b == x)) return true;
      }
    return false;
  };
  std::set<std::uint32_t> leaving;
  for (const Transfer& t : plan.transfers) {
    if (t.src / ppn == t.dst / ppn) {
      CHECK(neighbours(t.src % ppn, t.dst % ppn));
    } else {
      leaving.insert(t.src % ppn);
    }
  }
  CHECK(leaving == std::set<std::uint32_t>{0, 2});  // the orders' first GPUs
  CHECK_THROWS_AS((void)plan_tree_allreduce(
                      n, Bytes{1024.0}, {.ranks_per_node = ppn, .trees = 4, .local_orders = {{0, 0, 1, 2}}}),
                  std::invalid_argument);
}

TEST_CASE("tree allreduce over servers of 8 and 4 ranks: each chains its own, heads spread") {
  // 12 ranks as torchrun places them on 8-GPU servers: ranks 0-7 on server 0, 8-11 on server 1.
  const std::vector<std::uint32_t> sizes{8, 4};
  const std::uint32_t n = 12, trees = 8, pairs = trees / 2, pipeline = 2;
  const auto server = [](std::uint32_t r) { return r < 8 ? 0U : 1U; };
  const auto local = [](std::uint32_t r) { return r < 8 ? r : r - 8; };
  const Bytes s{1024.0 * trees * pipeline};
  const Plan plan = plan_tree_allreduce(
      n, s, {.pipeline = pipeline, .trees = trees, .node_sizes = sizes});
  REQUIRE_PLAN_OK(plan);
  CHECK(plan.channels == trees);
  // Two servers: one tree level between them, then the longer server's chain of 8.
  CHECK(plan.steps == 2 * (1 + 8 - 1));
  CHECK(total(plan.bytes_sent_per_rank()) == doctest::Approx(2.0 * (n - 1) * s.bytes()));
  // Off-server traffic leaves server k (m ranks) from local p·m/pairs for pair p: 0 2 4 6 on
  // the 8, 0 1 2 3 on the 4, each of the 4's GPUs (NICs) with one pair: with two servers one
  // is each shape's root, so a head sends S/trees up one shape and S/trees down the other.
  std::vector<double> out(n, 0.0);
  for (const Transfer& t : plan.transfers) {
    if (server(t.src) == server(t.dst)) continue;
    const std::uint32_t p = t.channel / 2;
    CHECK(local(t.src) == p * (server(t.src) == 0 ? 8 : 4) / pairs);
    CHECK(local(t.dst) == p * (server(t.dst) == 0 ? 8 : 4) / pairs);
    out[t.src] += plan.chunk_bytes[t.chunk].bytes();
  }
  for (std::uint32_t r = 8; r < n; ++r) CHECK(out[r] == doctest::Approx(2.0 * s.bytes() / trees));
  for (std::uint32_t r : {1U, 3U, 5U, 7U}) CHECK(out[r] == 0.0);
  // Per-server orders: server 1 chains along 0 2 1 3 (an NVLink ring of its own).
  const Plan ordered = plan_tree_allreduce(
      n, s, {.trees = 2, .node_sizes = sizes, .server_orders = {{}, {{0, 2, 1, 3}}}});
  REQUIRE_PLAN_OK(ordered);
  for (const Transfer& t : ordered.transfers) {
    if (server(t.src) != 1 || server(t.dst) != 1) continue;
    const std::uint32_t a = local(t.src), b = local(t.dst);
    CHECK(((a == 0 && b == 2) || (a == 2 && b == 0) || (a == 2 && b == 1) || (a == 1 && b == 2) ||
           (a == 1 && b == 3) || (a == 3 && b == 1)));
  }
  // Through plan_collective: server 0 an NVLink mesh with its per-channel paths, server 1
  // without rings (its rank order only, mesh_server_paths): server 1 still spreads the pairs'
  // heads over both its GPUs (p·2/4: 0, 0, 1, 1), server 0 leaves from each path's first GPU.
  CollectiveRequest r;
  r.algorithm = Algorithm::Tree;
  r.ranks = 10;
  r.node_sizes = {8, 2};
  r.channels = 4;
  r.bytes = Bytes(1048576.0);
  r.mesh_server_paths = {{{0, 3, 2, 1, 5, 6, 7, 4}, {4, 7, 6, 5, 1, 2, 3, 0},
                          {2, 0, 1, 3, 7, 5, 4, 6}, {6, 4, 5, 7, 3, 1, 0, 2}},
                         {{0, 1}}};
  std::set<std::uint32_t> heads_0, heads_1;
  for (const Transfer& t : plan_collective(r).transfers) {
    if ((t.src < 8) == (t.dst < 8)) continue;
    (t.src < 8 ? heads_0 : heads_1).insert(t.src);
  }
  CHECK(heads_0 == std::set<std::uint32_t>{0, 2, 4, 6});
  CHECK(heads_1 == std::set<std::uint32_t>{8, 9});
  CHECK_THROWS_AS((void)plan_tree_allreduce(n, s, {.node_sizes = {8, 3}}), std::invalid_argument);
  CHECK_THROWS_AS((void)plan_tree_allreduce(n, s, {.node_sizes = {8, 4}, .server_orders = {{{0, 1}}}}),
                  std::invalid_argument);
}

TEST_CASE("hierarchical allreduce with one rank per node is a ring allreduce") {
  const Plan hier = plan_hierarchical_allreduce(8, 8_KiB);
  const Plan ring = plan_ring_allreduce(8, 8_KiB);
  REQUIRE(hier.transfers.size() == ring.transfers.size());
  for (std::size_t i = 0; i < ring.transfers.size(); ++i) {
    CHECK(hier.transfers[i].src == ring.transfers[i].src);
    CHECK(hier.transfers[i].dst == ring.transfers[i].dst);
    CHECK(hier.transfers[i].chunk == ring.transfers[i].chunk);
  }
}

// ---- parameter server ---------------------------------------------------------------------

TEST_CASE("parameter server, dedicated: workers send and receive S, server j sees n·|shard j|") {
  for (const std::uint32_t n : kRankCounts) {
    for (const std::uint32_t k : {1U, 2U, 3U, 4U}) {
      CAPTURE(n);
      CAPTURE(k);
      const Bytes s{1000.0};  // shards 1000/k rounded down, the last takes the rest
      const Plan plan = plan_parameter_server_allreduce(n, s, {.servers = k});
      REQUIRE_PLAN_OK(plan);
      CHECK(plan.algorithm == Algorithm::ParameterServer);
      CHECK(plan.ranks == n + k);
      CHECK(plan.contributors == n);
      CHECK(plan.steps == 2);
      CHECK(plan.transfers.size() == std::size_t{2} * n * k);
      const double shard = std::floor(1000.0 / k);
      for (std::uint32_t j = 0; j < k; ++j) {
        CHECK(plan.chunk_owner[j] == n + j);
        CHECK(plan.chunk_bytes[j].bytes() == (j + 1 < k ? shard : 1000.0 - shard * (k - 1)));
      }
      const auto sent = plan.bytes_sent_per_rank();
      const auto received = plan.bytes_received_per_rank();
      for (std::uint32_t i = 0; i < n; ++i) {
        CHECK(sent[i].bytes() == s.bytes());
        CHECK(received[i].bytes() == s.bytes());
      }
      for (std::uint32_t j = 0; j < k; ++j) {
        CHECK(received[n + j].bytes() == n * plan.chunk_bytes[j].bytes());
        CHECK(sent[n + j].bytes() == n * plan.chunk_bytes[j].bytes());
      }
      // Pushes wait for nothing (incast); each pull waits for every push to its server.
      for (TransferId id = 0; id < plan.transfers.size(); ++id) {
        const Transfer& t = plan.transfers[id];
        if (t.kind == TransferKind::Reduce) {
          CHECK(dependency_count(plan, id) == 0);
        } else {
          CHECK(dependency_count(plan, id) == n);
        }
      }
      CHECK(plan.extra_deps.size() == k);  // one shared set per server
    }
  }
}

TEST_CASE("parameter server, colocated: servers are spread workers that skip themselves") {
  for (const std::uint32_t n : kRankCounts) {
    for (const std::uint32_t k : {1U, 2U, 3U, 4U}) {
      if (k > n) continue;
      CAPTURE(n);
      CAPTURE(k);
      const Bytes s{12000.0};
      const Plan plan = plan_parameter_server_allreduce(
          n, s, {.servers = k, .placement = ServerPlacement::Colocated});
      REQUIRE_PLAN_OK(plan);
      CHECK(plan.ranks == n);
      CHECK(plan.transfers.size() == std::size_t{2} * (n - 1) * k);
      const auto sent = plan.bytes_sent_per_rank();
      const auto received = plan.bytes_received_per_rank();
      std::vector<double> own(n, 0.0);
      for (std::uint32_t j = 0; j < k; ++j) {
        CHECK(plan.chunk_owner[j] == j * n / k);
        own[plan.chunk_owner[j]] = plan.chunk_bytes[j].bytes();
      }
      for (std::uint32_t i = 0; i < n; ++i) {
        // Push everything but its own shard, pull that shard back to the n-1 others.
        const double expected = s.bytes() - own[i] + (n - 1) * own[i];
        CHECK(sent[i].bytes() == expected);
        CHECK(received[i].bytes() == expected);
      }
    }
  }
  CHECK_THROWS_AS((void)plan_parameter_server_allreduce(
                      2, 1_KiB, {.servers = 3, .placement = ServerPlacement::Colocated}),
                  std::invalid_argument);
}

// ---- the checker catches broken plans -----------------------------------------------------

TEST_CASE("check_plan rejects a missing dependency as a race") {
  Plan plan = plan_ring_allreduce(4, 4_KiB);
  REQUIRE_PLAN_OK(plan);
  SUBCASE("read after write: a send that does not wait for the data it forwards") {
    // Step 1 of the reduce-scatter, rank 2: forwards what rank 1 sent it in step 0.
    Transfer& t = plan.transfers[4 + 2];
    REQUIRE(plan.transfers[t.dep0].dst == 2);
    t.dep0 = kNoTransfer;
    const PlanCheck check = check_plan(plan);
    CHECK_FALSE(check.ok);
    CHECK(check.problem.find("race") != std::string::npos);
    CHECK(check.problem.find("reads rank 2") != std::string::npos);
  }
  SUBCASE("write after read: a copy that may land before the old value was sent on") {
    // Hand-made: rank 0 copies chunk 0 to rank 1 while rank 1 is still sending its own
    // contribution to rank 2 (nothing orders the two).
    Plan p;
    p.op = CollectiveOp::Broadcast;
    p.ranks = 3;
    p.contributors = 3;
    p.total_bytes = 1_KiB;
    p.chunk_bytes = {1_KiB};
    p.root = 0;
    const TransferId a = p.add(0, 1, 0, TransferKind::Copy, {});
    const TransferId b = p.add(1, 2, 0, TransferKind::Copy, {a});
    p.add(0, 1, 0, TransferKind::Copy, {});  // overwrites rank 1 while b may still read it
    (void)b;
    const PlanCheck check = check_plan(p);
    CHECK_FALSE(check.ok);
    CHECK(check.problem.find("may still read") != std::string::npos);
  }
  SUBCASE("write after write: a copy racing a reduction into the same chunk") {
    Plan p;
    p.op = CollectiveOp::Reduce;
    p.ranks = 3;
    p.contributors = 3;
    p.total_bytes = 1_KiB;
    p.chunk_bytes = {1_KiB};
    p.root = 2;
    p.add(0, 2, 0, TransferKind::Reduce, {});
    p.add(1, 2, 0, TransferKind::Copy, {});
    const PlanCheck check = check_plan(p);
    CHECK_FALSE(check.ok);
    CHECK(check.problem.find("both write") != std::string::npos);
  }
}

TEST_CASE("check_plan accepts concurrent reductions into one chunk") {
  Plan p;
  p.op = CollectiveOp::Reduce;
  p.ranks = 3;
  p.contributors = 3;
  p.total_bytes = 1_KiB;
  p.chunk_bytes = {1_KiB};
  p.root = 2;
  p.add(0, 2, 0, TransferKind::Reduce, {});
  p.add(1, 2, 0, TransferKind::Reduce, {});
  REQUIRE_PLAN_OK(p);
}

TEST_CASE("check_plan: reductions after a copy need the copy, not each other") {
  // Rank 3 (no data) receives rank 0's copy, then ranks 1 and 2 reduce into it concurrently,
  // each after the copy (NVLSTree: the children's partial sums into a parent that has just
  // received its server's sum); then rank 3 hands the total back.
  const auto plan = [](bool second_after_copy) {
    Plan p;
    p.op = CollectiveOp::AllReduce;
    p.ranks = 4;
    p.contributors = 3;
    p.total_bytes = 1_KiB;
    p.chunk_bytes = {1_KiB};
    const TransferId copy = p.add(0, 3, 0, TransferKind::Copy, {});
    const TransferId r1 = p.add(1, 3, 0, TransferKind::Reduce, {copy});
    const TransferId r2 =
        p.add(2, 3, 0, TransferKind::Reduce, {second_after_copy ? copy : kNoTransfer});
    for (std::uint32_t r = 0; r < 3; ++r) p.add(3, r, 0, TransferKind::Copy, {r1, r2});
    return p;
  };
  REQUIRE_PLAN_OK(plan(true));
  const PlanCheck bad = check_plan(plan(false));
  CHECK_FALSE(bad.ok);
  CHECK(bad.problem.find("race") != std::string::npos);
}

TEST_CASE("check_plan rejects a contribution reduced twice") {
  Plan plan = plan_ring_reduce_scatter(3, 3_KiB);
  REQUIRE_PLAN_OK(plan);
  // Repeat the last transfer: its data lands in the owner a second time.
  const Transfer last = plan.transfers.back();
  plan.add(last.src, last.dst, last.chunk, last.kind,
           {static_cast<TransferId>(plan.transfers.size() - 1)});
  const PlanCheck check = check_plan(plan);
  CHECK_FALSE(check.ok);
  CHECK(check.problem.find("double counting") != std::string::npos);
}

TEST_CASE("check_plan rejects a rank that ends without a chunk") {
  SUBCASE("allreduce missing its last all-gather copy") {
    Plan plan = plan_ring_allreduce(4, 4_KiB);
    plan.transfers.pop_back();
    const PlanCheck check = check_plan(plan);
    CHECK_FALSE(check.ok);
    CHECK(check.problem.find("allreduce: rank") != std::string::npos);
  }
  SUBCASE("tree allreduce missing one broadcast") {
    Plan plan = plan_tree_allreduce(8, 8_KiB, {.pipeline = 2});
    plan.transfers.pop_back();
    CHECK_FALSE(check_plan(plan).ok);
  }
  SUBCASE("parameter server missing one pull") {
    Plan plan = plan_parameter_server_allreduce(4, 4_KiB, {.servers = 2});
    plan.transfers.pop_back();
    CHECK_FALSE(check_plan(plan).ok);
  }
  SUBCASE("broadcast that skips a rank") {
    Plan plan = plan_ring_broadcast(4, 0, 4_KiB);
    plan.transfers.pop_back();
    const PlanCheck check = check_plan(plan);
    CHECK_FALSE(check.ok);
    CHECK(check.problem.find("broadcast: rank 3") != std::string::npos);
  }
  SUBCASE("reduce-scatter whose owner misses a contribution") {
    Plan plan = plan_ring_reduce_scatter(2, 2_KiB);
    plan.transfers.pop_back();
    CHECK_FALSE(check_plan(plan).ok);
  }
}

TEST_CASE("check_plan rejects malformed plans") {
  Plan plan = plan_ring_allreduce(4, 4_KiB);
  SUBCASE("a dependency that points forward") {
    plan.transfers[0].dep0 = 5;
    CHECK(check_plan(plan).problem.find("does not come before") != std::string::npos);
  }
  SUBCASE("a transfer to oneself") {
    plan.transfers[0].dst = plan.transfers[0].src;
    CHECK(check_plan(plan).problem.find("sends to itself") != std::string::npos);
  }
  SUBCASE("a send of a chunk the sender does not hold") {
    Plan gather = plan_ring_allgather(3, 3_KiB);
    gather.transfers[0].chunk = 1;  // rank 0 starts with block 0 only
    CHECK(check_plan(gather).problem.find("does not hold") != std::string::npos);
  }
  SUBCASE("chunk sizes that do not add up to the message") {
    plan.chunk_bytes[0] = Bytes{1.0};
    CHECK(check_plan(plan).problem.find("add up") != std::string::npos);
  }
  SUBCASE("a rank or chunk out of range") {
    plan.transfers[3].dst = 9;
    CHECK(check_plan(plan).problem.find("out of range") != std::string::npos);
  }
  SUBCASE("a channel the plan does not declare") {
    plan.transfers[3].channel = 1;
    CHECK(check_plan(plan).problem.find("channel") != std::string::npos);
  }
}

// Speed is measured by benchmarks, not asserted here (sanitizer builds are ~10x slower).
TEST_CASE("check_plan accepts a 64-rank, 4-channel ring") {
  const Plan plan = plan_ring_allreduce(64, 1_GiB, {.channels = 4});
  CHECK(check_plan(plan).ok);
}

// ---- the checker agrees with executions in random orders ---------------------------------

namespace {

// Runs `plan` in a random order that honours only its dependencies: a transfer reads its
// source when it starts and writes its destination when it ends, and other transfers may
// start and end in between. Returns false if the data ends wrong (or a contribution would be
// counted twice, or a rank sends a chunk it does not hold). Up to 64 ranks.
bool random_execution_is_correct(const Plan& plan, std::mt19937& rng) {
  const std::size_t chunks = plan.chunks();
  std::vector<std::uint64_t> state(std::size_t{plan.ranks} * chunks, 0);
  const auto at = [&](std::uint32_t r, std::size_t c) -> std::uint64_t& {
    return state[r * chunks + c];
  };
  const auto bit = [](std::uint32_t r) { return std::uint64_t{1} << r; };
  switch (plan.op) {
    case CollectiveOp::AllGather:
      for (std::size_t c = 0; c < chunks; ++c) at(plan.chunk_owner[c], c) = bit(plan.chunk_owner[c]);
      break;
    case CollectiveOp::Broadcast:
      for (std::size_t c = 0; c < chunks; ++c) at(plan.root, c) = bit(plan.root);
      break;
    default:
      for (std::uint32_t r = 0; r < plan.contributors; ++r)
        for (std::size_t c = 0; c < chunks; ++c) at(r, c) = bit(r);
  }
  const std::size_t n = plan.transfers.size();
  std::vector<std::vector<TransferId>> dependents(n);
  std::vector<std::size_t> waiting(n, 0);
  for (TransferId id = 0; id < n; ++id)
    plan.for_each_dep(id, [&](TransferId d) {
      dependents[d].push_back(id);
      ++waiting[id];
    });
  std::vector<TransferId> ready;
  for (TransferId id = 0; id < n; ++id)
    if (waiting[id] == 0) ready.push_back(id);
  std::vector<std::pair<TransferId, std::uint64_t>> in_flight;  // with the data read
  while (!ready.empty() || !in_flight.empty()) {
    const std::size_t pick =
        std::uniform_int_distribution<std::size_t>(0, ready.size() + in_flight.size() - 1)(rng);
    if (pick < ready.size()) {
      const TransferId id = ready[pick];
      ready.erase(ready.begin() + static_cast<std::ptrdiff_t>(pick));
      const Transfer& t = plan.transfers[id];
      if (at(t.src, t.chunk) == 0) return false;
      in_flight.emplace_back(id, at(t.src, t.chunk));
    } else {
      const std::size_t k = pick - ready.size();
      const auto [id, data] = in_flight[k];
      in_flight.erase(in_flight.begin() + static_cast<std::ptrdiff_t>(k));
      const Transfer& t = plan.transfers[id];
      std::uint64_t& dst = at(t.dst, t.chunk);
      if (t.kind == TransferKind::Reduce) {
        if ((dst & data) != 0) return false;
        dst |= data;
      } else {
        dst = data;
      }
      for (const TransferId next : dependents[id])
        if (--waiting[next] == 0) ready.push_back(next);
    }
  }
  std::uint64_t all = 0;
  for (std::uint32_t r = 0; r < plan.contributors; ++r) all |= bit(r);
  for (std::size_t c = 0; c < chunks; ++c) {
    switch (plan.op) {
      case CollectiveOp::AllReduce:
        for (std::uint32_t r = 0; r < plan.contributors; ++r)
          if (at(r, c) != all) return false;
        break;
      case CollectiveOp::ReduceScatter:
        if (at(plan.chunk_owner[c], c) != all) return false;
        break;
      case CollectiveOp::Reduce:
        if (at(plan.root, c) != all) return false;
        break;
      case CollectiveOp::AllGather:
        for (std::uint32_t r = 0; r < plan.ranks; ++r)
          if (at(r, c) != bit(plan.chunk_owner[c])) return false;
        break;
      case CollectiveOp::Broadcast:
        for (std::uint32_t r = 0; r < plan.ranks; ++r)
          if (at(r, c) != bit(plan.root)) return false;
        break;
    }
  }
  return true;
}

// `plan` with dependency `which` (in for_each_dep order) of transfer `id` removed.
Plan without_dependency(const Plan& plan, TransferId id, std::size_t which) {
  std::vector<TransferId> deps;
  plan.for_each_dep(id, [&](TransferId d) { deps.push_back(d); });
  deps.erase(deps.begin() + static_cast<std::ptrdiff_t>(which));
  Plan out = plan;
  Transfer& t = out.transfers[id];
  t.dep0 = deps.size() > 0 ? deps[0] : kNoTransfer;
  t.dep1 = deps.size() > 1 ? deps[1] : kNoTransfer;
  t.extra_deps = kNoDepSet;
  if (deps.size() > 2) t.extra_deps = out.add_dep_set({deps.begin() + 2, deps.end()});
  return out;
}

}  // namespace

TEST_CASE("plans that check_plan accepts end right in every order the dependencies allow") {
  std::mt19937 rng(12345);
  const std::vector<Plan> plans{
      plan_ring_allreduce(4, 8_KiB, {.channels = 2}),
      plan_ring_reduce_scatter(5, 5_KiB),
      plan_ring_allgather(4, 4_KiB, {.pipeline = 2}),
      plan_ring_broadcast(4, 1, 4_KiB, {.pipeline = 3}),
      plan_ring_reduce(4, 2, 4_KiB, {.pipeline = 3}),
      plan_tree_allreduce(8, 8_KiB, {.ranks_per_node = 2, .pipeline = 2}),
      plan_tree_allreduce(6, 8_KiB, {.pipeline = 3}),
      plan_hierarchical_allreduce(8, 8_KiB, {.ranks_per_node = 2, .pipeline = 2}),
      plan_hierarchical_allreduce(9, 9_KiB, {.ranks_per_node = 3}),
      plan_parameter_server_allreduce(4, 4_KiB, {.servers = 2}),
      plan_parameter_server_allreduce(
          5, 4_KiB, {.servers = 2, .placement = ServerPlacement::Colocated}),
  };
  for (const Plan& plan : plans) {
    CAPTURE(to_string(plan.op));
    CAPTURE(to_string(plan.algorithm));
    CAPTURE(plan.ranks);
    REQUIRE_PLAN_OK(plan);
    for (int run = 0; run < 20; ++run) CHECK(random_execution_is_correct(plan, rng));
    // Drop each dependency in turn. The checker either rejects the plan, or the dependency
    // was redundant and every order still ends right.
    std::size_t mutants = 0;
    std::size_t rejected = 0;
    for (TransferId id = 0; id < plan.transfers.size(); ++id) {
      const std::size_t deps = dependency_count(plan, id);
      for (std::size_t which = 0; which < deps; ++which) {
        const Plan mutant = without_dependency(plan, id, which);
        ++mutants;
        if (!check_plan(mutant).ok) {
          ++rejected;
          continue;
        }
        CAPTURE(id);
        CAPTURE(which);
        for (int run = 0; run < 20; ++run) REQUIRE(random_execution_is_correct(mutant, rng));
      }
    }
    // Rings: exactly the data dependencies (half); trees 57-67 %; parameter server all.
    INFO(rejected, " of ", mutants, " dependency removals rejected");
    CHECK(rejected * 2 >= mutants);
  }
}

// ---- arguments and helpers -----------------------------------------------------------------

TEST_CASE("planners reject impossible parameters") {
  CHECK_THROWS_AS((void)plan_ring_allreduce(0, 1_KiB), std::invalid_argument);
  CHECK_THROWS_AS((void)plan_ring_allreduce(4, 1_KiB, {.channels = 0}), std::invalid_argument);
  CHECK_THROWS_AS((void)plan_ring_allreduce(4, 1_KiB, {.channels = 257}), std::invalid_argument);
  CHECK_THROWS_AS((void)plan_ring_allreduce(4, 1_KiB, {.pipeline = 0}), std::invalid_argument);
  CHECK_THROWS_AS((void)plan_ring_allreduce(4, Bytes{-1.0}), std::invalid_argument);
  CHECK_THROWS_AS((void)plan_ring_broadcast(4, 4, 1_KiB), std::invalid_argument);
  CHECK_THROWS_AS((void)plan_tree_allreduce(6, 1_KiB, {.ranks_per_node = 4}),
                  std::invalid_argument);
  CHECK_THROWS_AS((void)plan_hierarchical_allreduce(6, 1_KiB, {.ranks_per_node = 4}),
                  std::invalid_argument);
  CHECK_THROWS_AS((void)plan_parameter_server_allreduce(4, 1_KiB, {.servers = 0}),
                  std::invalid_argument);
  CHECK_THROWS_AS((void)build_double_binary_tree(0), std::invalid_argument);
}

TEST_CASE("split_bytes: whole floors, the last part takes the remainder") {
  const auto parts = split_bytes(Bytes{10.0}, 4);
  REQUIRE(parts.size() == 4);
  CHECK(parts[0].bytes() == 2.0);
  CHECK(parts[2].bytes() == 2.0);
  CHECK(parts[3].bytes() == 4.0);
  const auto tiny = split_bytes(Bytes{3.0}, 8);  // fewer bytes than parts: empty pieces
  CHECK(tiny[0].bytes() == 0.0);
  CHECK(tiny[7].bytes() == 3.0);
  CHECK_THROWS_AS((void)split_bytes(Bytes{1.0}, 0), std::invalid_argument);
}

TEST_CASE("a plan beyond the transfers one plan holds is refused with its size, not allocated") {
  // 16,384 ranks on 8 channels: 2 x 16383 x 16384 x 8 = 4.3G transfers (120 GB).
  CHECK_THROWS_WITH_AS((void)plan_ring_allreduce(16384, 1_MiB, {.channels = 8}),
                       doctest::Contains("4294M transfers (120 GB)"), std::invalid_argument);
  CHECK_NOTHROW((void)plan_ring_allreduce(1024, 1_MiB, {.channels = 8}));  // 16.8M
}

TEST_CASE("names of operations, algorithms and transfer kinds") {
  CHECK(to_string(CollectiveOp::AllReduce) == "allreduce");
  CHECK(to_string(CollectiveOp::ReduceScatter) == "reducescatter");
  CHECK(to_string(Algorithm::ParameterServer) == "ps");
  CHECK(to_string(Algorithm::Hierarchical) == "hierarchical");
  CHECK(to_string(TransferKind::Copy) == "copy");
}

// ---- rail-aligned ring orders (one channel per NIC) -----------------------------------------

TEST_CASE("rail ring orders: node crossings stay on one rail and use every rail") {
  const std::uint32_t ppn = 8;
  for (std::uint32_t nodes : {2u, 4u, 3u}) {
    const std::uint32_t n = ppn * nodes;
    const auto orders = rail_ring_orders(n, ppn, ppn);
    REQUIRE(orders.size() == ppn);
    std::multiset<std::uint32_t> sends;  // (node parity, rail) of each crossing's sender
    std::size_t cross_rail = 0;
    for (std::uint32_t c = 0; c < ppn; ++c) {
      const auto& o = orders[c];
      REQUIRE(o.size() == n);
      CHECK(std::set<std::uint32_t>(o.begin(), o.end()).size() == n);  // a permutation
      for (std::uint32_t i = 0; i < n; ++i) {
        const std::uint32_t a = o[i], b = o[(i + 1) % n];
        if (i % ppn != ppn - 1) {
          CHECK(a / ppn == b / ppn);  // a node's ranks are contiguous in the ring
          continue;
        }
        CHECK(a / ppn != b / ppn);
        if (a % ppn != b % ppn) ++cross_rail;
        sends.insert((a / ppn % 2) * ppn + a % ppn);
      }
    }
    // Even node counts: every crossing on one rail; odd: only the wrap-around of each channel.
    CHECK(cross_rail == (nodes % 2 == 0 ? 0 : ppn));
    if (nodes % 2 == 0)  // each rail of even and of odd nodes sends in exactly one channel
      for (std::uint32_t key = 0; key < 2 * ppn; ++key) CHECK(sends.count(key) == nodes / 2);
  }
}

TEST_CASE("ring plans with per-channel orders are correct and move the same bytes") {
  for (std::uint32_t ppn : {2u, 4u}) {
    for (std::uint32_t nodes : {2u, 3u}) {
      const std::uint32_t n = ppn * nodes;
      for (std::uint32_t channels : {2u, 4u}) {
        RingOptions options{channels, 2, rail_ring_orders(n, ppn, channels)};
        const Plan ar = plan_ring_allreduce(n, 1_MiB, options);
        CHECK(check_plan(ar).ok);
        const auto sent = ar.bytes_sent_per_rank();
        for (std::uint32_t r = 0; r < n; ++r)
          CHECK(sent[r].bytes() == doctest::Approx(2.0 * (n - 1) / n * 1048576.0).epsilon(1e-3));  // whole-byte chunks
        CHECK(check_plan(plan_ring_reduce_scatter(n, 1_MiB, options)).ok);
        CHECK(check_plan(plan_ring_allgather(n, 1_MiB, options)).ok);
      }
    }
  }
  RingOptions bad{2, 1, {{0, 1, 2, 3}, {0, 1, 1, 3}}};
  CHECK_THROWS_AS((void)plan_ring_allreduce(4, 1_MiB, bad), std::invalid_argument);
  CHECK_THROWS_AS((void)plan_ring_broadcast(4, 0, 1_MiB, bad), std::invalid_argument);
  RingOptions wrong_count{2, 1, {{0, 1, 2, 3}}};
  CHECK_THROWS_AS((void)plan_ring_allreduce(4, 1_MiB, wrong_count), std::invalid_argument);
}

TEST_CASE("rail ring orders over servers with their own local paths (4 + 2 ranks)") {
  // Server 0 walks 0 3 2 1 (channel 0) or 2 0 1 3 (channel 1), server 1 its rank order: each
  // channel's ring lists server 0's path forward, then server 1's backward (odd server).
  const std::vector<std::vector<std::vector<std::uint32_t>>> paths{{{0, 3, 2, 1}, {2, 0, 1, 3}},
                                                                   {{0, 1}}};
  const auto orders = rail_ring_orders(std::vector<std::uint32_t>{4, 2}, paths, 3);
  REQUIRE(orders.size() == 3);
  CHECK(orders[0] == std::vector<std::uint32_t>{0, 3, 2, 1, 5, 4});
  CHECK(orders[1] == std::vector<std::uint32_t>{2, 0, 1, 3, 5, 4});
  CHECK(orders[2] == orders[0]);  // paths are taken cyclically
  CHECK_THROWS_AS((void)rail_ring_orders(std::vector<std::uint32_t>{4, 2}, {{{0, 1, 2, 3}}}, 2),
                  std::invalid_argument);  // a server without paths
  CHECK_THROWS_AS((void)rail_ring_orders(std::vector<std::uint32_t>{4, 2}, {{{0, 1, 1, 3}}, {{0, 1}}}, 2),
                  std::invalid_argument);
}

TEST_CASE("rail ring orders over servers filled unevenly (8 + 4 ranks)") {
  const std::vector<std::uint32_t> sizes{8, 4};
  const auto orders = rail_ring_orders(sizes, 8);
  REQUIRE(orders.size() == 8);
  std::set<std::uint32_t> out_of_0, out_of_1;  // ranks that send across, per server
  for (const auto& o : orders) {
    REQUIRE(o.size() == 12);
    CHECK(std::set<std::uint32_t>(o.begin(), o.end()).size() == 12);
    for (std::uint32_t i = 0; i < 12; ++i) {
      CHECK((o[i] < 8) == (i < 8));  // server 0's ranks first, then server 1's
      const std::uint32_t a = o[i], b = o[(i + 1) % 12];
      if ((a < 8) != (b < 8)) (a < 8 ? out_of_0 : out_of_1).insert(a);
    }
  }
  // Every rank of each server sends across in some channel: all 8 + 4 NICs carry the rings.
  CHECK(out_of_0.size() == 8);
  CHECK(out_of_1.size() == 4);
  // The uniform form is the same orders.
  CHECK(rail_ring_orders(16, 8, 4) == rail_ring_orders(std::vector<std::uint32_t>{8, 8}, 4));
  const Plan plan = plan_collective(CollectiveRequest{.op = CollectiveOp::AllReduce,
                                                      .algorithm = Algorithm::Ring,
                                                      .ranks = 12,
                                                      .node_sizes = sizes,
                                                      .bytes = 1_MiB,
                                                      .channels = 8});
  REQUIRE_PLAN_OK(plan);
  std::set<std::uint32_t> crossing;
  for (const Transfer& t : plan.transfers)
    if (t.src < 8 && t.dst >= 8) crossing.insert(t.src);
  CHECK(crossing.size() == 8);
}

TEST_CASE("broadcast and reduce chains follow the channels' ring orders across servers") {
  // 4 servers x 8 ranks, 8 channels: each channel's chain crosses the servers on its own rail
  // (NCCL's broadcast runs on the rings), so the 8 channels leave server 0 from 8 different
  // ranks (but where the chain's missing hop is that crossing). Without the orders every
  // chain would cross from rank 7, i.e. one NIC.
  const std::uint32_t ppn = 8, n = 32, channels = 8;
  for (const std::uint32_t root : {0U, 13U}) {
    CAPTURE(root);
    RingOptions options{channels, 4, rail_ring_orders(n, ppn, channels)};
    for (const Plan& plan : {plan_ring_broadcast(n, root, 1_MiB, options),
                             plan_ring_reduce(n, root, 1_MiB, options)}) {
      REQUIRE_PLAN_OK(plan);
      std::set<std::uint32_t> senders;  // ranks that send from server 0 to another server
      for (const Transfer& t : plan.transfers)
        if (t.src / ppn == 0 && t.dst / ppn != 0) senders.insert(t.src);
      // (A chain has no hop into its root (broadcast) or out of it (reduce): where that hop is
      // the channel's crossing out of server 0, that channel does not cross there.)
      CHECK(senders.size() >= channels - 1);
      // Every rank but the root still receives (broadcast) or sends (reduce) S once.
      const auto moved = plan.op == CollectiveOp::Broadcast ? plan.bytes_received_per_rank()
                                                            : plan.bytes_sent_per_rank();
      for (std::uint32_t r = 0; r < n; ++r)
        CHECK(moved[r].bytes() == doctest::Approx(r == root ? 0.0 : 1048576.0));
    }
  }
}

// ---- NVLS (NVLink SHARP) ----------------------------------------------------------------------

TEST_CASE("nvls: the NVSwitch reduces, each GPU sends and receives S once, pipelined") {
  for (const std::uint32_t n : {1U, 2U, 3U, 8U, 16U}) {
    for (const std::uint32_t p : {1U, 2U, 7U, 64U}) {
      CAPTURE(n);
      CAPTURE(p);
      const Bytes s{1000.0 * p + 3};
      const Plan plan = plan_nvls_allreduce(n, s, {.pipeline = p});
      REQUIRE_PLAN_OK(plan);
      CHECK(plan.algorithm == Algorithm::Nvls);
      CHECK(plan.ranks == n + 1);
      CHECK(plan.contributors == n);
      CHECK(plan.steps == 2);
      CHECK(plan.chunks() == p);
      CHECK(plan.transfers.size() == std::size_t{2} * n * p);
      for (std::uint32_t c = 0; c < p; ++c) CHECK(plan.chunk_owner[c] == n);
      const auto sent = plan.bytes_sent_per_rank();
      const auto received = plan.bytes_received_per_rank();
      for (std::uint32_t i = 0; i < n; ++i) {
        CHECK(sent[i].bytes() == s.bytes());
        CHECK(received[i].bytes() == s.bytes());
      }
      CHECK(sent[n].bytes() == n * s.bytes());
      CHECK(received[n].bytes() == n * s.bytes());
      // Pipelined: pushes and pulls share one phase; unpipelined: push | pull.
      CHECK(plan.phases.size() == (p > 1 ? 1U : 2U));
      // Pushes stream behind the previous push on the port (dep1), no data dependency.
      for (const Transfer& t : plan.transfers)
        if (t.dst == n && t.chunk > 0) {
          CHECK(t.dep0 == kNoTransfer);
          REQUIRE(t.dep1 != kNoTransfer);
          CHECK(plan.transfers[t.dep1].src == t.src);
          CHECK(plan.transfers[t.dep1].chunk == t.chunk - 1);
        }
    }
  }
  CHECK(to_string(Algorithm::Nvls) == "nvls");
  CHECK(algorithm_from_string("nvls") == Algorithm::Nvls);
  CHECK_THROWS_AS((void)plan_nvls_allreduce(0, Bytes(8.0)), std::invalid_argument);
  CHECK_THROWS_AS((void)plan_nvls_allreduce(4, Bytes(8.0), {.pipeline = 0}), std::invalid_argument);
}

TEST_CASE("nvlstree: switches reduce in each server, shards cross servers on two trees") {
  for (const std::uint32_t nodes : {1U, 2U, 3U, 4U, 5U, 8U}) {
    for (const std::uint32_t ppn : {1U, 2U, 4U, 8U}) {
      for (const std::uint32_t p : {1U, 2U, 5U}) {
        CAPTURE(nodes);
        CAPTURE(ppn);
        CAPTURE(p);
        const std::uint32_t g = nodes * ppn;
        const Bytes s{1000.0 * ppn * p + 5};
        const Plan plan = plan_nvls_tree_allreduce(g, s, {.ranks_per_node = ppn, .pipeline = p});
        REQUIRE_PLAN_OK(plan);
        CHECK(plan.algorithm == Algorithm::NvlsTree);
        CHECK(plan.ranks == g + nodes);
        CHECK(plan.contributors == g);
        CHECK(plan.chunks() == std::size_t{p} * ppn);
        std::uint32_t height = 0;
        while ((1U << height) < nodes) ++height;
        CHECK(plan.steps == 4 + 2 * height);
        // Every GPU pushes S into its switch and receives S back (its shard from the switch or
        // the tree, the other shards by multicast); only shards cross servers.
        const auto sent = plan.bytes_sent_per_rank();
        const auto received = plan.bytes_received_per_rank();
        std::vector<double> to_switch(g, 0.0), network_out(g, 0.0), network_in(g, 0.0);
        for (const Transfer& t : plan.transfers) {
          if (t.dst >= g && t.src < g) {
            CHECK(t.dst == g + t.src / ppn);  // a GPU talks only to its own server's switch
            to_switch[t.src] += plan.bytes_of(t).bytes();
          }
          if (t.src < g && t.dst < g) {
            CHECK(t.src % ppn == t.dst % ppn);  // tree traffic stays on one rail
            CHECK(t.src / ppn != t.dst / ppn);
            network_out[t.src] += plan.bytes_of(t).bytes();
            network_in[t.dst] += plan.bytes_of(t).bytes();
          }
        }
        double shards_out = 0.0;
        for (std::uint32_t i = 0; i < g; ++i) {
          // S of pushes plus the stores of its own shards (S/ppn in all).
          double own = 0.0;
          for (std::size_t c = 0; c < plan.chunks(); ++c)
            if (c % ppn == i % ppn) own += plan.chunk_bytes[c].bytes();
          CHECK(to_switch[i] == doctest::Approx(s.bytes() + own));
          CHECK(received[i].bytes() == doctest::Approx(s.bytes() + network_in[i]));
          CHECK(sent[i].bytes() == doctest::Approx(to_switch[i] + network_out[i]));
          shards_out += network_out[i];
        }
        // Each shard goes up and comes down once per non-root server: 2(N-1)·S in all.
        CHECK(shards_out == doctest::Approx(2.0 * (nodes - 1) * s.bytes()));
        // Pushes stream behind the previous push on the port (dep1), no data dependency.
        for (const Transfer& t : plan.transfers)
          if (t.dst >= g && t.kind == TransferKind::Reduce && t.chunk >= ppn) {
            CHECK(t.dep0 == kNoTransfer);
            REQUIRE(t.dep1 != kNoTransfer);
            CHECK(plan.transfers[t.dep1].src == t.src);
          }
      }
    }
  }
  CHECK(to_string(Algorithm::NvlsTree) == "nvlstree");
  CHECK(algorithm_from_string("nvlstree") == Algorithm::NvlsTree);
  CHECK_THROWS_AS((void)plan_nvls_tree_allreduce(0, Bytes(8.0)), std::invalid_argument);
  CHECK_THROWS_AS((void)plan_nvls_tree_allreduce(6, Bytes(8.0), {.ranks_per_node = 4}),
                  std::invalid_argument);
  CHECK_THROWS_AS((void)plan_nvls_tree_allreduce(8, Bytes(8.0), {.ranks_per_node = 4, .pipeline = 0}),
                  std::invalid_argument);
  CollectiveRequest r;
  r.algorithm = Algorithm::NvlsTree;
  r.ranks = 16;
  r.ranks_per_node = 8;
  r.bytes = Bytes(64.0 * 1048576.0);
  const Plan plan = plan_collective(r);
  CHECK(plan.ranks == 18);
  CHECK(plan.chunks() == 64 * 8);  // one step per MiB, 8 shards each
  // Large sizes: up to 1024 steps (the fill of 7 stages on 4 servers under 1 %), fewer where
  // the plan would pass ~2M transfers (512 GPUs: 8 x 512 + ... per step).
  r.bytes = Bytes(16.0 * 1073741824.0);
  r.ranks = 32;
  CHECK(plan_collective(r).chunks() == 1024 * 8);
  r.ranks = 512;
  const std::size_t steps = plan_collective(r).chunks() / 8;
  CHECK(steps >= 64);
  CHECK(steps < 300);
  r.op = CollectiveOp::Broadcast;
  CHECK_THROWS_AS((void)plan_collective(r), std::invalid_argument);
}

TEST_CASE("nvls with SHARP: NVSwitches reduce in each server, the SHARP switch across them") {
  for (const std::uint32_t nodes : {1U, 2U, 3U, 4U, 8U}) {
    for (const std::uint32_t ppn : {1U, 2U, 4U, 8U}) {
      for (const bool rails : {false, true}) {  // one SHARP switch, or one per local index
        CAPTURE(nodes);
        CAPTURE(ppn);
        CAPTURE(rails);
        const std::uint32_t g = nodes * ppn;
        const std::vector<std::uint32_t> sharp = sharp_of_local(ppn, rails);
        const std::uint32_t switches = rails ? ppn : 1;
        const Bytes s{1000.0 * ppn * 3 + 7};
        const Plan plan = plan_nvls_sharp_allreduce(g, s, {ppn, 3, sharp});
        REQUIRE_PLAN_OK(plan);
        CHECK(plan.algorithm == Algorithm::Nvls);
        CHECK(plan.ranks == g + nodes + switches);
        CHECK(plan.contributors == g);
        CHECK(plan.steps == 6);
        // Per GPU: S + its shards (S/ppn) into its NVSwitch; its shards (S/ppn) to the SHARP
        // switch of its local index and back, whatever the number of servers.
        std::vector<double> to_nvswitch(g, 0.0), to_sharp(g, 0.0), from_sharp(g, 0.0);
        for (const Transfer& t : plan.transfers) {
          const double b = plan.bytes_of(t).bytes();
          CHECK_FALSE((t.src < g && t.dst < g));  // GPUs never talk to each other
          if (t.src < g && t.dst < g + nodes) {
            CHECK(t.dst == g + t.src / ppn);
            to_nvswitch[t.src] += b;
          }
          if (t.src < g && t.dst >= g + nodes) {
            CHECK(t.dst == g + nodes + sharp[t.src % ppn]);
            CHECK(t.kind == TransferKind::Reduce);
            to_sharp[t.src] += b;
          }
          if (t.src >= g + nodes) from_sharp[t.dst] += b;
        }
        const auto received = plan.bytes_received_per_rank();
        for (std::uint32_t i = 0; i < g; ++i) {
          double own = 0.0;
          for (std::size_t c = 0; c < plan.chunks(); ++c)
            if (c % ppn == i % ppn) own += plan.chunk_bytes[c].bytes();
          CHECK(to_nvswitch[i] == doctest::Approx(s.bytes() + own));
          CHECK(to_sharp[i] == doctest::Approx(own));
          CHECK(from_sharp[i] == doctest::Approx(own));
          CHECK(received[i].bytes() == doctest::Approx(s.bytes() + own));
        }
      }
    }
  }
  CHECK_THROWS_AS((void)plan_nvls_sharp_allreduce(8, Bytes(8.0), {4, 1, {0, 0, 0}}),
                  std::invalid_argument);  // one SHARP switch per local index
  CollectiveRequest r;
  r.algorithm = Algorithm::Nvls;
  r.ranks = 16;
  r.ranks_per_node = 8;
  r.sharp_of_local = {0, 1, 2, 3, 4, 5, 6, 7};
  r.bytes = Bytes(64.0 * 1048576.0);
  const Plan plan = plan_collective(r);
  REQUIRE_PLAN_OK(plan);
  CHECK(plan.ranks == 16 + 2 + 8);
  CHECK(plan.chunks() == 64 * 8);  // one step per MiB, at most 64, 8 shards each
}

TEST_CASE("collnetchain: a chain per channel in each server, the SHARP switch across them") {
  for (const std::uint32_t nodes : {2U, 3U, 4U, 8U}) {
    for (const std::uint32_t ppn : {1U, 2U, 4U, 8U}) {
      for (const std::uint32_t channels : {1U, 2U, 8U}) {
        for (const bool rails : {false, true}) {  // one SHARP switch, or one per local index
          CAPTURE(nodes);
          CAPTURE(ppn);
          CAPTURE(channels);
          CAPTURE(rails);
          const std::uint32_t g = nodes * ppn;
          const std::vector<std::uint32_t> sharp = sharp_of_local(ppn, rails);
          const std::uint32_t switches = rails ? ppn : 1;
          const Bytes s{1000.0 * channels * 3 + 7};
          const Plan plan = plan_collnet_chain_allreduce(g, s, {ppn, channels, 3, sharp});
          REQUIRE_PLAN_OK(plan);
          CHECK(plan.algorithm == Algorithm::CollNetChain);
          CHECK(plan.ranks == g + switches);
          CHECK(plan.contributors == g);
          CHECK(plan.steps == 2 * ppn);
          CHECK(plan.transfers.size() == 2ULL * g * channels * 3);
          // GPUs talk only inside their server; only channel c's head (local c·ppn/channels)
          // talks to the network, to the SHARP switch of its local index; per server each
          // channel's bytes go up once and come down once, and cross 2 (ppn - 1) GPU links.
          std::vector<double> up(nodes, 0.0), down(nodes, 0.0), inside(nodes, 0.0);
          for (const Transfer& t : plan.transfers) {
            const double b = plan.bytes_of(t).bytes();
            if (t.src < g && t.dst < g) {
              CHECK(t.src / ppn == t.dst / ppn);
              inside[t.src / ppn] += b;
            } else if (t.src < g) {
              const std::uint32_t head = t.channel * ppn / channels;
              CHECK(t.src % ppn == head);
              CHECK(t.dst == g + sharp[head]);
              CHECK(t.kind == TransferKind::Reduce);
              up[t.src / ppn] += b;
            } else {
              CHECK(t.dst % ppn == t.channel * ppn / channels);
              CHECK(t.kind == TransferKind::Copy);
              down[t.dst / ppn] += b;
            }
          }
          for (std::uint32_t a = 0; a < nodes; ++a) {
            CHECK(up[a] == doctest::Approx(s.bytes()));
            CHECK(down[a] == doctest::Approx(s.bytes()));
            CHECK(inside[a] == doctest::Approx(2.0 * (ppn - 1) * s.bytes()));
          }
        }
      }
    }
  }
  CHECK_THROWS_AS((void)plan_collnet_chain_allreduce(8, Bytes(8.0), {8, 1, 1, std::vector<std::uint32_t>(8, 0)}),
                  std::invalid_argument);  // one server: nothing to reduce in the network
  CHECK_THROWS_AS((void)plan_collnet_chain_allreduce(8, Bytes(8.0), {4, 1, 1, {0, 0, 0}}),
                  std::invalid_argument);  // one SHARP switch per local index
  CollectiveRequest r;
  r.algorithm = Algorithm::CollNetChain;
  r.ranks = 16;
  r.ranks_per_node = 8;
  r.channels = 8;
  r.sharp_of_local = {0, 1, 2, 3, 4, 5, 6, 7};
  r.bytes = Bytes(64.0 * 1048576.0);
  const Plan plan = plan_collective(r);
  REQUIRE_PLAN_OK(plan);
  CHECK(plan.ranks == 16 + 8);
  CHECK(plan.chunks() == 8 * 32);  // 8 channels, one chunk per 256 KiB of each
  r.op = CollectiveOp::AllGather;
  CHECK_THROWS_AS((void)plan_collective(r), std::invalid_argument);
}

TEST_CASE("collnetdirect: scatter to the heads, their round trip to SHARP, broadcast back") {
  for (const std::uint32_t nodes : {2U, 3U, 8U}) {
    for (const std::uint32_t ppn : {1U, 2U, 4U, 8U}) {
      for (const std::uint32_t count : {1U, 2U, 8U}) {
        if (count > ppn) continue;
        CAPTURE(nodes);
        CAPTURE(ppn);
        CAPTURE(count);
        const std::uint32_t g = nodes * ppn;
        std::vector<std::uint32_t> heads;
        for (std::uint32_t p = 0; p < count; ++p) heads.push_back(p * ppn / count);
        const std::vector<std::uint32_t> sharp = sharp_of_local(ppn, /*rails=*/true);
        const Bytes s{1000.0 * count * 3 + 5};
        const Plan plan = plan_collnet_direct_allreduce(g, s, {ppn, heads, 3, sharp});
        REQUIRE_PLAN_OK(plan);
        CHECK(plan.algorithm == Algorithm::CollNetDirect);
        CHECK(plan.ranks == g + ppn);
        CHECK(plan.steps == (ppn > 1 ? 4U : 2U));
        CHECK(plan.transfers.size() == 2ULL * g * count * 3);
        // Every GPU sends each part it does not head to that part's head (S(H-1)/H with every
        // GPU a head) and gets it back; heads alone talk to the network, S/H each way.
        std::vector<double> sent(g, 0.0), to_sharp(g, 0.0), from_sharp(g, 0.0);
        for (const Transfer& t : plan.transfers) {
          const double b = plan.bytes_of(t).bytes();
          const std::uint32_t head = heads[t.channel];
          if (t.src < g && t.dst < g) {
            CHECK(t.src / ppn == t.dst / ppn);
            CHECK((t.dst % ppn == head) != (t.src % ppn == head));  // to or from the head
            if (t.dst % ppn == head) CHECK(t.kind == TransferKind::Reduce);
            sent[t.src] += b;
          } else if (t.src < g) {
            CHECK(t.src % ppn == head);
            CHECK(t.dst == g + sharp[head]);
            to_sharp[t.src] += b;
          } else {
            CHECK(t.dst % ppn == head);
            from_sharp[t.dst] += b;
          }
        }
        for (std::uint32_t i = 0; i < g; ++i) {
          double headed = 0.0;  // the parts GPU i heads (chunk p·3 + k is head p's)
          for (std::size_t c = 0; c < plan.chunks(); ++c)
            if (heads[c / 3] == i % ppn) headed += plan.chunk_bytes[c].bytes();
          CHECK(to_sharp[i] == doctest::Approx(headed));
          CHECK(from_sharp[i] == doctest::Approx(headed));
          // scatter of the parts it does not head + broadcast of its parts to the others
          CHECK(sent[i] == doctest::Approx(s.bytes() - headed + headed * (ppn - 1)));
        }
      }
    }
  }
  CHECK_THROWS_AS((void)plan_collnet_direct_allreduce(16, Bytes(8.0), {8, {0, 0}, 1, std::vector<std::uint32_t>(8, 0)}),
                  std::invalid_argument);  // heads must be distinct
  CHECK_THROWS_AS((void)plan_collnet_direct_allreduce(16, Bytes(8.0), {8, {0, 1, 2, 3, 4, 5, 6, 7, 7}, 1,
                                                                       std::vector<std::uint32_t>(8, 0)}),
                  std::invalid_argument);  // at most 8 heads
  CollectiveRequest r;
  r.algorithm = Algorithm::CollNetDirect;
  r.ranks = 32;
  r.ranks_per_node = 8;
  r.channels = 4;  // 4 NICs per server: heads 0, 2, 4, 6
  r.sharp_of_local = {0, 0, 1, 1, 2, 2, 3, 3};
  r.bytes = Bytes(64.0 * 1048576.0);
  const Plan plan = plan_collective(r);
  REQUIRE_PLAN_OK(plan);
  CHECK(plan.channels == 4);
  CHECK(plan.chunks() == 4 * 64);  // 4 heads, one step per 256 KiB of each
}

TEST_CASE("nvls via plan_collective: AllReduce only, automatic pipeline, switch is rank n") {
  CollectiveRequest r;
  r.algorithm = Algorithm::Nvls;
  r.ranks = 8;
  r.bytes = Bytes(64.0 * 1048576.0);
  const Plan plan = plan_collective(r);
  REQUIRE_PLAN_OK(plan);
  CHECK(plan.ranks == 9);
  CHECK(plan.chunks() == 256);  // one per 256 KiB, at most 256
  r.bytes = Bytes(1000.0);
  CHECK(plan_collective(r).chunks() == 1);
  r.op = CollectiveOp::ReduceScatter;
  CHECK_THROWS_AS((void)plan_collective(r), std::invalid_argument);
}

TEST_CASE("nvlstree over servers of 4 and 2 GPUs: the smallest server's GPUs are the heads") {
  // Ranks 0-3 on server 0, 4-5 on server 1; switches are ranks 6 and 7. Heads: local 0 and 1.
  const std::vector<std::uint32_t> sizes{4, 2};
  const std::uint32_t g = 6, p = 3;
  const auto server = [](std::uint32_t r) { return r < 4 ? 0U : 1U; };
  const auto local = [](std::uint32_t r) { return r < 4 ? r : r - 4; };
  const Bytes s{6000.0};
  const Plan plan = plan_nvls_tree_allreduce(g, s, {.pipeline = p, .node_sizes = sizes});
  REQUIRE_PLAN_OK(plan);
  CHECK(plan.ranks == g + 2);
  CHECK(plan.chunks() == std::size_t{p} * 2);
  std::vector<double> to_switch(g, 0.0), from_switch(g, 0.0), network_out(g, 0.0);
  for (const Transfer& t : plan.transfers) {
    if (t.src < g && t.dst >= g) {
      CHECK(t.dst == g + server(t.src));
      to_switch[t.src] += plan.bytes_of(t).bytes();
    } else if (t.src >= g) {
      CHECK(t.src == g + server(t.dst));
      from_switch[t.dst] += plan.bytes_of(t).bytes();
    } else {
      CHECK(local(t.src) == local(t.dst));  // one rail per head
      CHECK(local(t.src) < 2);
      CHECK(server(t.src) != server(t.dst));
      network_out[t.src] += plan.bytes_of(t).bytes();
    }
  }
  for (std::uint32_t i = 0; i < g; ++i) {
    CAPTURE(i);
    const bool head = local(i) < 2;
    // Every GPU pushes S, a head also stores its shards (S/2); every GPU gets S back from the
    // switch (a head its own shards' delivery and the other shards' multicast).
    CHECK(to_switch[i] == doctest::Approx(s.bytes() * (head ? 1.5 : 1.0)));
    CHECK(from_switch[i] == doctest::Approx(s.bytes()));
    // Two servers: each head's shards (S/2) cross once, up or down, in each direction.
    CHECK(network_out[i] == doctest::Approx(head ? s.bytes() / 2 : 0.0));
  }
  CHECK_THROWS_AS((void)plan_nvls_tree_allreduce(g, s, {.node_sizes = {4, 1}}), std::invalid_argument);
  // Through plan_collective under NCCL's loops (16 channels, 4 heads): 12 GPUs as 8 + 4 are two
  // servers, whose NCCL chunk at 64 MiB is 128 KiB (nvls.cc: 64 KiB from 4 nodes): 8 MiB loops,
  // 8 of them, two steps each. Read as 12 servers the chunk would halve, the steps double.
  CollectiveRequest r;
  r.algorithm = Algorithm::NvlsTree;
  r.ranks = 12;
  r.node_sizes = {8, 4};
  r.nvls_channels = 16;
  r.nvls_heads = 4;
  r.bytes = Bytes(64.0 * 1048576.0);
  CHECK(plan_collective(r).chunks() == std::size_t{16} * 4);
}

TEST_CASE("nvlstree pipeline: two steps per NCCL loop of channels x heads x chunk") {
  // 16 NVLS channels x 8 heads. 2 servers: chunks of 32 KiB below 8 MiB, 64 KiB below 64 MiB,
  // 128 KiB from there (NCCL's calcCollChunking ladder): a loop moves 4, 8 or 16 MiB.
  const auto steps = [](double bytes, std::uint32_t nodes, std::uint32_t max_steps = 1024) {
    return gradsync::nvls_tree_pipeline_steps(gradsync::Bytes(bytes), 16, 8, nodes, max_steps);
  };
  const double MiB = 1048576.0;
  CHECK(steps(1 * MiB, 2) == 2);              // part of one loop: both trees still run
  CHECK(steps(4 * MiB, 2) == 2);              // one 4 MiB loop (32 KiB chunks)
  CHECK(steps(8 * MiB, 2) == 2);              // one 8 MiB loop (64 KiB chunks)
  CHECK(steps(32 * MiB, 2) == 8);             // four 8 MiB loops
  CHECK(steps(64 * MiB, 2) == 8);             // four 16 MiB loops (128 KiB chunks)
  CHECK(steps(1024 * MiB, 2) == 128);         // 64 loops
  CHECK(steps(16384 * MiB, 2) == 1024);       // 1024 loops, capped by the plan's size bound
  CHECK(steps(16384 * MiB, 2, 4096) == 2048);
  // From 4 servers NCCL caps NVLSTree's chunk at 64 KiB: 8 MiB loops.
  CHECK(steps(128 * MiB, 4) == 32);
  CHECK(steps(100 * MiB, 4) == 26);           // ceil(12.5) loops
  CHECK_THROWS_AS((void)gradsync::nvls_tree_pipeline_steps(gradsync::Bytes(MiB), 0, 8, 2, 1024),
                  std::invalid_argument);
}

TEST_CASE("algorithm registry: every algorithm once, names round-trip, auto's contenders") {
  std::set<std::string> names;
  for (const AlgorithmInfo& a : algorithm_registry()) {
    CHECK(names.insert(std::string(a.name)).second);
    CHECK(to_string(a.algorithm) == a.name);
    CHECK(algorithm_from_string(a.name) == a.algorithm);
    CHECK(&algorithm_info(a.algorithm) == &a);
  }
  CHECK(names.size() == algorithm_registry().size());
  CHECK_FALSE(algorithm_from_string("auto"));
  // A scenario's sync.algorithm names every contender (not ps: a strategy) and auto.
  for (const AlgorithmInfo& a : algorithm_registry())
    CHECK(sync_algorithm_from_string(a.name).has_value() == (a.in_auto != AutoUse::Never));
  CHECK(algorithm_names([](const AlgorithmInfo& a) { return a.nccl; }) ==
        std::vector<std::string>{"ring", "tree", "nvls", "nvlstree", "collnetchain", "collnetdirect"});
  using V = std::vector<Algorithm>;
  CHECK(auto_candidates(CollectiveOp::AllReduce, 32, 8, true) == V{Algorithm::Ring, Algorithm::Tree});
  CHECK(auto_candidates(CollectiveOp::AllReduce, 32, 8, false) ==
        V{Algorithm::Ring, Algorithm::Tree, Algorithm::Hierarchical});
  CHECK(auto_candidates(CollectiveOp::AllReduce, 8, 8, false) == V{Algorithm::Ring, Algorithm::Tree});
  CHECK(auto_candidates(CollectiveOp::AllGather, 32, 8, false) == V{Algorithm::Ring});
}
