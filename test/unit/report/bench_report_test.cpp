// The writers of `gradsync bench` (bench_report.hpp) and `gradsync estimate --json`
// (estimate_report.hpp) on synthetic inputs: rows made up here, so each assertion checks what
// the writer does with known numbers (no simulation runs). Also bench_sizes(), the sweep of
// message sizes the bench runner simulates.
#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gradsync/report/bench_report.hpp"
#include "gradsync/scenario/bench_runner.hpp"
#include "gradsync/report/estimate_report.hpp"

using namespace gradsync;

namespace {

// 16 ranks, 8 per node, under NCCL's model: 1 MiB took 100 us on ring/LL128 with 4 channels
// (algbw 10.49 GB/s, busbw x 2*15/16), 16 MiB 400 us on tree/Simple.
BenchResult synthetic_bench(SoftwareModel software = SoftwareModel::Nccl) {
  BenchResult r;
  r.topology_name = "synthetic-2node";
  r.software = software;
  r.ranks = 16;
  r.ranks_per_node = 8;
  r.channels = 4;
  BenchRow a;
  a.bytes = 1048576;
  a.time_us = 100.0;
  a.algbw = 1048576 / 100e-6 / 1e9;
  a.busbw = a.algbw * 2.0 * 15.0 / 16.0;
  a.algorithm = "ring";
  a.protocol = software == SoftwareModel::Nccl ? "LL128" : "";
  a.channels = 4;
  a.fidelity = "step";
  a.flows = 480;
  a.best_algorithm = "tree/LL128";
  a.best_time_us = 80.0;
  a.best_busbw = 1048576 / 80e-6 / 1e9 * 2.0 * 15.0 / 16.0;
  BenchRow b = a;
  b.bytes = 16.0 * 1048576;
  b.time_us = 400.0;
  b.algbw = b.bytes / 400e-6 / 1e9;
  b.busbw = b.algbw * 2.0 * 15.0 / 16.0;
  b.algorithm = "tree";
  b.protocol = software == SoftwareModel::Nccl ? "Simple" : "";
  b.fidelity = "flow";
  b.flows = 64;
  b.best_algorithm = "tree/Simple";
  b.best_time_us = 400.0;
  b.best_busbw = b.busbw;
  r.rows = {a, b};
  return r;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<std::string> words_of(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

}  // namespace

TEST_CASE("bench_sizes: min, min x factor, ... up to max, rounded to bytes") {
  const std::vector<double> doubling = bench_sizes(Bytes(8), Bytes(1024), 2.0);
  REQUIRE(doubling.size() == 8);
  CHECK(doubling.front() == 8);
  CHECK(doubling[3] == 64);
  CHECK(doubling.back() == 1024);
  // 1, 10, 100, 1000: the last one despite 10^3 computed in floating point.
  const std::vector<double> decades = bench_sizes(Bytes(1), Bytes(1000), 10.0);
  CHECK(decades == std::vector<double>{1, 10, 100, 1000});
  // A max between two steps stops below it; a factor of 1.5 rounds to whole bytes.
  CHECK(bench_sizes(Bytes(8), Bytes(31), 2.0) == std::vector<double>{8, 16});
  CHECK(bench_sizes(Bytes(3), Bytes(7), 1.5) == std::vector<double>{3, 5, 7});
  CHECK(bench_sizes(Bytes(64), Bytes(64), 4.0) == std::vector<double>{64});
}

TEST_CASE("bench row label: algorithm/protocol under NCCL's model, else the algorithm") {
  BenchRow r;
  r.algorithm = "nvls";
  CHECK(r.label() == "nvls");
  r.protocol = "Simple";
  CHECK(r.label() == "nvls/Simple");
}

TEST_CASE("bench table: nccl-tests' header and columns") {
  BenchRequest request;
  request.op = CollectiveOp::AllReduce;
  request.algorithm.reset();  // auto
  request.fidelity = Fidelity::Flow;
  const std::vector<std::string> lines = lines_of(bench_table_text(request, synthetic_bench()));
  REQUIRE(lines.size() == 7);
  CHECK(lines[0] == "# gradsync bench: allreduce on synthetic-2node (16 ranks, 8 per node), "
                    "algorithm auto");
  CHECK(lines[1] == "# software model: nccl; fidelity: flow; channels: 4; out-of-place; "
                    "GB = 1e9 B");
  CHECK(lines[2] == "#");
  CHECK(words_of(lines[3]) == std::vector<std::string>{"#", "size", "count", "type", "redop",
                                                       "root", "time", "algbw", "busbw", "algo",
                                                       "ch"});
  CHECK(lines[4].find("(elements)") != std::string::npos);
  // size, count (float elements), type, redop, root, time, algbw, busbw, algo, channels
  CHECK(words_of(lines[5]) == std::vector<std::string>{"1048576", "262144", "float", "sum", "-1",
                                                       "100.00", "10.49", "19.66", "ring/LL128",
                                                       "4"});
  CHECK(words_of(lines[6]) == std::vector<std::string>{"16777216", "4194304", "float", "sum",
                                                       "-1", "400.00", "41.94", "78.64",
                                                       "tree/Simple", "4"});
  // nccl-tests' widths: the size right-aligned in 12 columns.
  CHECK(lines[5].substr(0, 12) == "     1048576");
  // Servers holding different numbers of ranks say so instead of "1 per node".
  BenchResult uneven = synthetic_bench();
  uneven.ranks = 12;
  uneven.ranks_per_node = 1;
  uneven.node_sizes = {8, 4};
  CHECK(lines_of(bench_table_text(request, uneven))[0] ==
        "# gradsync bench: allreduce on synthetic-2node (12 ranks on 2 nodes: 8 + 4), algorithm auto");
  // NCCL's graphs under auto, as NCCL_DEBUG=INFO's "Pattern" lines give them, before the "#".
  BenchResult with_view = synthetic_bench();
  NcclTopologyView v;
  v.ring = NcclGraph{8, 45.0, 45.0};
  v.tree = NcclGraph{8, 48.0, 45.0};
  v.nvls = NcclGraph{8, 40.0, 48.0};
  v.comm_channels = 16;
  v.nvls_channels = 16;
  with_view.nccl_view = v;
  const std::vector<std::string> viewed = lines_of(bench_table_text(request, with_view));
  REQUIRE(viewed.size() == 8);
  CHECK(viewed[2] == "# NCCL graphs (nChannels x bwIntra/bwInter GB/s, NCCL_DEBUG=INFO's "
                     "\"Pattern\" lines): ring 8 x 45/45, tree 8 x 48/45, nvls 8 x 40/48; 16 "
                     "ring/tree channels, 16 NVLS channels at most");
  CHECK(viewed[3] == "#");
}

TEST_CASE("bench table: broadcast has no redop and prints its root; best adds the fastest") {
  BenchRequest request;
  request.op = CollectiveOp::Broadcast;
  request.algorithm = Algorithm::Ring;
  request.root = 3;
  request.best = true;
  const std::vector<std::string> lines = lines_of(bench_table_text(request, synthetic_bench()));
  REQUIRE(lines.size() == 7);
  CHECK(lines[0].find("broadcast on synthetic-2node") != std::string::npos);
  CHECK(lines[0].find("algorithm ring") != std::string::npos);
  CHECK(lines[1].find("fidelity: auto") != std::string::npos);
  CHECK(lines[3].find("best: algo        time    busbw") != std::string::npos);
  const std::vector<std::string> row = words_of(lines[5]);
  REQUIRE(row.size() == 13);
  CHECK(row[3] == "none");
  CHECK(row[4] == "3");
  CHECK(row[10] == "tree/LL128");
  CHECK(row[11] == "80.00");
  CHECK(row[12] == "24.58");
}

TEST_CASE("bench table: without NCCL's model no protocol and no channel column") {
  BenchRequest request;
  const std::vector<std::string> lines =
      lines_of(bench_table_text(request, synthetic_bench(SoftwareModel::None)));
  REQUIRE(lines.size() == 7);
  CHECK(lines[1].find("software model: none") != std::string::npos);
  CHECK(lines[3].find(" ch") == std::string::npos);
  const std::vector<std::string> row = words_of(lines[5]);
  REQUIRE(row.size() == 9);
  CHECK(row[8] == "ring");
}

TEST_CASE("bench JSON rows: nccl-tests' columns and the run's details, in order") {
  BenchRequest request;
  request.op = CollectiveOp::Reduce;
  request.root = 5;
  const nlohmann::ordered_json rows = bench_rows_json(request, synthetic_bench());
  REQUIRE(rows.is_array());
  REQUIRE(rows.size() == 2);
  const nlohmann::ordered_json& r = rows[0];
  std::vector<std::string> keys;
  for (const auto& item : r.items()) keys.push_back(item.key());
  CHECK(keys == std::vector<std::string>{"bytes", "count", "type", "redop", "root", "time_us",
                                         "algbw_GBps", "busbw_GBps", "op", "algorithm",
                                         "protocol", "channels", "fidelity", "flows", "ranks"});
  CHECK(r["bytes"].get<double>() == 1048576);
  CHECK(r["count"].get<long long>() == 262144);
  CHECK(r["type"] == "float");
  CHECK(r["redop"] == "sum");
  CHECK(r["root"].get<int>() == 5);
  CHECK(r["time_us"].get<double>() == doctest::Approx(100.0));
  CHECK(r["algbw_GBps"].get<double>() == doctest::Approx(10.48576));
  CHECK(r["busbw_GBps"].get<double>() == doctest::Approx(19.6608));
  CHECK(r["op"] == "reduce");
  CHECK(r["algorithm"] == "ring");
  CHECK(r["protocol"] == "LL128");
  CHECK(r["channels"].get<int>() == 4);
  CHECK(r["fidelity"] == "step");
  CHECK(r["flows"].get<int>() == 480);
  CHECK(r["ranks"].get<int>() == 16);
  CHECK(rows[1]["fidelity"] == "flow");
  CHECK_FALSE(r.contains("best_algorithm"));
}

TEST_CASE("bench JSON rows: protocol null without NCCL's model; best adds three keys") {
  BenchRequest request;
  request.op = CollectiveOp::AllGather;
  request.best = true;
  const nlohmann::ordered_json rows =
      bench_rows_json(request, synthetic_bench(SoftwareModel::None));
  REQUIRE(rows.size() == 2);
  CHECK(rows[0]["protocol"].is_null());
  CHECK(rows[0]["redop"] == "none");
  CHECK(rows[0]["root"].get<int>() == -1);
  CHECK(rows[0]["best_algorithm"] == "tree/LL128");
  CHECK(rows[0]["best_time_us"].get<double>() == doctest::Approx(80.0));
  CHECK(rows[0]["best_busbw_GBps"].get<double>() == doctest::Approx(24.576));
  CHECK(std::prev(rows[0].end()).key() == "best_busbw_GBps");
}

namespace {

// Two measured rows: 1 MiB at 125 us (busbw 15.73), 16 MiB at 400 us (busbw 78.64), from an
// 8-rank log on one host.
NcclTestsLog synthetic_log() {
  NcclTestsLog log;
  log.file = "measured.log";
  log.ranks = 8;
  log.hosts = {"node0"};
  log.device = "NVIDIA H100 80GB HBM3";
  log.runs = 1;
  NcclTestsRow a;
  a.bytes = 1048576;
  a.time_us = 125.0;
  a.busbw_GBps = 1048576 / 125e-6 / 1e9 * 2.0 * 15.0 / 16.0;
  a.line = 40;
  NcclTestsRow b;
  b.bytes = 16.0 * 1048576;
  b.time_us = 400.0;
  b.busbw_GBps = b.bytes / 400e-6 / 1e9 * 2.0 * 15.0 / 16.0;
  b.line = 44;
  log.rows = {a, b};
  return log;
}

}  // namespace

TEST_CASE("bench --compare: measured beside simulated, row by row") {
  const std::vector<ComparedRow> rows = compare_bench_rows(synthetic_log(), synthetic_bench());
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].bytes == 1048576);
  CHECK(rows[0].measured_time_us == doctest::Approx(125.0));
  CHECK(rows[0].simulated_time_us == doctest::Approx(100.0));
  CHECK(rows[0].algorithm == "ring/LL128");
  CHECK(rows[0].line == 40);
  // 125 us measured, 100 us simulated: busbw 25 % higher in the simulation.
  CHECK(rows[0].busbw_error() == doctest::Approx(0.25));
  CHECK(rows[1].busbw_error() == doctest::Approx(0.0));
}

