// The writers and readers of `gradsync advise` (advise_report.hpp) on synthetic advice: the
// shipped resnet50-pcie-2node-10gbe scenario loaded for its names and settings, every outcome
// made up here, so each assertion checks what the code does with known inputs (no simulation
// runs).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gradsync/report/advise_report.hpp"
#include "gradsync/config/scenario_loader.hpp"
#include "gradsync/units/units.hpp"

using namespace gradsync;

namespace {

LoadedScenario resnet_two_servers() {
  return load_scenario_file(GRADSYNC_SOURCE_DIR "/scenarios/resnet50-pcie-2node-10gbe.yaml");
}

AdviceOutcome outcome(double step_s, double samples_per_s, double exposed_s) {
  AdviceOutcome o;
  o.step_time_s = step_s;
  o.samples_per_s = samples_per_s;
  o.exposed_comm_s = exposed_s;
  o.gpus = 8;
  o.nodes = 2;
  o.verdict = exposed_s / step_s > 0.3 ? "communication-bound" : "compute-bound";
  return o;
}

RankedVariant ranked(AdviceKind kind, std::string change, std::vector<std::string> sets,
                     const AdviceOutcome& o, double gain) {
  RankedVariant r;
  r.variant.kind = kind;
  r.variant.change = std::move(change);
  r.variant.sets = std::move(sets);
  r.outcome = o;
  r.gain = gain;
  return r;
}

// A 2 s step at 100 samples/s with half of it exposed communication; a faster network triples
// the samples/s (10 % exposed), turning overlap off loses 20 %; 400 GbE buys nothing over 100
// GbE; auto already runs tree; accumulation 4 or Top-K 1 % meet the 30 % rule; scaling pays
// up to 4 servers.
Advice synthetic_advice() {
  Advice a;
  a.baseline = outcome(2.0, 100.0, 1.0);
  a.baseline.bottleneck = "n0.nic0 -> switch";
  a.ranked.push_back(ranked(AdviceKind::Fabric, "network: ethernet 10 Gb/s → 100 GbE",
                            {"topology_overrides.node.nic_bandwidth=100Gbps"},
                            outcome(1.0, 300.0, 0.1), 2.0));
  a.ranked.push_back(ranked(AdviceKind::Overlap, "overlap: bucketed → none",
                            {"sync.overlap=none"}, outcome(2.5, 80.0, 1.25), -0.2));
  a.unchanged.push_back(ranked(AdviceKind::Algorithm, "algorithm: auto → tree",
                               {"sync.algorithm=tree"}, outcome(2.0, 100.0, 1.0), 0.0));
  a.no_better.push_back(ranked(AdviceKind::Fabric, "network: ethernet 10 Gb/s → 400 GbE",
                               {"topology_overrides.node.nic_bandwidth=400Gbps"},
                               outcome(1.0, 301.0, 0.09), 2.01));
  NetworkOption base{"10 GbE", Fabric::Ethernet, 10.0, true, false, a.baseline, {}};
  NetworkOption fast{"100 GbE", Fabric::Ethernet, 100.0, false, false, outcome(1.0, 300.0, 0.1),
                     {"topology_overrides.node.nic_bandwidth=100Gbps"}};
  a.networks = {base, fast};
  a.cheapest_network = 1;
  a.scaling.curve = {{1, outcome(1.0, 60.0, 0.0)}, {2, a.baseline}, {4, outcome(2.2, 180.0, 1.2)}};
  a.scaling.peak_nodes = 4;
  a.scaling.breakeven_nodes = 2;
  a.scaling.diminishing_after = 4;
  a.scaling.pays_from = 1;
  a.accumulation_needed = 4;
  a.topk_ratio_needed = 0.01;
  a.compression_ratio_needed = 50.0;
  a.notes = {"a note"};
  AdviceVariant tensor;
  tensor.kind = AdviceKind::Parallel;
  tensor.change = "tensor parallel: 1 → 2";
  tensor.sets = {"parallel.tensor=2"};
  a.not_applicable.emplace_back(tensor, "the model has no hidden size");
  return a;
}

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.rfind(line + "\n", 0) == 0;
}

}  // namespace

