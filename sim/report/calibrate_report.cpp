// The outputs of `gradsync calibrate` (calibrate_report.hpp): bench's times read back, the
// calibrated file's header, the fit as text and as JSON, and the error line of a fit that
// stays off.
#include "gradsync/report/calibrate_report.hpp"

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace gradsync {

void read_bench_times(const std::string& bench_stdout, std::map<long long, double>& time_us,
                      std::map<long long, std::string>& algorithm) {
  for (const auto& r : nlohmann::json::parse(bench_stdout)) {
    const auto b = std::llround(r.at("bytes").get<double>());
    time_us[b] = r.at("time_us").get<double>();
    // protocol: null where the row ran without NCCL's model (bench --json).
    const auto protocol = r.find("protocol");
    algorithm[b] = r.value("algorithm", std::string()) +
                   (protocol != r.end() && protocol->is_string()
                        ? "/" + protocol->get<std::string>()
                        : "");
  }
}

std::string calibrated_topology_file(const CalibrationReport& report,
                                     const std::string& base_text) {
  const CalibrationFit& fit = report.fit;
  const int nodes = report.job.nodes;
  std::string changes;
  for (const FitParam& p : fit.params)
    if (p.fitted)
      changes += fmt::format("\n#   {} {} (was {})", p.label, fit_param_text(p, p.value),
                             fit_param_text(p, p.initial));
  if (changes.empty()) changes = "\n#   no parameter changed";
  std::string out = fmt::format(
      "# Calibrated by `gradsync calibrate {} --nccl-tests {}` ({} ranks on {} server{}, {} "
      "run{} averaged, --algo {}):{}\n#   sizes >= 1 MiB within {:.1f} %{}.\n",
      report.topology, report.log, report.job.ranks, nodes, nodes == 1 ? "" : "s", report.runs,
      report.runs == 1 ? "" : "s", report.algorithm, changes, fit.worst_large * 100,
      fit.ok ? "" : " (written with --force: the fit stays off)");
  out += calibrated_topology_text(base_text, fit.params, report.log, report.topology);
  return out;
}

std::string calibration_text(const CalibrationReport& report) {
  const CalibrationFit& fit = report.fit;
  const std::vector<ComparedRow>& after = fit.after;
  const std::vector<ComparedRow>& before = fit.before;
  const int nodes = report.job.nodes;
  std::string out;
  out += fmt::format("# gradsync calibrate: {} against {} ({} ranks on {} server{}, {} "
                     "run{} averaged), algorithm {}\n",
                     report.topology, report.log, report.job.ranks, nodes, nodes == 1 ? "" : "s",
                     report.runs, report.runs == 1 ? "" : "s", report.algorithm);
  for (const FitParam& p : fit.params) {
    if (p.stage > fit.stages && p.value == p.initial) continue;
    out += fmt::format("# {}: {} (was {}){}\n", p.label, fit_param_text(p, p.value),
                       fit_param_text(p, p.initial),
                       p.fitted ? "" : p.no_effect ? "  [no effect on these rows]"
                                                   : "  [not fitted]");
  }
  out += fmt::format("# {} stage{}, {} update{}, {} simulations\n", fit.stages,
                     fit.stages == 1 ? "" : "s", fit.updates, fit.updates == 1 ? "" : "s",
                     report.simulations);
  out += "# measured: the faster of each row's out-of-place and in-place times\n#\n";
  out += fmt::format("#{:>11} {:>11} {:>11} {:>10} {:>10} {:>8} {:>8}  {}\n", "size",
                     "measured", "simulated", "meas busbw", "sim busbw", "error", "before",
                     "algorithm");
  out += fmt::format("#{:>11} {:>11} {:>11} {:>10} {:>10} {:>8} {:>8}\n", "(B)", "(us)",
                     "(us)", "(GB/s)", "(GB/s)", "(busbw)", "");
  for (std::size_t i = 0; i < after.size(); ++i) {
    const ComparedRow& r = after[i];
    out += fmt::format("{:>12.0f} {:>11.2f} {:>11.2f} {:>10.2f} {:>10.2f} {:>+7.1f}% "
                       "{:>+7.1f}%  {}\n",
                       r.bytes, r.measured_time_us, r.simulated_time_us, r.measured_busbw_GBps,
                       r.simulated_busbw_GBps, r.busbw_error() * 100,
                       before[i].busbw_error() * 100, r.algorithm);
  }
  out += "#\n# band                     rows  median before  median after   worst  promise\n";
  for (const FitBand& b : fit.bands)
    out += fmt::format("# {:<7} {:<16} {:>4} {:>13.1f}% {:>12.1f}% {:>+6.1f}%  {}{}\n",
                       b.after.band.name, b.after.band.label, b.after.rows,
                       b.before.median_abs_error * 100, b.after.median_abs_error * 100,
                       b.after.worst_error * 100, b.within_promise ? "met" : "MISSED",
                       b.asked ? "" : " (not fitted)");
  out += fmt::format("# sizes >= 1 MiB: max |error| {:.2f} %{}\n", fit.worst_large * 100,
                     fit.worst_large <= kCalibrationPromiseLarge ? " (within 5 %)"
                                                                 : " (NOT within 5 %)");
  for (const auto& n : fit.notes) out += "# note: " + n + '\n';
  if (report.written) out += "# wrote " + report.output + '\n';
  return out;
}

nlohmann::ordered_json calibration_json(const CalibrationReport& report) {
  const CalibrationFit& fit = report.fit;
  const std::vector<ComparedRow>& after = fit.after;
  const std::vector<ComparedRow>& before = fit.before;
  const FitParam& eff = fit.params[0];
  const FitParam& lat = fit.params[1];
  nlohmann::ordered_json j;
  j["topology"] = report.topology;
  j["log"] = report.log;
  j["ranks"] = report.job.ranks;
  j["nodes"] = report.job.nodes;
  j["runs"] = report.runs;
  j["algorithm"] = report.algorithm;
  j["group"] = report.job.group;
  j["parameters"] = {
      {"efficiency", {{"key", eff.label}, {"initial", eff.initial}, {"fitted", eff.value},
                      {"fitted_from", eff.fitted ? "every row" : "not fitted (no effect)"}}},
      {"latency", {{"key", lat.label}, {"initial_s", lat.initial}, {"fitted_s", lat.value},
                   {"fitted_from", lat.fitted ? "every row" : "not fitted (no effect)"}}}};
  for (const FitParam& p : fit.params)
    if (p.nccl)
      j["parameters"][p.path.back()] = {{"key", p.label}, {"initial", p.initial},
                                        {"fitted", p.value}, {"used", p.fitted}};
  j["stages"] = fit.stages;
  j["iterations"] = fit.updates;
  j["simulations"] = report.simulations;
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < after.size(); ++i) {
    const ComparedRow& r = after[i];
    arr.push_back({{"bytes", r.bytes}, {"measured_time_us", r.measured_time_us},
                   {"simulated_time_us", r.simulated_time_us},
                   {"measured_busbw_GBps", r.measured_busbw_GBps},
                   {"simulated_busbw_GBps", r.simulated_busbw_GBps},
                   {"error", r.time_ratio() - 1.0}, {"busbw_error", r.busbw_error()},
                   {"uncalibrated_busbw_error", before[i].busbw_error()},
                   {"algorithm", r.algorithm}});
  }
  j["rows"] = arr;
  nlohmann::ordered_json jb = nlohmann::ordered_json::array();
  for (const FitBand& b : fit.bands)
    jb.push_back({{"band", b.after.band.name}, {"rows", b.after.rows}, {"asked", b.asked},
                  {"median_abs_error_before", b.before.median_abs_error},
                  {"median_abs_error", b.after.median_abs_error},
                  {"worst_abs_error", b.after.worst_abs_error},
                  {"worst_bytes", b.after.worst_bytes}, {"within_promise", b.within_promise},
                  {"degraded", b.degraded}});
  j["bands"] = jb;
  j["max_abs_error_ge_1MiB"] = fit.worst_large;
  j["within_5pct_ge_1MiB"] = fit.worst_large <= kCalibrationPromiseLarge;
  j["within_promise"] = fit.within_promise;
  j["ok"] = fit.ok;
  j["failures"] = fit.failures;
  j["notes"] = fit.notes;
  if (report.written) j["output"] = report.output;
  return j;
}

std::string calibration_failure_text(const CalibrationReport& report) {
  return fmt::format("gradsync calibrate: error: the fit stays off: {}; {}\n",
                     fmt::join(report.fit.failures, "; "),
                     report.forced ? "written anyway (--force)"
                     : report.output.empty() ? "--force accepts it"
                                             : "nothing written (--force writes it)");
}

}  // namespace gradsync