TEST_CASE("bench --compare JSON: the log, the run, the rows and the bands") {
  BenchRequest request;
  request.algorithm.reset();
  const nlohmann::ordered_json out =
      bench_comparison_json(request, synthetic_bench(), synthetic_log());
  CHECK(out["log"]["file"] == "measured.log");
  CHECK(out["log"]["ranks"].get<int>() == 8);
  CHECK(out["log"]["nodes"].get<int>() == 1);
  CHECK(out["log"]["device"] == "NVIDIA H100 80GB HBM3");
  CHECK(out["topology"] == "synthetic-2node");
  CHECK(out["ranks"].get<int>() == 16);
  CHECK(out["op"] == "allreduce");
  CHECK(out["algo"] == "auto");
  REQUIRE(out["rows"].size() == 2);
  CHECK(out["rows"][0]["line"].get<int>() == 40);
  CHECK(out["rows"][0]["time_ratio"].get<double>() == doctest::Approx(0.8));
  CHECK(out["rows"][0]["busbw_error"].get<double>() == doctest::Approx(0.25));
  CHECK(out["rows"][1]["algorithm"] == "tree/Simple");
  // Band A ends below 1 MiB: 1 MiB opens band B, and 16 MiB is in it too.
  REQUIRE(out["bands"].size() == 1);
  CHECK(out["bands"][0]["band"] == "B");
  CHECK(out["bands"][0]["rows"].get<int>() == 2);
  CHECK(out["bands"][0]["worst_abs_busbw_error"].get<double>() == doctest::Approx(0.25));
  CHECK(out["bands"][0]["worst_bytes"].get<double>() == 1048576);
}