TEST_CASE("advice_outcome_from_run_json reads the keys of run --json the advisor uses") {
  const auto j = nlohmann::json::parse(R"({
    "gpus": 16, "nodes": 2, "step_time_s": 0.5, "exposed_comm_s": 0.2, "samples_per_s": 512.0,
    "grad_bytes_per_sync": 1e8, "wire_bytes_per_sync": 2.5e7, "verdict": "communication-bound",
    "bottleneck": {"link": "n1.nic0 -> leaf0", "utilization": 0.9},
    "memory_per_gpu_bytes": {"weights": 1e9, "total": 3e9}, "gpu_memory_bytes": 8e10,
    "fits_in_memory": true, "cluster_cost": 250000.0, "cost_per_sample": 0.001})");
  const AdviceOutcome o = advice_outcome_from_run_json(j);
  CHECK(o.gpus == 16);
  CHECK(o.nodes == 2);
  CHECK(o.step_time_s == 0.5);
  CHECK(o.exposed_share() == doctest::Approx(0.4));
  CHECK_FALSE(o.under_rule());
  CHECK(o.samples_per_s == 512.0);
  CHECK(o.grad_bytes_per_sync == 1e8);
  CHECK(o.wire_bytes_per_sync == 2.5e7);
  CHECK(o.verdict == "communication-bound");
  CHECK(o.bottleneck == "n1.nic0 -> leaf0");
  CHECK(o.memory_per_gpu_bytes == 3e9);
  CHECK(o.gpu_memory_bytes == 8e10);
  REQUIRE(o.fits_in_memory.has_value());
  CHECK(*o.fits_in_memory);
  REQUIRE(o.cluster_cost.has_value());
  CHECK(*o.cluster_cost == 250000.0);
  REQUIRE(o.cost_per_sample.has_value());
  CHECK(*o.cost_per_sample == 0.001);

  // Unpriced, no GPU memory known, no bottleneck: those stay unset (null is not a number).
  const auto bare = nlohmann::json::parse(R"({"gpus": 8, "nodes": 1, "step_time_s": 1.0,
    "exposed_comm_s": 0.0, "samples_per_s": 10.0, "grad_bytes_per_sync": 1.0,
    "wire_bytes_per_sync": 1.0, "cost_per_sample": null, "bottleneck": null})");
  const AdviceOutcome b = advice_outcome_from_run_json(bare);
  CHECK_FALSE(b.cost_per_sample.has_value());
  CHECK_FALSE(b.cluster_cost.has_value());
  CHECK_FALSE(b.fits_in_memory.has_value());
  CHECK(b.bottleneck.empty());
  CHECK(b.verdict.empty());
}

TEST_CASE("advice_trial_from_run_output: the outcome, or one error when the JSON is unusable") {
  const AdviceTrial ok = advice_trial_from_run_output(
      R"({"gpus": 8, "nodes": 2, "step_time_s": 2.0, "exposed_comm_s": 0.5,
          "samples_per_s": 100.0, "grad_bytes_per_sync": 1.0, "wire_bytes_per_sync": 1.0})");
  REQUIRE(ok.outcome.has_value());
  CHECK(ok.error.empty());
  CHECK(ok.outcome->exposed_share() == doctest::Approx(0.25));
  CHECK(ok.outcome->under_rule());
  for (const char* bad : {"not json", "", R"({"gpus": 8})", R"({"gpus": 8, "nodes": 2,
        "step_time_s": "slow", "exposed_comm_s": 0.5, "samples_per_s": 100.0,
        "grad_bytes_per_sync": 1.0, "wire_bytes_per_sync": 1.0})"}) {
    const AdviceTrial t = advice_trial_from_run_output(bad);
    CHECK_FALSE(t.outcome.has_value());
    CHECK(t.error == "the run printed no usable JSON");
  }
}

