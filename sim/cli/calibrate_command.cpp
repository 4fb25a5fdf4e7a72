// `gradsync calibrate TOPOLOGY --nccl-tests LOG [-o calibrated.yaml] [--json] [--force]`
// (README.md, Commands): fits a topology template to a real nccl-tests run by running the simulator
// itself, over the whole curve. What is fitted, and the candidates' text, come from
// calibration_setup.hpp; the fit (stages, weighting, what is undone, the verdict) is
// fit_calibration() (calibration_fit.hpp); the report and the written file, calibrate_report.hpp.
// Each candidate is simulated by `gradsync bench` in a child process (calibration_runs.hpp:
// SimGrid runs one simulation per process); this command prints and writes the result.
// --bands limits the fit to some bands; the others are still simulated and must not get worse.
// A fit that stays far off exits 3 and writes nothing, unless --force.

#include <cmath>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "commands.hpp"
#include "gradsync/io/command_files.hpp"
#include "gradsync/report/calibrate_report.hpp"
#include "gradsync/io/calibration_runs.hpp"
#include "gradsync/calibrate/calibration_setup.hpp"
#include "gradsync/collective/collective.hpp"
#include "gradsync/config/topology_loader.hpp"
#include "gradsync/units/config_error.hpp"

namespace gradsync::cli {
namespace {

struct CalibrateOptions {
  std::string topology;
  std::string log;
  std::string output;
  std::string algo = "auto";
  int iterations = 8;
  bool json = false;
  bool force = false;
  std::vector<std::string> bands;  // empty: every band the log has
  std::vector<std::string> cfg;
};

constexpr int kExitFitOff = 3;  // the fit stays off (nothing written unless --force)

void run_calibrate(const CalibrateOptions& o) {
  const NcclTestsLog log =
      parse_nccl_tests_log(read_input_file(o.log, "calibrate", "--nccl-tests"), o.log);
  const TopologyFile topo_file = load_topology_file(o.topology);
  if (!topo_file.cluster)
    throw ConfigError(SourceMark{o.topology, 1, 1},
                      "calibrate needs the cluster template form (nodes/node/network), whose "
                      "link groups have one efficiency and latency each");
  const ClusterSpec& spec = *topo_file.cluster;
  CalibrationReport report{
      .topology = o.topology,
      .log = o.log,
      .algorithm = o.algo,
      .job = calibration_job(spec, log, read_input_file(o.topology, "calibrate", "TOPOLOGY"),
                             o.topology, o.log),
      .runs = log.runs,
      .output = o.output,
      .forced = o.force};
  const std::vector<FitParam> params = calibration_params(spec, report.job.multi);
  const FitOptions fit_options = calibration_fit_options(o.iterations, o.bands);
  const std::vector<FitRow> rows = calibration_rows(log, fit_options, o.log);
  std::vector<double> sizes;
  for (const FitRow& r : rows) sizes.push_back(r.bytes);

  CalibrationRuns cal({.topology = o.topology, .algorithm = o.algo, .cfg = o.cfg}, report.job);
  report.fit = fit_calibration(
      rows, params,
      [&](const std::vector<FitParam>& candidate, int stage) {
        return cal.simulate(candidate, stage, sizes);
      },
      fit_options);
  report.written = !o.output.empty() && (report.fit.ok || o.force);
  if (report.written) {
    const std::string out = calibrated_topology_file(report, report.job.base_text);
    (void)load_topology_text(out, o.output);  // the written file must load (bench reads it)
    write_output_file(o.output, out);  // EnvironmentError (exit 1) when it cannot
  }
  // The algorithm each size runs with the fitted values (the fit's last simulation may have
  // been a probe or a rejected step: simulate the result once more).
  (void)cal.simulate(report.fit.params, report.fit.stages, sizes);
  for (ComparedRow& r : report.fit.after) r.algorithm = cal.algorithm_at(std::llround(r.bytes));
  report.simulations = cal.runs();
  if (o.json)
    std::cout << calibration_json(report).dump(2) << '\n';
  else
    std::cout << calibration_text(report);
  if (!report.fit.ok) {
    std::cout.flush();
    std::cerr << calibration_failure_text(report);
    if (!o.force) throw ExitStatus{kExitFitOff};
  }
}

}  // namespace

void add_calibrate_command(CLI::App& app) {
  auto opts = std::make_shared<CalibrateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate", "fit a topology's bottleneck efficiency and latency to an nccl-tests log");
  cmd->add_option("topology", opts->topology, "topology YAML file (cluster template form)")
      ->required();
  cmd->add_option("--nccl-tests", opts->log, "all_reduce_perf output (several runs may be "
                                             "concatenated)")
      ->required();
  cmd->add_option("-o,--output", opts->output, "write the calibrated topology YAML here");
  // Every algorithm that runs an AllReduce as a contender (parameter servers are a strategy).
  std::vector<std::string> algos = algorithm_names(
      [](const AlgorithmInfo& a) { return a.in_auto != AutoUse::Never; });
  algos.insert(algos.begin(), "auto");
  cmd->add_option("--algo", opts->algo,
                  fmt::format("algorithm simulated (default auto: NCCL's choice per size, as the "
                              "logged run): {}", fmt::join(algos, " | ")))
      ->check(CLI::IsMember(algos));
  cmd->add_option("--iterations", opts->iterations, "most fit iterations per stage (default 8)")
      ->check(CLI::Range(0, 40));
  cmd->add_option("--bands", opts->bands, "size bands to fit (default: all the log has): "
                                          "latency, A, B, C; the others must not get worse")
      ->delimiter(',');
  cmd->add_flag("--force", opts->force, "accept (and write) a fit that stays far off or makes "
                                        "a band worse");
  cmd->add_flag("--json", opts->json, "print the fit as one JSON object");
  cmd->add_option("--cfg", opts->cfg, "SimGrid option passed to each simulation");
  cmd->callback([opts] { run_calibrate(*opts); });
}

}  // namespace gradsync::cli