TEST_CASE("the nccl-tests harness (-g): said in the table, the comparison and their JSON") {
  BenchRequest request;
  request.gpus_per_thread = 8;
  const std::string table = bench_table_text(request, synthetic_bench());
  CHECK(table.find("# nccl-tests harness: 8 GPUs per thread (-g 8): an iteration takes at "
                   "least 8 x 4.2 us of host launches (33.6 us)\n#\n") != std::string::npos);
  const std::string compared = bench_comparison_text(request, synthetic_bench(), synthetic_log());
  CHECK(compared.find("# nccl-tests harness: 8 GPUs per thread (-g 8)") != std::string::npos);
  CHECK(bench_comparison_json(request, synthetic_bench(), synthetic_log())["gpus_per_thread"]
            .get<int>() == 8);
  BenchResult result = synthetic_bench();
  result.rows[0].host_bound = true;
  result.rows[0].simulated_us = 20.0;
  const nlohmann::ordered_json rows = bench_rows_json(request, result);
  CHECK(rows[0]["host_bound"].get<bool>());
  CHECK(rows[0]["simulated_us"].get<double>() == 20.0);
  CHECK(rows[0]["gpus_per_thread"].get<int>() == 8);
  CHECK_FALSE(rows[1]["host_bound"].get<bool>());
  // One GPU per thread (nccl-tests' default, and torchrun's): no line, no keys.
  request.gpus_per_thread = 1;
  CHECK(bench_table_text(request, synthetic_bench()).find("harness") == std::string::npos);
  CHECK_FALSE(bench_rows_json(request, synthetic_bench())[0].contains("host_bound"));
}

