// The writers of `gradsync calibrate` (calibrate_report.hpp) on a synthetic fit: two rows (1 MiB
// and 128 MiB), the network's efficiency and latency fitted, NCCL's latency_scale left alone;
// every number made up here, so each assertion checks what the writer does with known inputs.
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gradsync/report/calibrate_report.hpp"
#include "gradsync/units/units.hpp"

using namespace gradsync;

namespace {

const std::string kTemplate =
    "name: test-2node\n"
    "nodes: 2\n"
    "network:\n"
    "  fabric: infiniband\n"
    "  efficiency: 0.8\n"
    "  link_latency: 3us\n";

ComparedRow compared(double bytes, double measured_us, double simulated_us) {
  ComparedRow r;
  r.bytes = bytes;
  r.measured_time_us = measured_us;
  r.simulated_time_us = simulated_us;
  r.measured_busbw_GBps = 10.0;
  r.simulated_busbw_GBps = 10.0 * measured_us / simulated_us;
  return r;
}

BandSummary band(std::size_t index, double median, double worst) {
  BandSummary b;
  b.band = kNcclTestsBands[index];
  b.rows = 1;
  b.median_abs_error = median;
  b.worst_abs_error = worst < 0 ? -worst : worst;
  b.worst_error = worst;
  return b;
}

// 16 ranks on 2 servers, 2 runs; the fit moved the efficiency 0.8 -> 0.84 and the latency
// 3 -> 5 us in one stage and 3 updates, 12 simulations; 1 MiB is 25 % optimistic (was 20 %
// pessimistic), band B misses, band C (not asked) is within 1 %.
CalibrationReport synthetic_report() {
  CalibrationReport r;
  r.topology = "topologies/t.yaml";
  r.log = "logs/all_reduce.log";
  r.algorithm = "auto";
  r.job.nodes = 2;
  r.job.ranks = 16;
  r.job.multi = true;
  r.job.group = "network";
  r.job.base_text = kTemplate;
  r.runs = 2;
  FitParam eff;
  eff.label = "network.efficiency";
  eff.path = {"network", "efficiency"};
  eff.initial = 0.8;
  eff.value = 0.84;
  eff.fitted = true;
  FitParam lat;
  lat.label = "network.link_latency";
  lat.path = {"network", "link_latency"};
  lat.initial = 3e-6;
  lat.value = 5e-6;
  lat.is_time = true;
  lat.fitted = true;
  FitParam scale;
  scale.label = "nccl.latency_scale";
  scale.path = {"nccl", "latency_scale"};
  scale.initial = scale.value = 1.0;
  scale.nccl = true;
  scale.stage = 2;
  r.fit.params = {eff, lat, scale};
  r.fit.before = {compared(1048576, 100.0, 125.0), compared(128.0 * 1048576, 5000.0, 5100.0)};
  r.fit.after = {compared(1048576, 100.0, 80.0), compared(128.0 * 1048576, 5000.0, 5050.5)};
  r.fit.after[0].algorithm = "ring/Simple";
  r.fit.after[1].algorithm = "ring/Simple";
  r.fit.stages = 1;
  r.fit.updates = 3;
  FitBand b{band(2, 0.20, -0.20), band(2, 0.25, 0.25), true, false, false};
  FitBand c{band(3, 0.02, -0.02), band(3, 0.01, -0.01), false, true, false};
  r.fit.bands = {b, c};
  r.fit.worst_large = 0.25;
  r.fit.within_promise = false;
  r.fit.ok = true;
  r.fit.notes = {"band B misses the promise: a note"};
  r.simulations = 12;
  r.output = "out/calibrated.yaml";
  r.written = true;
  return r;
}

bool has_row(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.rfind(line + "\n", 0) == 0;
}

}  // namespace

