// The bench runner (bench_runner.hpp) without the CLI: rows on an ideal star against the ring's
// closed form, auto's choice, and the requests it refuses. A case that simulates starts
// SimGrid's engine, a singleton: ctest runs each case in a process of its own
// (doctest_discover_tests); run the executable with -tc="..." for one case at a time.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "gradsync/config/topology_loader.hpp"
#include "gradsync/scenario/bench_runner.hpp"
#include "gradsync/units/config_error.hpp"
#include "sim_check.hpp"

using namespace gradsync;

namespace {

constexpr double kLinkBandwidth = 25e9;  // B/s per direction
constexpr double kLinkLatency = 1e-6;    // s per link; a GPU -> GPU hop crosses two links

Topology ideal_star(std::uint32_t n) {
  return sim_check::ideal_star(n, kLinkBandwidth, kLinkLatency);
}

// SimGrid's options for this build: thread contexts under the sanitizers, else none.
std::vector<std::string> simgrid_args() {
  const std::string flags = GRADSYNC_SIMGRID_ARGS;
  return flags.empty() ? std::vector<std::string>{} : std::vector<std::string>{flags};
}

// 2(n-1)·alpha + 2(n-1)/n · S/B, alpha = two links' latency.
double ring_time_us(double n, double bytes) {
  return (2 * (n - 1) * 2 * kLinkLatency + 2 * (n - 1) / n * bytes / kLinkBandwidth) * 1e6;
}

}  // namespace

TEST_CASE("bench runner: ring AllReduce rows match the closed form, busbw with 2(n-1)/n") {
  const Topology star = ideal_star(8);
  BenchRequest request;
  request.algorithm = Algorithm::Ring;
  request.sizes = bench_sizes(Bytes(1048576), Bytes(64.0 * 1048576), 8.0);
  request.simgrid_args = simgrid_args();
  const BenchResult result = run_bench(star, request);
  CHECK(result.topology_name == "ideal-star");
  CHECK(result.software == SoftwareModel::None);
  CHECK(result.ranks == 8);
  CHECK(result.channels == 1);
  REQUIRE(result.rows.size() == 3);
  for (const BenchRow& r : result.rows) {
    CAPTURE(r.bytes);
    CHECK(r.algorithm == "ring");
    CHECK(r.protocol.empty());
    CHECK(r.label() == "ring");
    CHECK(r.flows > 0);
    CHECK(r.time_us == doctest::Approx(ring_time_us(8, r.bytes)).epsilon(0.01));
    CHECK(r.algbw == doctest::Approx(r.bytes / (r.time_us * 1e-6) / 1e9));
    CHECK(r.busbw == doctest::Approx(r.algbw * 2.0 * 7.0 / 8.0));
    // One candidate: it is also the fastest.
    CHECK(r.best_algorithm == "ring");
    CHECK(r.best_time_us == doctest::Approx(r.time_us));
  }
  CHECK(result.rows[2].bytes == 64.0 * 1048576);
}

TEST_CASE("bench runner: nccl-tests -g 8 makes an iteration at least 8 host launches") {
  const Topology star = ideal_star(8);
  BenchRequest request;
  request.algorithm = Algorithm::Ring;
  request.sizes = {1024.0, 64.0 * 1048576};
  request.simgrid_args = simgrid_args();
  request.gpus_per_thread = 8;
  const BenchResult result = run_bench(star, request);
  REQUIRE(result.rows.size() == 2);
  const double host_us = 8 * kNcclTestsLaunchPerGpuUs;  // 33.6 us
  // 1 KiB: the ring's 14 steps of 2 us (two links) take 28 us, less than the launches.
  const BenchRow& small = result.rows[0];
  CHECK(small.simulated_us == doctest::Approx(ring_time_us(8, 1024.0)).epsilon(0.01));
  CHECK(small.simulated_us < host_us);
  CHECK(small.host_bound);
  CHECK(small.time_us == doctest::Approx(host_us));
  CHECK(small.busbw == doctest::Approx(1024.0 / (host_us * 1e-6) / 1e9 * 2.0 * 7.0 / 8.0));
  // 64 MiB: the collective is longer than the launches, which then cost nothing.
  const BenchRow& big = result.rows[1];
  CHECK_FALSE(big.host_bound);
  CHECK(big.time_us == doctest::Approx(big.simulated_us));
  CHECK(big.time_us == doctest::Approx(ring_time_us(8, 64.0 * 1048576)).epsilon(0.01));
}