TEST_CASE("bench --compare text: the note on differing ranks, the rows and the band line") {
  BenchRequest request;
  request.algorithm = Algorithm::Ring;
  const std::vector<std::string> lines =
      lines_of(bench_comparison_text(request, synthetic_bench(), synthetic_log()));
  REQUIRE(lines.size() == 12);
  CHECK(lines[0] == "# gradsync bench --compare: allreduce on synthetic-2node (16 ranks, 8 per "
                    "node), algorithm ring");
  CHECK(lines[1] == "# measured: measured.log (8 ranks on 1 hosts, NVIDIA H100 80GB HBM3), "
                    "out-of-place columns; GB = 1e9 B");
  CHECK(lines[2] == "# note: the log ran 8 ranks, the simulation 16");
  CHECK(words_of(lines[7]) == std::vector<std::string>{"1048576", "125.00", "100.00", "0.80",
                                                       "15.73", "19.66", "+25.0%", "ring/LL128"});
  CHECK(lines[9] == "#");
  CHECK(lines[10].find("per size band") != std::string::npos);
  CHECK(lines[11].find("# B ") == 0);
  CHECK(lines[11].find("  2 rows  median  12.5%") != std::string::npos);
  CHECK(lines[11].find("time x 0.80..1.00") != std::string::npos);
  CHECK(lines[11].find("worst  +25.0% at 1 MiB") != std::string::npos);
}

