// The writers of `gradsync run` (run_report.hpp, chrome_trace.hpp) on a synthetic result: the
// shipped scenarios loaded for their settings and prices, the result's numbers made up here, so
// each assertion checks what the writer does with known inputs (no simulation runs).
#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "gradsync/report/chrome_trace.hpp"
#include "gradsync/report/run_json.hpp"
#include "gradsync/report/run_report.hpp"
#include "gradsync/config/scenario_loader.hpp"
#include "gradsync/scenario/scenario_runner.hpp"
#include "gradsync/topology/topology_summary.hpp"

using namespace gradsync;

namespace {

// llama-7b-4node-ib: plain DDP on dgx-h100-4node-ib, whose `cost:` prices the cluster at
// 1,206,400 USD; 3 steps.
LoadedScenario priced_scenario() {
  return load_scenario_file(GRADSYNC_SOURCE_DIR "/scenarios/llama-7b-4node-ib.yaml");
}
// bert-large-allreduce-25gbe: eth-25gbe-8node carries no prices.
LoadedScenario unpriced_scenario() {
  return load_scenario_file(GRADSYNC_SOURCE_DIR "/scenarios/bert-large-allreduce-25gbe.yaml");
}

// 32 GPUs on 4 servers, a 2 s step: 1.5 s compute, 1 s of collectives of which 0.5 s exposed;
// two buckets of 1 MiB and 3 MiB (ring, then tree), the second one compressed (encode/decode).
ScenarioResult synthetic_result() {
  ScenarioResult r;
  r.scenario_name = "synthetic";
  r.topology_name = "dgx-h100-4node-ib";
  r.gpus = 32;
  r.ranks = 32;
  r.nodes = 4;
  r.ranks_per_node = 8;
  r.buckets.resize(2);
  r.buckets[0].bytes = Bytes(1048576.0);
  r.buckets[1].bytes = Bytes(3.0 * 1048576.0);
  r.sync_plan.buckets.resize(2);
  r.sync_plan.buckets[0].bytes = Bytes(1048576.0);
  r.sync_plan.buckets[1].bytes = Bytes(3.0 * 1048576.0);
  r.sync_plan.grad_bytes = Bytes(4.0 * 1048576.0);
  r.sync_plan.wire_bytes = Bytes(4.0 * 1048576.0);
  r.bucket_algorithms = {"ring", "tree"};
  r.metrics.step_time = Seconds(2.0);
  r.metrics.compute_time = Seconds(1.5);
  r.metrics.comm_time = Seconds(1.0);
  r.metrics.exposed_comm = Seconds(0.5);
  r.metrics.comm_compute_ratio = 1.0 / 1.5;
  r.metrics.gpu_utilization = 0.75;
  r.metrics.samples_per_step = 128.0;
  r.metrics.samples_per_s = 64.0;
  r.metrics.scaling_efficiency = 0.75;
  r.metrics.verdict = Verdict::CommunicationBound;
  r.one_node_samples_per_s = 20.0;
  r.scaling_vs_one_node = 0.8;
  r.timeline.step_time = Seconds(2.0);
  r.timeline.compute = {{ComputePhase::Forward, 0, Seconds(0.0), Seconds(0.5)},
                        {ComputePhase::Backward, 0, Seconds(0.5), Seconds(1.5)}};
  BucketInterval b0;
  b0.bucket = 0;
  b0.start = Seconds(1.0);
  b0.end = Seconds(1.25);
  BucketInterval b1;
  b1.bucket = 1;
  b1.encode_start = Seconds(1.5);
  b1.encode_end = Seconds(1.6);
  b1.start = Seconds(1.6);
  b1.end = Seconds(1.9);
  b1.decode_start = Seconds(1.9);
  b1.decode_end = Seconds(2.0);
  r.timeline.buckets = {b0, b1};
  r.total_time = Seconds(6.0);
  r.busiest_links = {{0, "n0.nic0 -> leaf0", Fabric::InfiniBand, Bytes(2e9), 0.5}};
  r.gpu_utilization_timeline = {{Seconds(0.0), Seconds(1.0), 1.0},
                                {Seconds(1.0), Seconds(2.0), 0.5}};
  r.verdict_text = "communication-bound: synthetic";
  r.memory.params = Bytes(1e9);
  r.memory.grads = Bytes(2e9);
  r.memory.optimizer = Bytes(3e9);
  r.memory.activations = Bytes(4e9);
  r.memory.activations_known = true;
  r.gpu_memory = Bytes(80e9);
  r.fits_in_memory = true;
  r.layout.data = 32;
  r.comm_dp.collectives = 2;
  r.comm_dp.time = Seconds(1.0);
  r.comm_dp.exposed = Seconds(0.5);
  return r;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("run JSON: the keys other commands read back, with the result's values") {
  const LoadedScenario loaded = priced_scenario();
  const nlohmann::ordered_json j = run_result_json(synthetic_result(), loaded);
  CHECK(j.begin().key() == "scenario");
  CHECK(j["scenario"] == "synthetic");
  CHECK(j["topology"] == "dgx-h100-4node-ib");
  CHECK(j[run_json::kGpus] == 32);
  CHECK(j[run_json::kNodes] == 4);
  CHECK(j[run_json::kStepTime].get<double>() == 2.0);
  CHECK(j[run_json::kComputeTime].get<double>() == 1.5);
  CHECK(j[run_json::kCommTime].get<double>() == 1.0);
  CHECK(j[run_json::kExposedComm].get<double>() == 0.5);
  CHECK(j[run_json::kSamplesPerS].get<double>() == 64.0);
  CHECK(j[run_json::kGradBytes].get<double>() == 4.0 * 1048576.0);
  CHECK(j[run_json::kWireBytes].get<double>() == 4.0 * 1048576.0);
  CHECK(j["buckets"] == 2);
  CHECK(j["algorithms"] == nlohmann::ordered_json({{"ring", 1}, {"tree", 1}}));
  CHECK(j["steps"] == loaded.scenario.training.steps);
  CHECK(j["scaling_efficiency_vs_one_node"].get<double>() == 0.8);
  CHECK(j["one_node_samples_per_s"].get<double>() == 20.0);
  CHECK(j[run_json::kBottleneck][run_json::kBottleneckLink] == "n0.nic0 -> leaf0");
  CHECK(j[run_json::kBottleneck]["fabric"] == "infiniband");
  CHECK(j[run_json::kVerdict] == "communication-bound");
  CHECK(j["verdict_text"] == "communication-bound: synthetic");
  REQUIRE(j["busiest_links"].size() == 1);
  CHECK(j["busiest_links"][0]["bytes_per_step"].get<double>() == 2e9);
  REQUIRE(j["gpu_utilization_timeline"].size() == 2);
  CHECK(j["gpu_utilization_timeline"][1]["start_s"].get<double>() == 1.0);
  CHECK(j["gpu_utilization_timeline"][1]["utilization"].get<double>() == 0.5);
  CHECK(j[run_json::kMemoryPerGpu][run_json::kMemoryTotal].get<double>() == 10e9);
  CHECK(j[run_json::kMemoryPerGpu]["optimizer"].get<double>() == 3e9);
  CHECK(j[run_json::kGpuMemory].get<double>() == 80e9);
  CHECK(j[run_json::kFitsInMemory] == true);
  CHECK(j["comm_by_kind"]["dp"]["collectives"] == 2);
  CHECK(j["comm_by_kind"]["dp"]["exposed_s"].get<double>() == 0.5);
  CHECK(j["parallel"]["data_parallel_degree"] == 32);
  // The cluster's price over 3 years, per hour and per sample at 64 samples/s.
  const double per_second = 1206400.0 / (3.0 * 365.0 * 24.0 * 3600.0);
  CHECK(j[run_json::kClusterCost].get<double>() == doctest::Approx(1206400.0));
  CHECK(j["cost_currency"] == "USD");
  CHECK(j[run_json::kCostPerHour].get<double>() == doctest::Approx(per_second * 3600.0));
  CHECK(j[run_json::kCostPerSample].get<double>() == doctest::Approx(per_second / 64.0));
}

TEST_CASE("run JSON: no cost keys without prices, null where the result knows nothing") {
  ScenarioResult r = synthetic_result();
  r.busiest_links.clear();
  r.one_node_samples_per_s.reset();
  r.scaling_vs_one_node.reset();
  r.gpu_memory = Bytes(0.0);
  r.fits_in_memory.reset();
  const nlohmann::ordered_json j = run_result_json(r, unpriced_scenario());
  CHECK_FALSE(j.contains(run_json::kClusterCost));
  CHECK_FALSE(j.contains(run_json::kCostPerHour));
  CHECK_FALSE(j.contains(run_json::kCostPerSample));
  CHECK(j[run_json::kBottleneck].is_null());
  CHECK(j["scaling_efficiency_vs_one_node"].is_null());
  CHECK(j["one_node_samples_per_s"].is_null());
  CHECK(j[run_json::kGpuMemory].is_null());
  CHECK(j[run_json::kFitsInMemory].is_null());
  CHECK(j["busiest_links"].empty());
}

TEST_CASE("run text: header, time rows with shares, throughput, cost, verdict, links, sparkline") {
  const std::string text = run_result_text(synthetic_result(), priced_scenario());
  CHECK(text.rfind("synthetic on dgx-h100-4node-ib: 32 GPUs (4 nodes × 8), 32 data-parallel "
                   "ranks\n", 0) == 0);
  CHECK(contains(text, "sync: allreduce (ring ×1, tree ×1), overlap bucketed"));
  ScenarioResult uneven = synthetic_result();
  uneven.gpus = uneven.ranks = 12;
  uneven.nodes = 2;
  uneven.ranks_per_node = 1;
  uneven.node_sizes = {8, 4};
  const std::string uneven_text = run_result_text(uneven, priced_scenario());
  CHECK(uneven_text.rfind("synthetic on dgx-h100-4node-ib: 12 GPUs (2 nodes: 8 + 4), 12 "
                          "data-parallel ranks\n", 0) == 0);
  // Scaling versus one node: 12 GPUs are 1.5 whole servers' worth.
  CHECK(contains(uneven_text, "80 %   vs 1.5 × one node of 8 GPUs (20.0 samples/s)"));
  CHECK(contains(text, "  step time                      2 s   (3 steps: 6 s)\n"));
  CHECK(contains(text, "  compute                      1.5 s   75 % of the step: 4 × (forward"));
  CHECK(contains(text, "  exposed communication       500 ms   25 % of the step (GPU waiting"));
  CHECK(contains(text, "  throughput                    64.0   samples/s (128 samples per step)"));
  CHECK(contains(text, "  scaling efficiency            75 %   vs 32 × one GPU"));
  CHECK(!contains(text, "above 100 %"));
  // A sharded optimizer: each GPU steps only its share, so more than 32 GPUs' worth.
  ScenarioResult sharded = synthetic_result();
  sharded.metrics.scaling_efficiency = 1.03;
  CHECK(contains(run_result_text(sharded, priced_scenario()),
                 "  scaling efficiency           103 %   vs 32 × one GPU with no communication "
                 "(above 100 %: each GPU steps only its shard of the optimizer)\n"));
  CHECK(contains(text, "80 %   vs 4 × one node (20.0 samples/s)"));
  CHECK(contains(text, "USD per sample (1206400 USD cluster depreciated over 3 years: 45.91 "
                       "USD/hour)"));
  CHECK(contains(text, "\nverdict: communication-bound: synthetic\n"));
  CHECK(contains(text, "  n0.nic0 -> leaf0                   infiniband   1.863 GiB per step"
                       "   50 % utilized\n"));
  // 1.0 and 0.5 utilization: a full bar and a half one.
  CHECK(contains(text, "\n  █▄  (0 … 2 s, 1 s per column)\n"));
  CHECK(text.back() == '\n');
}

TEST_CASE("run text: no cost row without prices; a compressed wire size is shown") {
  ScenarioResult r = synthetic_result();
  r.sync_plan.wire_bytes = Bytes(1048576.0);
  r.sync_plan.notes = {"int8: 4x fewer bytes"};
  const std::string text = run_result_text(r, unpriced_scenario());
  CHECK_FALSE(contains(text, "per sample ("));
  CHECK(contains(text, "wire: 1 MiB per sync after compression\n"));
  CHECK(contains(text, "note: int8: 4x fewer bytes\n"));
}

TEST_CASE("Chrome trace: a track per GPU and bucket, every step laid end to end in us") {
  const LoadedScenario loaded = priced_scenario();
  REQUIRE(loaded.scenario.training.steps == 3);
  const nlohmann::json trace = chrome_trace_json(synthetic_result(), loaded);
  CHECK(trace["displayTimeUnit"] == "ms");
  const nlohmann::json& events = trace["traceEvents"];
  int metadata = 0, compute = 0, comm = 0, codec = 0;
  for (const auto& e : events) {
    if (e["ph"] == "M") ++metadata;
    else if (e["cat"] == "compute") ++compute;
    else if (e["cat"] == "comm") ++comm;
    else if (e["cat"] == "codec") ++codec;
  }
  CHECK(metadata == 2 + 32 + 2);  // two processes, 32 GPU tracks, 2 bucket tracks
  CHECK(compute == 3 * 32 * 2);   // steps × GPUs × compute intervals
  CHECK(comm == 3 * 2);
  CHECK(codec == 3 * 2);          // encode and decode of bucket 1
  CHECK(events[0] == nlohmann::json({{"ph", "M"}, {"pid", 1}, {"tid", 0},
                                     {"name", "process_name"},
                                     {"args", {{"name", "GPUs (compute)"}}}}));
  bool bucket_track = false, third_step_comm = false;
  for (const auto& e : events) {
    if (e["ph"] == "M" && e["pid"] == 2 && e["tid"] == 1 && e["name"] == "thread_name")
      bucket_track = e["args"]["name"] == "bucket 1 (3 MiB)";
    // Step 3 starts at 2 × 2 s: bucket 1's collective at 4 s + 1.6 s, for 0.3 s.
    if (e["ph"] == "X" && e["cat"] == "comm" && e["tid"] == 1 &&
        e["ts"].get<double>() == doctest::Approx(5.6e6)) {
      third_step_comm = true;
      CHECK(e["name"] == "tree 3 MiB");
      CHECK(e["dur"].get<double>() == doctest::Approx(0.3e6));
    }
  }
  CHECK(bucket_track);
  CHECK(third_step_comm);
}

TEST_CASE("Chrome trace: at most 1024 GPU tracks") {
  ScenarioResult r = synthetic_result();
  r.gpus = 4096;
  const nlohmann::json trace = chrome_trace_json(r, priced_scenario());
  int gpu_tracks = 0;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "M" && e["pid"] == 1 && e["name"] == "thread_name") ++gpu_tracks;
  CHECK(gpu_tracks == 1024);
}