TEST_CASE("bench runner: auto without NCCL's model keeps the fastest simulated candidate") {
  const Topology star = ideal_star(8);
  BenchRequest request;
  request.algorithm.reset();
  request.sizes = {8.0, 64.0 * 1048576};
  request.simgrid_args = simgrid_args();
  const BenchResult result = run_bench(star, request);
  REQUIRE(result.rows.size() == 2);
  for (const BenchRow& r : result.rows) {
    CAPTURE(r.bytes);
    // The fastest is reported as the row and as the best; never slower than the ring.
    CHECK(r.best_algorithm == r.label());
    CHECK(r.best_time_us == doctest::Approx(r.time_us));
    CHECK(r.best_busbw == doctest::Approx(r.busbw));
    CHECK(r.time_us <= ring_time_us(8, r.bytes) * 1.01);
  }
}

TEST_CASE("bench runner: a root beyond the ranks is bad input at --root") {
  const Topology star = ideal_star(4);
  BenchRequest request;
  request.op = CollectiveOp::Broadcast;
  request.root = 4;
  request.sizes = {1024.0};
  CHECK_THROWS_WITH_AS(static_cast<void>(run_bench(star, request)),
                       "gradsync bench --root: error: root must be below the rank count",
                       ConfigError);
}

TEST_CASE("bench runner: NVLS only for AllReduce, and only with an NVSwitch") {
  const Topology star = ideal_star(4);
  BenchRequest request;
  request.algorithm = Algorithm::Nvls;
  request.op = CollectiveOp::AllGather;
  request.sizes = {1024.0};
  request.origin = "bench";
  CHECK_THROWS_WITH_AS(static_cast<void>(run_bench(star, request)),
                       "bench --algo: error: allgather has no nvls algorithm in gradsync",
                       ConfigError);
  request.op = CollectiveOp::AllReduce;
  CHECK_THROWS_AS(static_cast<void>(run_bench(star, request)), ConfigError);
}

TEST_CASE("bench runner: more ranks than GPUs, or no sizes, are refused") {
  const Topology star = ideal_star(4);
  BenchRequest request;
  request.gpus = 5;
  request.sizes = {1024.0};
  CHECK_THROWS_AS(static_cast<void>(run_bench(star, request)), ConfigError);
  request.gpus = 4;
  request.sizes.clear();
  CHECK_THROWS_AS(static_cast<void>(run_bench(star, request)), std::invalid_argument);
}

namespace {

// `nodes` servers of 4 GPUs on a 100 GB/s NVSwitch, 4 x 400G NICs on rail switches that reduce
// (SHARP) when `sharp`, every link at its line rate and without latency (software: none).
Topology sharp_rails(int nodes, bool sharp = true) {
  return load_topology_text(
             "name: sharp-rails\nsoftware: none\nnodes: " + std::to_string(nodes) +
                 "\nnode:\n  gpus: 4\n"
                 "  intra: {fabric: nvlink, switch: true, bandwidth: 100GB/s, latency: 0ns, "
                 "efficiency: 1}\n"
                 "  nics: 4\n  nic_bandwidth: 400Gbps\n"
                 "  pcie: {bandwidth: 64GB/s, latency: 0ns, efficiency: 1}\n"
                 "network: {fabric: infiniband, shape: rail-optimized, sharp: " +
                 std::string(sharp ? "true" : "false") +
                 ", link_latency: 0ns, switch_latency: 0ns, efficiency: 1}\n",
             "sharp-rails.yaml")
      .topology;
}

// One 1 GiB CollNet AllReduce; each GPU port carries 2S(ppn-1)/ppn = 1.5 S each way, a NIC
// S/4 at 50 GB/s (less): 1.5 S / 100 GB/s whatever the number of servers, since the SHARP
// switch reduces. (One simulation per case: SimGrid's engine is a singleton.)
void check_collnet(Algorithm algorithm, int nodes) {
  BenchRequest request;
  request.algorithm = algorithm;
  request.sizes = {1024.0 * 1048576.0};
  request.simgrid_args = simgrid_args();
  const BenchResult result = run_bench(sharp_rails(nodes), request);
  REQUIRE(result.rows.size() == 1);
  CHECK(result.rows[0].algorithm == to_string(algorithm));
  CHECK(result.rows[0].time_us == doctest::Approx(1.5 * 1024.0 * 1048576.0 / 100e9 * 1e6).epsilon(0.02));
}

}  // namespace

TEST_CASE("bench runner: CollNetChain on 2 servers is bound by its chains' NVLink load") {
  check_collnet(Algorithm::CollNetChain, 2);
}

TEST_CASE("bench runner: CollNetChain on 4 servers takes as long as on 2 (the switch reduces)") {
  check_collnet(Algorithm::CollNetChain, 4);
}

TEST_CASE("bench runner: CollNetDirect moves the chain's bytes per GPU port, in fewer steps") {
  check_collnet(Algorithm::CollNetDirect, 4);
}