TEST_CASE("estimate JSON: the request, the closed forms and nulls for options not given") {
  EstimateRequest request;
  request.params = 7e9;
  request.dtype = GradDtype::Fp16;
  request.bandwidth = BytesPerSecond(10e9 / 8);
  request.latency = Seconds(50e-6);
  request.gpus = 8;
  const SyncEstimate e = estimate_sync(request);
  const nlohmann::ordered_json out = estimate_json(e);
  CHECK(out.begin().key() == "params");
  CHECK(out["params"].get<double>() == 7e9);
  CHECK(out["dtype"] == "fp16");
  CHECK(out["bytes_per_grad"].get<double>() == 2);
  CHECK(out["grad_bytes"].get<double>() == 14e9);
  CHECK(out["gpus"].get<int>() == 8);
  CHECK(out["bandwidth_GBps"].get<double>() == doctest::Approx(1.25));
  CHECK(out["latency_s"].get<double>() == doctest::Approx(50e-6));
  CHECK(out["efficiency"].get<double>() == doctest::Approx(0.6));
  CHECK(out["effective_bandwidth_GBps"].get<double>() == doctest::Approx(0.75));
  CHECK(out["ring_time_s"].get<double>() == doctest::Approx(e.ring.time.seconds()));
  // ring: 2(n-1)α + 2(n-1)/n · S/(B·e) = 14·50us + 1.75 · 14e9 / 0.75e9
  CHECK(out["ring_time_s"].get<double>() == doctest::Approx(14 * 50e-6 + 1.75 * 14e9 / 0.75e9));
  CHECK(out["naive_time_s"]["point"].get<double>() ==
        doctest::Approx(14e9 / 0.75e9 + 50e-6));
  CHECK(out["hierarchical_time_s"].is_null());
  CHECK(out["gpus_per_node"].is_null());
  CHECK(out["intra_bandwidth_GBps"].is_null());
  CHECK(out["compute_per_micro_batch_s"].is_null());
  CHECK(out["sync_share_no_overlap"].is_null());
  CHECK(out["communication_bound"].is_null());
  CHECK(out["per_micro_batch_s"].contains("ring"));
  CHECK_FALSE(out["per_micro_batch_s"].contains("hierarchical"));
  CHECK(std::prev(out.end()).key() == "communication_bound_share");
}

TEST_CASE("estimate JSON: with compute and a hierarchy, the step share and the bound verdict") {
  EstimateRequest request;
  request.params = 7e9;
  request.dtype = GradDtype::Bf16;
  request.bandwidth = BytesPerSecond(50e9);
  request.latency = Seconds(5e-6);
  request.gpus = 32;
  request.accumulation = 4;
  request.gpus_per_node = 8;
  request.intra_bandwidth = BytesPerSecond(450e9);
  request.compute = Seconds(0.36);
  const SyncEstimate e = estimate_sync(request);
  const nlohmann::ordered_json out = estimate_json(e);
  REQUIRE(e.hierarchical);
  CHECK(out["hierarchical_time_s"].get<double>() ==
        doctest::Approx(e.hierarchical->time.seconds()));
  CHECK(out["gpus_per_node"].get<int>() == 8);
  CHECK(out["intra_bandwidth_GBps"].get<double>() == doctest::Approx(450.0));
  CHECK(out["accumulation"].get<int>() == 4);
  CHECK(out["compute_per_micro_batch_s"].get<double>() == doctest::Approx(0.36));
  CHECK(out["step_compute_time_s"].get<double>() == doctest::Approx(4 * 0.36));
  REQUIRE(out["sync_share_no_overlap"].is_object());
  CHECK(out["sync_share_no_overlap"].contains("hierarchical"));
  // ring per micro-batch = its time / 4 micro-batches.
  CHECK(out["per_micro_batch_s"]["ring"].get<double>() ==
        doctest::Approx(e.ring.time.seconds() / 4));
  for (const auto& item : out["communication_bound"].items())
    CHECK(item.value().get<bool>() ==
          (out["sync_share_no_overlap"][item.key()].get<double>() > kCommunicationBoundShare));
}