TEST_CASE("calibration_text: the job, parameters, rows, bands and the 1 MiB promise") {
  const std::string text = calibration_text(synthetic_report());
  INFO(text);
  CHECK(text.rfind("# gradsync calibrate: topologies/t.yaml against logs/all_reduce.log (16 "
                   "ranks on 2 servers, 2 runs averaged), algorithm auto\n", 0) == 0);
  CHECK(has_row(text, "# network.efficiency: 0.8400 (was 0.8000)"));
  CHECK(has_row(text, "# network.link_latency: " + format_time(Seconds(5e-6)) + " (was " +
                           format_time(Seconds(3e-6)) + ")"));
  CHECK(text.find("latency_scale") == std::string::npos);  // stage 2 did not run, unchanged
  CHECK(has_row(text, "# 1 stage, 3 updates, 12 simulations"));
  CHECK(has_row(text, "     1048576      100.00       80.00      10.00      12.50   +25.0%   "
                       "-20.0%  ring/Simple"));
  CHECK(has_row(text, "# B       1 - 64 MiB          1          20.0%         25.0%  +25.0%  "
                       "MISSED"));
  CHECK(has_row(text, "# C       >= 64 MiB           1           2.0%          1.0%   -1.0%  "
                       "met (not fitted)"));
  CHECK(has_row(text, "# sizes >= 1 MiB: max |error| 25.00 % (NOT within 5 %)"));
  CHECK(has_row(text, "# note: band B misses the promise: a note"));
  CHECK(text.ends_with("\n# wrote out/calibrated.yaml\n"));

  CalibrationReport r = synthetic_report();
  r.written = false;
  r.fit.worst_large = 0.05;
  r.fit.params[0].fitted = false;
  r.fit.params[1].fitted = false;
  r.fit.params[1].no_effect = true;
  r.fit.params[2].value = 1.1;  // changed: shown although stage 2 did not run
  const std::string other = calibration_text(r);
  INFO(other);
  CHECK(has_row(other, "# network.efficiency: 0.8400 (was 0.8000)  [not fitted]"));
  CHECK(other.find("(was " + format_time(Seconds(3e-6)) + ")  [no effect on these rows]\n") !=
        std::string::npos);
  CHECK(has_row(other, "# nccl.latency_scale: 1.1000 (was 1.0000)  [not fitted]"));
  CHECK(has_row(other, "# sizes >= 1 MiB: max |error| 5.00 % (within 5 %)"));
  CHECK(other.find("# wrote") == std::string::npos);
}

TEST_CASE("calibration_json: keys in order, parameters, rows and bands") {
  const nlohmann::ordered_json j = calibration_json(synthetic_report());
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  CHECK(keys == std::vector<std::string>{
                    "topology", "log", "ranks", "nodes", "runs", "algorithm", "group",
                    "parameters", "stages", "iterations", "simulations", "rows", "bands",
                    "max_abs_error_ge_1MiB", "within_5pct_ge_1MiB", "within_promise", "ok",
                    "failures", "notes", "output"});
  CHECK(j["ranks"] == 16);
  CHECK(j["group"] == "network");
  CHECK(j["parameters"]["efficiency"]["key"] == "network.efficiency");
  CHECK(j["parameters"]["efficiency"]["fitted"] == 0.84);
  CHECK(j["parameters"]["efficiency"]["fitted_from"] == "every row");
  CHECK(j["parameters"]["latency"]["initial_s"] == 3e-6);
  CHECK(j["parameters"]["latency"]["fitted_s"] == 5e-6);
  CHECK(j["parameters"]["latency_scale"]["used"] == false);
  CHECK(j["iterations"] == 3);
  CHECK(j["simulations"] == 12);
  REQUIRE(j["rows"].size() == 2);
  CHECK(j["rows"][0]["error"] == doctest::Approx(-0.2));  // simulated / measured time - 1
  CHECK(j["rows"][0]["busbw_error"] == doctest::Approx(0.25));
  CHECK(j["rows"][0]["uncalibrated_busbw_error"] == doctest::Approx(-0.2));
  CHECK(j["rows"][0]["algorithm"] == "ring/Simple");
  REQUIRE(j["bands"].size() == 2);
  CHECK(j["bands"][0]["band"] == "B");
  CHECK(j["bands"][0]["median_abs_error_before"] == 0.2);
  CHECK(j["bands"][0]["within_promise"] == false);
  CHECK(j["bands"][1]["asked"] == false);
  CHECK(j["max_abs_error_ge_1MiB"] == 0.25);
  CHECK(j["within_5pct_ge_1MiB"] == false);
  CHECK(j["ok"] == true);
  CHECK(j["output"] == "out/calibrated.yaml");

  CalibrationReport r = synthetic_report();
  r.written = false;
  r.fit.params[0].fitted = false;
  const nlohmann::ordered_json k = calibration_json(r);
  CHECK_FALSE(k.contains("output"));
  CHECK(k["parameters"]["efficiency"]["fitted_from"] == "not fitted (no effect)");
}

