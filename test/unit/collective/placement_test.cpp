// Rank placement and fidelity choice (pure parts of the engine interface).
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>

#include "gradsync/collective/collective.hpp"
#include "gradsync/units/config_error.hpp"
#include "gradsync/engine/simulation.hpp"

using namespace gradsync;

namespace {

// `nodes` servers of `ppn` GPUs, each on its own switch, switches on one core.
Topology ppn_cluster(int nodes, int ppn) {
  Topology t("cluster");
  const DeviceId core = t.add_device(Device{"core", DeviceKind::Switch, -1, Seconds(0.0), {}});
  for (int k = 0; k < nodes; ++k) {
    const DeviceId sw =
        t.add_device(Device{"sw" + std::to_string(k), DeviceKind::Switch, k, Seconds(0.0), {}});
    t.add_link(Link{sw, core, Fabric::InfiniBand, BytesPerSecond(1e9), Seconds(0.0), 1.0,
                    Duplex::Full, {}});
    for (int j = 0; j < ppn; ++j) {
      const DeviceId g = t.add_device(Device{"n" + std::to_string(k) + "g" + std::to_string(j),
                                             DeviceKind::Gpu, k, Seconds(0.0), {}});
      t.add_link(Link{g, sw, Fabric::NvLink, BytesPerSecond(1e9), Seconds(0.0), 1.0,
                      Duplex::Full, {}});
    }
  }
  return t;
}

}  // namespace

TEST_CASE("in-order placement follows the GPUs' declaration order") {
  const Topology t = ppn_cluster(2, 4);
  const auto ranks = place_ranks(t, 8);
  CHECK(ranks == t.gpus());
  CHECK(place_ranks(t, 3) == std::vector<DeviceId>(t.gpus().begin(), t.gpus().begin() + 3));
}

TEST_CASE("strided placement puts consecutive ranks on different servers") {
  const Topology t = ppn_cluster(2, 4);
  const auto ranks = place_ranks(t, 8, {PlacementKind::Strided, 0, 1});
  CHECK(std::set<DeviceId>(ranks.begin(), ranks.end()).size() == 8);
  for (std::size_t r = 0; r + 1 < ranks.size(); ++r)
    CHECK(t.device(ranks[r]).node != t.device(ranks[r + 1]).node);
}

TEST_CASE("node blocks: servers filled in order (8 + 4), none when a server's ranks are apart") {
  const Topology t = ppn_cluster(3, 8);
  CHECK(node_blocks(t, place_ranks(t, 12)) == std::vector<std::uint32_t>{8, 4});
  CHECK(node_blocks(t, place_ranks(t, 24)) == std::vector<std::uint32_t>{8, 8, 8});
  CHECK(node_blocks(t, place_ranks(t, 24, {PlacementKind::Strided, 0, 1})).empty());
}

TEST_CASE("NCCL's order groups each server's GPUs, servers in the order of their first rank") {
  const Topology t = ppn_cluster(3, 4);
  // Strided ranks 0, 1, 2 sit on servers 0, 1, 2: NCCL's rings visit server 0's four GPUs,
  // then server 1's, then server 2's, each in device order — the in-order placement.
  CHECK(nccl_server_order(t, place_ranks(t, 12, {PlacementKind::Strided, 0, 1})) == t.gpus());
  // A shuffle: servers in the order their first rank appears, GPUs in device order inside.
  const std::vector<DeviceId> shuffled = place_ranks(t, 12, {PlacementKind::Random, 0, 3});
  const std::vector<DeviceId> grouped = nccl_server_order(t, shuffled);
  CHECK(node_blocks(t, grouped) == std::vector<std::uint32_t>{4, 4, 4});
  CHECK(t.device(grouped.front()).node == t.device(shuffled.front()).node);
  for (std::size_t r = 0; r + 1 < grouped.size(); ++r)
    if (t.device(grouped[r]).node == t.device(grouped[r + 1]).node) CHECK(grouped[r] < grouped[r + 1]);
  // Six strided ranks use two GPUs of each server: 2 + 2 + 2, the subset kept.
  const std::vector<DeviceId> six = place_ranks(t, 6, {PlacementKind::Strided, 0, 1});
  const std::vector<DeviceId> six_grouped = nccl_server_order(t, six);
  CHECK(node_blocks(t, six_grouped) == std::vector<std::uint32_t>{2, 2, 2});
  CHECK(std::set<DeviceId>(six.begin(), six.end()) ==
        std::set<DeviceId>(six_grouped.begin(), six_grouped.end()));
}

