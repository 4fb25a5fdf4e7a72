// Flows-only plans (PlanForm::Flows) are built without their transfers; flow fidelity must
// replay exactly what summing the full plan's transfers gives: the same phases, steps, fill,
// connections and bytes, and the same transfer and connection counts for resolve_fidelity().
#include <doctest/doctest.h>

#include <cmath>
#include <initializer_list>
#include <string>

#include "gradsync/collective/collective.hpp"
#include "gradsync/engine/simulation.hpp"

using namespace gradsync;

namespace {

bool close(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(a)); }

std::string describe(const CollectiveRequest& r) {
  return std::string(to_string(r.op)) + " " + std::string(to_string(r.algorithm)) + " ranks " +
         std::to_string(r.ranks) + " ppn " + std::to_string(r.ranks_per_node) + " channels " +
         std::to_string(r.channels) + " pipeline " + std::to_string(r.pipeline) + " bytes " +
         std::to_string(r.bytes.bytes());
}

void check_same_flows(CollectiveRequest r) {
  CAPTURE(describe(r));
  r.form = PlanForm::Transfers;
  const Plan full = plan_collective(r);
  r.form = PlanForm::Flows;
  const Plan flows = plan_collective(r);
  REQUIRE(flows.flows_only);
  CHECK(flows.transfers.empty());
  CHECK(plan_transfer_count(flows) == full.transfers.size());
  CHECK(plan_connection_count(flows) == plan_connection_count(full));
  CHECK(flows.steps == full.steps);
  CHECK(flows.ranks == full.ranks);
  CHECK(flows.contributors == full.contributors);
  const std::vector<FlowPhase> expected = flow_phases_of(full);
  REQUIRE(flows.flow_phases.size() == expected.size());
  for (std::size_t k = 0; k < expected.size(); ++k) {
    CAPTURE(k);
    const FlowPhase& a = flows.flow_phases[k];
    const FlowPhase& b = expected[k];
    CHECK(a.steps == b.steps);
    CHECK(close(a.fill.bytes(), b.fill.bytes()));
    REQUIRE(a.flows.size() == b.flows.size());
    for (std::size_t i = 0; i < a.flows.size(); ++i) {
      CAPTURE(i);
      CHECK(a.flows[i].src == b.flows[i].src);
      CHECK(a.flows[i].dst == b.flows[i].dst);
      CHECK(a.flows[i].channel == b.flows[i].channel);
      CHECK(close(a.flows[i].bytes.bytes(), b.flows[i].bytes.bytes()));
    }
  }
  // Per-rank bytes agree, and check_plan will not pass a plan it cannot execute.
  const auto sent_full = full.bytes_sent_per_rank();
  const auto sent_flows = flows.bytes_sent_per_rank();
  const auto received_full = full.bytes_received_per_rank();
  const auto received_flows = flows.bytes_received_per_rank();
  for (std::uint32_t k = 0; k < full.ranks; ++k) {
    CHECK(close(sent_flows[k].bytes(), sent_full[k].bytes()));
    CHECK(close(received_flows[k].bytes(), received_full[k].bytes()));
  }
  CHECK_FALSE(check_plan(flows).ok);
  // Fidelity resolves the same on both forms.
  CHECK(resolve_fidelity(Fidelity::Auto, flows) == resolve_fidelity(Fidelity::Auto, full));
}

// Calls fn on a request of `algorithm` for every ranks × ppn (1, 4; dividing ranks) × channels
// × pipeline (0 = automatic, 1, 3) × bytes of the grid.
template <typename Fn>
void for_each_request(Algorithm algorithm, std::initializer_list<std::uint32_t> ranks,
                      std::initializer_list<std::uint32_t> channels,
                      std::initializer_list<double> sizes, Fn&& fn) {
  for (std::uint32_t n : ranks)
    for (std::uint32_t ppn : {1U, 4U})
      for (std::uint32_t c : channels)
        for (std::uint32_t pipeline : {0U, 1U, 3U})
          for (double bytes : sizes) {
            if (n % ppn != 0) continue;
            CollectiveRequest r;
            r.algorithm = algorithm;
            r.ranks = n;
            r.ranks_per_node = ppn;
            r.channels = c;
            r.pipeline = pipeline;
            r.bytes = Bytes(bytes);
            fn(r);
          }
}

}  // namespace