TEST_CASE("bench runner: CollNet without SHARP switches is refused, saying why") {
  BenchRequest request;
  request.algorithm = Algorithm::CollNetChain;
  request.sizes = {1048576.0};
  request.simgrid_args = simgrid_args();
  CHECK_THROWS_WITH_AS((void)run_bench(sharp_rails(2, false), request),
                       doctest::Contains("CollNet needs SHARP"), ConfigError);
}

namespace {

// The busbw of one 1 GiB AllReduce row of `algorithm` over the first `gpus` GPUs (0: all) of
// the topology in `text`.
double one_gib_busbw(const std::string& text, const char* file, Algorithm algorithm,
                     std::uint32_t gpus = 0) {
  BenchRequest request;
  request.algorithm = algorithm;
  request.gpus = gpus;
  request.sizes = {1024.0 * 1048576.0};
  request.simgrid_args = simgrid_args();
  const BenchResult result = run_bench(load_topology_text(text, file).topology, request);
  REQUIRE(result.rows.size() == 1);
  return result.rows[0].busbw;
}

// 8 GPUs on two sockets' root complexes, 64 GB/s PCIe each, DRAM 200 GB/s per socket, every
// efficiency 1. With P2P a 1 GiB ring runs at the PCIe rate; without it each socket's DRAM
// takes a write and a read per byte of its 4 GPUs: busbw = 200 / (2 x 4) = 25 GB/s.
double pcie_ring_busbw(bool p2p) {
  const std::string text =
      std::string("name: pcie-root\nsoftware: none\nnodes: 1\nnode:\n  gpus: 8\n"
                  "  intra: {fabric: pcie, switch: false, bandwidth: 64GB/s, latency: 0ns, "
                  "efficiency: 1, p2p: ") +
      (p2p ? "true}\n" : "false}\n") +
      "  sockets: 2\n  socket_link: {bandwidth: 400GB/s, latency: 0ns, efficiency: 1}\n" +
      (p2p ? "" : "  host_memory: {bandwidth: 200GB/s, efficiency: 1}\n");
  return one_gib_busbw(text, "pcie-root.yaml", Algorithm::Ring);
}

}  // namespace

TEST_CASE("bench runner: PCIe GPUs with P2P ring at their link rate") {
  CHECK(pcie_ring_busbw(true) == doctest::Approx(64.0).epsilon(0.02));
}

TEST_CASE("bench runner: PCIe GPUs without P2P ring at their socket's DRAM rate / (2 x GPUs)") {
  CHECK(pcie_ring_busbw(false) == doctest::Approx(25.0).epsilon(0.02));
}

namespace {

// DGX-1's hybrid cube-mesh (node.intra.nvlinks), 25 GB/s per NVLink, every efficiency 1, no
// library overheads; GPU pairs without NVLink cross 16 GB/s PCIe and the CPUs. A 1 GiB ring
// over `gpus` GPUs (0, 1, …) runs on the rings that follow NVLink pairs: each GPU sends on
// every NVLink it has to the other ranks, so busbw is 25 GB/s × those links.
double cube_mesh_ring_busbw(std::uint32_t gpus, Algorithm algorithm = Algorithm::Ring) {
  const std::string text = R"(name: cube-mesh
software: none
nodes: 1
node:
  gpus: 8
  intra:
    fabric: nvlink
    switch: false
    bandwidth: 150GB/s
    latency: 0ns
    efficiency: 1
    nvlinks:
      - [0, 1, 1, 2, 2, 0, 0, 0]
      - [1, 0, 2, 1, 0, 2, 0, 0]
      - [1, 2, 0, 2, 0, 0, 1, 0]
      - [2, 1, 2, 0, 0, 0, 0, 1]
      - [2, 0, 0, 0, 0, 1, 1, 2]
      - [0, 2, 0, 0, 1, 0, 2, 1]
      - [0, 0, 1, 0, 1, 2, 0, 2]
      - [0, 0, 0, 1, 2, 1, 2, 0]
  sockets: 2
  socket_link: {bandwidth: 38.4GB/s, latency: 0ns, efficiency: 1}
  pcie: {bandwidth: 16GB/s, latency: 0ns, efficiency: 1}
)";
  return one_gib_busbw(text, "cube-mesh.yaml", algorithm, gpus);
}

}  // namespace

// In rank order the ring would cross PCIe twice (GPU 3 -> 4, 7 -> 0) and run at 16 GB/s.
TEST_CASE("bench runner: 8 GPUs of a cube-mesh ring over all 6 NVLinks each (150 GB/s)") {
  CHECK(cube_mesh_ring_busbw(8) == doctest::Approx(150.0).epsilon(0.02));
}