TEST_CASE("ranks per node only where every server holds as many; NCCL's order keeps uneven runs") {
  const Topology t = ppn_cluster(2, 8);
  const std::vector<DeviceId>& gpu = t.gpus();  // n0g0 … n0g7, n1g0 … n1g7
  // 4 + 8 is not three servers of 4.
  std::vector<DeviceId> four_eight(gpu.begin(), gpu.begin() + 4);
  four_eight.insert(four_eight.end(), gpu.begin() + 8, gpu.end());
  CHECK(node_blocks(t, four_eight) == std::vector<std::uint32_t>{4, 8});
  CHECK(ranks_per_node(t, four_eight) == 1);
  CHECK(ranks_per_node(t, place_ranks(t, 16)) == 8);
  CHECK(ranks_per_node(t, place_ranks(t, 12)) == 1);
  // Server 1's GPUs and four of server 0's, interleaved from server 1: NCCL visits server 1's
  // eight (its first rank came first), then server 0's four.
  std::vector<DeviceId> mixed;
  for (int j = 0; j < 8; ++j) {
    mixed.push_back(gpu[8 + j]);
    if (j < 4) mixed.push_back(gpu[3 - j]);
  }
  const std::vector<DeviceId> grouped = nccl_server_order(t, mixed);
  CHECK(node_blocks(t, grouped) == std::vector<std::uint32_t>{8, 4});
  CHECK(grouped == std::vector<DeviceId>{gpu[8], gpu[9], gpu[10], gpu[11], gpu[12], gpu[13], gpu[14],
                                         gpu[15], gpu[0], gpu[1], gpu[2], gpu[3]});
}

TEST_CASE("random placement is a seeded permutation") {
  const Topology t = ppn_cluster(4, 4);
  const auto a = place_ranks(t, 16, {PlacementKind::Random, 0, 7});
  const auto b = place_ranks(t, 16, {PlacementKind::Random, 0, 7});
  const auto c = place_ranks(t, 16, {PlacementKind::Random, 0, 8});
  CHECK(a == b);
  CHECK(a != c);
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == t.gpus());
}

TEST_CASE("more ranks than GPUs is bad input") {
  const Topology t = ppn_cluster(1, 4);
  CHECK_THROWS_AS((void)place_ranks(t, 5), ConfigError);
  CHECK_THROWS_AS((void)place_ranks(t, 0), ConfigError);
}

TEST_CASE("auto fidelity: step for small plans, flow for large ones") {
  CHECK(resolve_fidelity(Fidelity::Auto, plan_ring_allreduce(8, Bytes(1e6))) == Fidelity::Step);
  CHECK(resolve_fidelity(Fidelity::Auto, plan_ring_allreduce(1024, Bytes(1e9))) == Fidelity::Flow);
  CHECK(resolve_fidelity(Fidelity::Step, plan_ring_allreduce(1024, Bytes(1e9))) == Fidelity::Step);
  CHECK(resolve_fidelity(Fidelity::Flow, plan_ring_allreduce(8, Bytes(1e6))) == Fidelity::Flow);
}

TEST_CASE("device pairs: one per directed pair of distinct GPUs a plan uses") {
  const Topology t = ppn_cluster(1, 4);
  const auto ranks = place_ranks(t, 4);
  const auto pairs = device_pairs(plan_ring_allreduce(4, Bytes(1e6)), ranks);
  CHECK(pairs.size() == 4);  // the ring's four edges
}

TEST_CASE("dedicated parameter servers are spread over the machines, last GPU of each") {
  const Topology t = ppn_cluster(4, 4);
  const auto order = place_ranks(t, 16);
  auto node_of = [&](DeviceId d) { return t.device(d).node; };
  const auto spread = spread_dedicated_servers(t, order, 4);
  REQUIRE(spread.size() == 16);
  // The last 4 ranks (the servers) are on 4 different machines: 3, 2, 1, 0.
  for (int j = 0; j < 4; ++j) CHECK(node_of(spread[12 + static_cast<std::size_t>(j)]) == 3 - j);
  // Workers keep their order: machine 0's first three GPUs first.
  CHECK(spread[0] == order[0]);
  CHECK(spread[3] == order[4]);
  // More servers than machines: a second round from the last machine.
  const auto six = spread_dedicated_servers(t, order, 6);
  CHECK(node_of(six[14]) == 3);
  CHECK(node_of(six[15]) == 2);
  CHECK(six[14] == order[14]);  // machine 3's second-to-last GPU
  // One machine: unchanged.
  const Topology one = ppn_cluster(1, 4);
  CHECK(spread_dedicated_servers(one, place_ranks(one, 4), 2) == place_ranks(one, 4));
}