TEST_CASE("advice_baseline reads the scenario's settings and the template's shape") {
  const AdviceBaseline b = advice_baseline(resnet_two_servers());
  CHECK(b.cluster_template);
  CHECK(b.nodes == 2);
  CHECK(b.gpus_per_node == 4);
  CHECK(b.nics_per_node == 1);
  CHECK(b.gpus == 8);
  CHECK_FALSE(b.scenario_gpus.has_value());
  REQUIRE(b.network_fabric.has_value());
  CHECK(*b.network_fabric == Fabric::Ethernet);
  CHECK(b.nic_bandwidth.bytes_per_second() == doctest::Approx(10e9 / 8));
  CHECK(b.strategy == SyncStrategy::AllReduce);
  CHECK(b.algorithm == SyncAlgorithm::Auto);
  CHECK(b.overlap == Overlap::Bucketed);
  CHECK(b.accumulation == 1);
  CHECK(b.compression == CompressionMethod::None);
  CHECK(b.compression_keys.empty());
  CHECK(b.nccl);
  CHECK_FALSE(b.has_cost);  // pcie-4gpu-2node-10gbe has no cost:

  // llama-7b-4node-ib: dgx-h100-4node-ib is priced (cost:), 4 servers of 8 GPUs.
  const AdviceBaseline priced = advice_baseline(
      load_scenario_file(GRADSYNC_SOURCE_DIR "/scenarios/llama-7b-4node-ib.yaml"));
  CHECK(priced.has_cost);
  CHECK(priced.nodes == 4);
  CHECK(priced.gpus_per_node == 8);
  CHECK(priced.transformer);
  CHECK(priced.whole_servers);

  // The first 12 GPUs fill 2 of the 4 servers, the second one half: the baseline is 2 servers
  // but not a point of the whole-server scaling curve, whose 2-server point runs 16 GPUs.
  const AdviceBaseline twelve = advice_baseline(load_scenario_file(
      GRADSYNC_SOURCE_DIR "/scenarios/llama-7b-4node-ib.yaml", {"gpus=12"}));
  CHECK(twelve.nodes == 2);
  CHECK_FALSE(twelve.whole_servers);
  const AdviceBaseline sixteen = advice_baseline(load_scenario_file(
      GRADSYNC_SOURCE_DIR "/scenarios/llama-7b-4node-ib.yaml", {"gpus=16"}));
  CHECK(sixteen.nodes == 2);
  CHECK(sixteen.whole_servers);
}