// GPUs 0-3 have 4 links each among themselves; in rank order every ring would take 0 -> 1's
// single link (25 GB/s).
TEST_CASE("bench runner: GPUs 0-3 of a cube-mesh ring over their 4 NVLinks each (100 GB/s)") {
  CHECK(cube_mesh_ring_busbw(4) == doctest::Approx(100.0).epsilon(0.02));
}

// One NVLink joins GPUs 0 and 1 (an NVSwitch star of 150 GB/s per GPU would give 150).
TEST_CASE("bench runner: GPUs 0-1 of a cube-mesh share one NVLink (25 GB/s)") {
  CHECK(cube_mesh_ring_busbw(2) == doctest::Approx(25.0).epsilon(0.02));
}

// Hierarchical's intra-node reduce-scatter and all-gather walk the same NVLink rings (one
// ring in rank order would cross PCIe; one NVLink ring alone would take 2 of 6 links).
TEST_CASE("bench runner: hierarchical on a cube-mesh uses all 6 NVLinks of each GPU (150 GB/s)") {
  CHECK(cube_mesh_ring_busbw(8, Algorithm::Hierarchical) == doctest::Approx(150.0).epsilon(0.02));
}

namespace {

// One 1 GiB row of `request` on two servers described by `node` (the node: block's keys),
// H100s on one InfiniBand switch, every efficiency 1.
BenchResult two_server_bench(const std::string& software, const std::string& node,
                             BenchRequest request) {
  const std::string text = "name: two-servers\nsoftware: " + software +
                           "\nnodes: 2\ngpu: h100\nnode:\n" + node +
                           "network: {fabric: infiniband, shape: single-switch, link_latency: "
                           "600ns, switch_latency: 200ns, efficiency: 1}\n";
  request.sizes = {1024.0 * 1048576.0};
  request.simgrid_args = simgrid_args();
  BenchResult result = run_bench(load_topology_text(text, "two.yaml").topology, request);
  REQUIRE(result.rows.size() == 1);
  return result;
}

// Two servers of 4 PCIe GPUs, one 100G NIC each: a ring that crosses each NIC once per
// direction runs at its 12.5 GB/s. Ranks placed strided (mpirun --map-by node) alternate
// servers.
double strided_ring_busbw(const std::string& software) {
  BenchRequest request;
  request.algorithm = Algorithm::Ring;
  request.placement.kind = PlacementKind::Strided;
  return two_server_bench(software, R"(  gpus: 4
  intra: {fabric: pcie, switch: true, bandwidth: 32GB/s, latency: 500ns, efficiency: 1}
  nics: 1
  nic_bandwidth: 100Gbps
  pcie: {bandwidth: 32GB/s, latency: 500ns, efficiency: 1}
)", request).rows[0].busbw;
}

}  // namespace

// 12 ranks fill two 8-GPU servers in order (8 + 4, as torchrun and mpirun place them): the
// result says so, and NVLSTree takes the 4-GPU server's GPUs as its heads on both servers
// (before, the 12 ranks read as 12 servers sharing one NVSwitch and NVLSTree was refused).
// 8 x 400G per server: each of the 4 heads' NICs moves S/4 each way, so algbw = 4 x 50 GB/s
// (test/validation/nic_rails_bench_test.py checks tree and ring too).
TEST_CASE("bench runner: 12 ranks on 8-GPU servers are 8 + 4, NVLSTree heads on the smaller") {
  BenchRequest request;
  request.algorithm = Algorithm::NvlsTree;
  request.gpus = 12;
  const BenchResult result = two_server_bench("none", R"(  gpus: 8
  intra: {fabric: nvlink, switch: true, bandwidth: 900GB/s, latency: 300ns, efficiency: 1}
  nics: 8
  nic_bandwidth: 400Gbps
  pcie: {bandwidth: 256GB/s, latency: 500ns, efficiency: 1}
)", request);
  CHECK(result.node_sizes == std::vector<std::uint32_t>{8, 4});
  CHECK(result.rows[0].algbw == doctest::Approx(200.0).epsilon(0.03));
}

// Under NCCL's model rank numbering does not matter: its rings group each server's GPUs, so
// strided ranks cross each NIC once per direction, as ranks in order do.
TEST_CASE("bench runner: strided ranks under NCCL ring at the NIC rate, as in order") {
  CHECK(strided_ring_busbw("nccl") == doctest::Approx(12.5).epsilon(0.01));
}

// Without it the ring follows the ranks: all 8 hops cross the servers' NICs, 4 each way.
TEST_CASE("bench runner: strided ranks without NCCL's model cross the NICs on every hop") {
  CHECK(strided_ring_busbw("none") == doctest::Approx(12.5 / 4).epsilon(0.01));
}