TEST_CASE("calibrated_topology_file: a header naming the run, then the fitted keys") {
  CalibrationReport r = synthetic_report();
  std::string file = calibrated_topology_file(r, kTemplate);
  CHECK(file.rfind("# Calibrated by `gradsync calibrate topologies/t.yaml --nccl-tests "
                   "logs/all_reduce.log` (16 ranks on 2 servers, 2 runs averaged, --algo auto):\n"
                   "#   network.efficiency 0.8400 (was 0.8000)\n"
                   "#   network.link_latency " + format_time(Seconds(5e-6)) + " (was " +
                       format_time(Seconds(3e-6)) + ")\n"
                   "#   sizes >= 1 MiB within 25.0 %.\nname: test-2node\n", 0) == 0);
  CHECK(file.find("  efficiency: 0.84  # calibrated from nccl-tests log all_reduce.log") !=
        std::string::npos);
  CHECK(file.find("  link_latency: 5000ns  # calibrated") != std::string::npos);

  r.fit.ok = false;
  for (FitParam& p : r.fit.params) p.fitted = false;
  file = calibrated_topology_file(r, kTemplate);
  CHECK(file.find("averaged, --algo auto):\n#   no parameter changed\n#   sizes >= 1 MiB within "
                  "25.0 % (written with --force: the fit stays off).\n") != std::string::npos);
  CHECK(file.ends_with(kTemplate));
}

TEST_CASE("calibration_failure_text: the failures, and what happened to the file") {
  CalibrationReport r = synthetic_report();
  r.fit.ok = false;
  r.fit.failures = {"band B median 25 %", "band C worse"};
  r.forced = true;
  CHECK(calibration_failure_text(r) == "gradsync calibrate: error: the fit stays off: band B "
                                       "median 25 %; band C worse; written anyway (--force)\n");
  r.forced = false;
  CHECK(calibration_failure_text(r).ends_with(
      "band C worse; nothing written (--force writes it)\n"));
  r.output.clear();
  CHECK(calibration_failure_text(r).ends_with("band C worse; --force accepts it\n"));
}

TEST_CASE("read_bench_times: time and algorithm by size from bench --json") {
  std::map<long long, double> times{{8, 1.0}};
  std::map<long long, std::string> algorithms;
  read_bench_times(R"([{"bytes": 1048576.0, "time_us": 42.5, "algorithm": "ring",
                        "protocol": "Simple", "ranks": 16},
                       {"bytes": 8.4, "time_us": 7.25, "algorithm": "tree"}])",
                   times, algorithms);
  CHECK(times.size() == 2);
  CHECK(times.at(1048576) == 42.5);
  CHECK(times.at(8) == 7.25);  // rounded to whole bytes, replaced
  CHECK(algorithms.at(1048576) == "ring/Simple");
  CHECK(algorithms.at(8) == "tree");
  // Without NCCL's model bench writes "protocol": null (one rank, software: none).
  read_bench_times(R"([{"bytes": 64.0, "time_us": 3.5, "algorithm": "ring", "protocol": null}])",
                   times, algorithms);
  CHECK(algorithms.at(64) == "ring");
  CHECK_THROWS(read_bench_times("gradsync: error", times, algorithms));
  CHECK_THROWS(read_bench_times(R"([{"bytes": 8}])", times, algorithms));
}