TEST_CASE("advice_text: baseline, what-ifs best first, networks, scaling and the 30 % rule") {
  const LoadedScenario loaded = resnet_two_servers();
  const AdviceBaseline b = advice_baseline(loaded);
  const std::string text =
      advice_text(loaded, b, synthetic_advice(), AdviceRanking::SamplesPerSecond);
  INFO(text);
  CHECK(text.rfind("advise: resnet50-pcie-2node-10gbe (8 GPUs on 2 nodes, topology "
                   "pcie-4gpu-2node-10gbe)\n", 0) == 0);
  CHECK(has_line(text, "baseline: step " + format_time(Seconds(2.0)) +
                           ", 100.0 samples/s, exposed communication 50 % of the step "
                           "(communication-bound); busiest link n0.nic0 -> switch"));
  CHECK(text.find("per sample") == std::string::npos);  // unpriced
  CHECK(has_line(text, "what-ifs, best first by samples/s:"));
  // The change column is as wide as the longest change (in bytes: "→" is 3).
  const std::string fast = "network: ethernet 10 Gb/s → 100 GbE";
  CHECK(has_line(text, fmt::format("    1  {:<{}}  {:>10}  {:>12}  {:>8}  {:>7}", fast,
                                   fast.size(), format_time(Seconds(1.0)), "300.0", "×3.00",
                                   "10 %")));
  CHECK(has_line(text, fmt::format("    2  {:<{}}  {:>10}  {:>12}  {:>8}  {:>7}",
                                   "overlap: bucketed → none", fast.size(),
                                   format_time(Seconds(2.5)), "80.0", "-20.0 %", "50 %")));
  CHECK(has_line(text, "  not listed, what auto already runs here: algorithm: auto → tree"));
  CHECK(has_line(text, "  not listed, no more than 1 % over a slower network: 400 GbE"));
  CHECK(has_line(text, "  cheapest network that meets the 30 % rule: 100 GbE (step " +
                           format_time(Seconds(1.0)) + ", exposed 10 %); ×3.00 samples/s"));
  CHECK(has_line(text, "scaling (samples/s by servers): 1: 60 2: 100 4: 180"));
  CHECK(has_line(text, "  most samples/s at 4 servers of those tried"));
  CHECK(has_line(text, "  breakeven: 2 servers already beat one"));
  CHECK(has_line(text, "  scaling pays up to 4 servers (each doubling until there gives ≥ 1.5× "
                       "the samples/s)"));
  CHECK(has_line(text, "30 % rule (exposed communication ≤ 30 % of the step):"));
  CHECK(has_line(text, "  accumulation needed: 4 micro-batches per step (now 1)"));
  CHECK(has_line(text, "  compression needed: Top-K keeping 1 % of the gradient (50.0× fewer "
                       "bytes on the wire)"));
  CHECK(has_line(text, "  a note"));
  CHECK(text.ends_with("\nnot simulated (the change does not apply to this scenario):\n"
                       "  tensor parallel: 1 → 2: the model has no hidden size\n"));
}

TEST_CASE("advice_text by cost per sample: the cost column, same-price marks, the rule met") {
  const LoadedScenario loaded = resnet_two_servers();
  Advice a;
  a.baseline = outcome(2.0, 100.0, 0.2);
  a.baseline.cost_per_sample = 0.5;
  RankedVariant more = ranked(AdviceKind::Nodes, "servers: 2 → 4 (16 GPUs)",
                              {"topology_overrides.nodes=4"}, outcome(2.0, 190.0, 0.3), 0.9);
  more.outcome.cost_per_sample = 0.52;
  more.variant.same_prices = true;
  RankedVariant unpriced = ranked(AdviceKind::Overlap, "overlap: bucketed → none",
                                  {"sync.overlap=none"}, outcome(2.1, 95.0, 0.3), -0.05);
  a.ranked = {more, unpriced};
  a.rule_met_already = true;
  const std::string text =
      advice_text(loaded, advice_baseline(loaded), a, AdviceRanking::CostPerSample);
  INFO(text);
  CHECK(has_line(text, "          0.5 per sample"));
  CHECK(has_line(text, "what-ifs, best first by cost per sample:"));
  CHECK(text.find("  cost/sample\n") != std::string::npos);
  CHECK(text.find("+90.0 %     15 %         0.52*\n") != std::string::npos);
  CHECK(text.find("-5.0 %     14 %            -\n") != std::string::npos);
  CHECK(has_line(text, "  * priced with the topology's cost: as written (the old NIC and switch "
                       "prices)"));
  CHECK(has_line(text, "  already met: no accumulation or compression needed"));
  CHECK(text.find("scaling (") == std::string::npos);  // no curve: no scaling section
  CHECK(text.find("not simulated") == std::string::npos);
}