TEST_CASE("flows-only rings equal the summed full plan") {
  for (CollectiveOp op : {CollectiveOp::AllReduce, CollectiveOp::ReduceScatter,
                          CollectiveOp::AllGather, CollectiveOp::Broadcast, CollectiveOp::Reduce})
    for_each_request(Algorithm::Ring, {1U, 2U, 5U, 8U, 24U}, {1U, 3U, 8U},
                     {3.0, 1000003.0, 67108864.0}, [&](CollectiveRequest r) {
                       r.op = op;
                       r.root = r.ranks / 2;
                       check_same_flows(r);
                     });
  // Servers filled unevenly (8 + 4): rail orders over node sizes.
  CollectiveRequest r;
  r.ranks = 12;
  r.node_sizes = {8, 4};
  r.channels = 4;
  r.bytes = Bytes(1e8 + 7);
  check_same_flows(r);
}

TEST_CASE("flows-only trees, NVLSTree, NVLS with SHARP and CollNet equal the summed full plan") {
  for_each_request(Algorithm::Tree, {2U, 8U, 12U, 32U}, {1U, 2U, 4U}, {5.0, 3e6 + 1, 1.5e8},
                   [](const CollectiveRequest& r) { check_same_flows(r); });
  for (std::uint32_t nodes : {1U, 2U, 3U, 5U})
    for (std::uint32_t pipeline : {0U, 1U, 2U, 3U, 5U})
      for (double bytes : {7.0, 3e6 + 1, 2.5e8}) {
        CollectiveRequest r;
        r.algorithm = Algorithm::NvlsTree;
        r.ranks = 4 * nodes;
        r.ranks_per_node = 4;
        r.pipeline = pipeline;
        r.bytes = Bytes(bytes);
        check_same_flows(r);
        r.algorithm = Algorithm::Nvls;  // across servers with SHARP: two SHARP switches
        r.sharp_of_local = {0, 0, 1, 1};
        check_same_flows(r);
        if (nodes < 2) continue;
        for (Algorithm a : {Algorithm::CollNetChain, Algorithm::CollNetDirect}) {
          r.algorithm = a;  // the same two SHARP switches
          for (std::uint32_t channels : {1U, 3U, 8U}) {
            r.channels = channels;
            check_same_flows(r);
          }
        }
        r.channels = 1;
      }
}

TEST_CASE("flows-only plans of the other algorithms are their summed transfers") {
  for (Algorithm a : {Algorithm::Hierarchical, Algorithm::ParameterServer, Algorithm::Nvls}) {
    CollectiveRequest r;
    r.algorithm = a;
    r.ranks = 8;
    r.ranks_per_node = 4;
    r.bytes = Bytes(1e7 + 3);
    r.ps.servers = 2;
    check_same_flows(r);
  }
}

TEST_CASE("plan_collective at a fidelity: transfers for step, flows for flow, auto by size") {
  CollectiveRequest r;
  r.ranks = 8;
  r.bytes = Bytes(1e6);
  CHECK_FALSE(plan_collective(r, Fidelity::Step).flows_only);
  CHECK(plan_collective(r, Fidelity::Flow).flows_only);
  CHECK_FALSE(plan_collective(r, Fidelity::Auto).flows_only);  // small: step fidelity
  r.ranks = 1024;
  r.ranks_per_node = 8;
  r.channels = 8;
  r.bytes = Bytes(1e9);
  const Plan big = plan_collective(r, Fidelity::Auto);
  CHECK(big.flows_only);
  CHECK(big.transfer_count == 2ULL * 1023 * 1024 * 8);
  CHECK(resolve_fidelity(Fidelity::Auto, big) == Fidelity::Flow);
  CHECK_THROWS_AS((void)resolve_fidelity(Fidelity::Step, big), std::logic_error);
  // 16,384 ranks on 16 channels: 8.6G transfers as a full plan, 262,144 flows here.
  r.ranks = 16384;
  r.channels = 16;
  const Plan huge = plan_collective(r, Fidelity::Flow);
  CHECK(huge.flow_phases.at(0).flows.size() == 16384U * 16U);
  CHECK(huge.transfer_count == 2ULL * 16383 * 16384 * 16);
}
