// Flows-only plans (PlanForm::Flows) are built without their transfers; flow fidelity must
// replay exactly what summing the full plan's transfers gives: the same phases, steps, fill,
// connections and bytes, and the same transfer and connection counts for resolve_fidelity().
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "gradsync/collective.hpp"
#include "gradsync/engine.hpp"

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
  // Fidelity resolves the same on both forms.
  CHECK(resolve_fidelity(Fidelity::Auto, flows) == resolve_fidelity(Fidelity::Auto, full));
}

}  // namespace

TEST_CASE("flows-only rings equal the summed full plan") {
  for (CollectiveOp op : {CollectiveOp::AllReduce, CollectiveOp::ReduceScatter,
                          CollectiveOp::AllGather, CollectiveOp::Broadcast, CollectiveOp::Reduce})
    for (std::uint32_t ranks : {1U, 2U, 5U, 8U, 24U})
      for (std::uint32_t ppn : {1U, 4U})
        for (std::uint32_t channels : {1U, 3U, 8U})
          for (std::uint32_t pipeline : {0U, 1U, 3U})
            for (double bytes : {3.0, 1000003.0, 67108864.0}) {
              if (ranks % ppn != 0) continue;
              CollectiveRequest r;
              r.op = op;
              r.algorithm = Algorithm::Ring;
              r.ranks = ranks;
              r.ranks_per_node = ppn;
              r.channels = channels;
              r.pipeline = pipeline;
              r.bytes = Bytes(bytes);
              r.root = ranks / 2;
              check_same_flows(r);
            }
  // Servers filled unevenly (8 + 4): rail orders over node sizes.
  CollectiveRequest r;
  r.ranks = 12;
  r.node_sizes = {8, 4};
  r.channels = 4;
  r.bytes = Bytes(1e8 + 7);
  check_same_flows(r);
}

TEST_CASE("flows-only trees, NVLSTree and NVLS with SHARP equal the summed full plan") {
  for (std::uint32_t ranks : {2U, 8U, 12U, 32U})
    for (std::uint32_t ppn : {1U, 4U})
      for (std::uint32_t channels : {1U, 2U, 4U})
        for (std::uint32_t pipeline : {0U, 1U, 3U})
          for (double bytes : {5.0, 3e6 + 1, 1.5e8}) {
            if (ranks % ppn != 0) continue;
            CollectiveRequest r;
            r.algorithm = Algorithm::Tree;
            r.ranks = ranks;
            r.ranks_per_node = ppn;
            r.channels = channels;
            r.pipeline = pipeline;
            r.bytes = Bytes(bytes);
            check_same_flows(r);
          }
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