TEST_CASE("advice_json: the document's keys, in order, and what each variant carries") {
  const LoadedScenario loaded = resnet_two_servers();
  const nlohmann::ordered_json j = advice_json(loaded, synthetic_advice(), 42, 1.5);
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  CHECK(keys == std::vector<std::string>{
                    "scenario", "topology", "baseline", "variants", "scaling", "rule", "notes",
                    "networks", "cheapest_network_meeting_rule", "no_better_than_slower_network",
                    "same_as_auto", "not_applicable", "simulations", "wall_s"});
  CHECK(j["scenario"] == "resnet50-pcie-2node-10gbe");
  CHECK(j["topology"] == "pcie-4gpu-2node-10gbe");
  CHECK(j["baseline"]["exposed_comm_share"] == 0.5);
  CHECK(j["baseline"]["bottleneck"] == "n0.nic0 -> switch");
  CHECK(j["baseline"]["cost_per_sample"].is_null());
  REQUIRE(j["variants"].size() == 2);
  const auto& top = j["variants"][0];
  CHECK(top["change"] == "network: ethernet 10 Gb/s → 100 GbE");
  CHECK(top["kind"] == "fabric");
  CHECK(top["sets"] == nlohmann::ordered_json{"topology_overrides.node.nic_bandwidth=100Gbps"});
  CHECK(top["gain"] == 2.0);
  CHECK(top["speedup"] == 3.0);
  CHECK(top["exposed_comm_share"] == doctest::Approx(0.1));
  CHECK(top["bottleneck"].is_null());
  CHECK(top["same_prices"] == false);
  CHECK(j["variants"][1]["kind"] == "overlap");
  CHECK(j["scaling"]["curve"].size() == 3);
  CHECK(j["scaling"]["curve"][2]["nodes"] == 4);
  CHECK(j["scaling"]["curve"][2]["samples_per_s"] == 180.0);
  CHECK(j["scaling"]["peak_nodes"] == 4);
  CHECK(j["scaling"]["breakeven_nodes"] == 2);
  CHECK(j["scaling"]["pays_up_to_nodes"] == 4);
  CHECK(j["scaling"]["pays_from_nodes"] == 1);
  CHECK(j["scaling"]["cheapest_nodes"].is_null());
  CHECK(j["rule"]["exposed_share_limit"] == 0.3);
  CHECK(j["rule"]["met_by_baseline"] == false);
  CHECK(j["rule"]["accumulation_needed"] == 4);
  CHECK(j["rule"]["topk_ratio_needed"] == 0.01);
  CHECK(j["rule"]["compression_ratio_needed"] == 50.0);
  CHECK(j["notes"] == nlohmann::ordered_json{"a note"});
  REQUIRE(j["networks"].size() == 2);
  CHECK(j["networks"][0]["baseline"] == true);
  CHECK(j["networks"][0]["meets_rule"] == false);
  CHECK(j["networks"][1]["network"] == "100 GbE");
  CHECK(j["networks"][1]["fabric"] == "ethernet");
  CHECK(j["networks"][1]["meets_rule"] == true);
  CHECK(j["cheapest_network_meeting_rule"] == "100 GbE");
  CHECK(j["no_better_than_slower_network"][0]["samples_per_s"] == 301.0);
  CHECK(j["same_as_auto"][0]["sets"] == nlohmann::ordered_json{"sync.algorithm=tree"});
  CHECK(j["not_applicable"][0]["error"] == "the model has no hidden size");
  CHECK(j["simulations"] == 42);
  CHECK(j["wall_s"] == 1.5);
}

TEST_CASE("advice_run_args: the baseline's overrides, then the what-if's, then --cfg and --json") {
  CHECK(advice_run_args("s.yaml", {"training.steps=2"}, {"sync.overlap=none", "sync.bucket=1MiB"},
                        {"contexts/factory:thread"}) ==
        std::vector<std::string>{"run", "s.yaml", "--set", "training.steps=2", "--set",
                                 "sync.overlap=none", "--set", "sync.bucket=1MiB", "--cfg",
                                 "contexts/factory:thread", "--json"});
  // The baseline itself: no what-if overrides.
  CHECK(advice_run_args("s.yaml", {}, {}, {}) ==
        std::vector<std::string>{"run", "s.yaml", "--json"});
}
