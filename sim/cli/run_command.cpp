// `gradsync run SCENARIO [--set key=value]... [--json] [--trace FILE] [-o DIR]`: the main job.
// Simulates a training step of the scenario on its cluster and prints where the time goes:
// compute, communication and the part of it that is exposed, throughput, scaling, the busiest
// links and the verdict users act on (README.md, Commands).
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "commands.hpp"
#include "gradsync/io/command_files.hpp"
#include "gradsync/report/chrome_trace.hpp"
#include "gradsync/collective/rank_placement.hpp"
#include "gradsync/units/config_error.hpp"
#include "gradsync/report/run_report.hpp"
#include "gradsync/config/scenario_loader.hpp"
#include "gradsync/scenario/scenario_runner.hpp"

namespace gradsync::cli {
namespace {

struct RunCliOptions {
  std::string file;
  std::vector<std::string> sets;
  bool json = false;
  std::string trace;
  std::string out_dir;
  std::string fidelity = "auto";
  std::vector<std::string> cfg;
};

void run(const RunCliOptions& o) {
  const LoadedScenario loaded = load_scenario_file(o.file, o.sets);
  RunOptions options;
  for (const auto& c : o.cfg) options.simgrid_args.push_back("--cfg=" + c);
  options.fidelity = fidelity_from_string(o.fidelity).value_or(Fidelity::Auto);
  // Progress on a terminal for collectives that simulate for over 2 s (stderr; silent with
  // --json or when stderr is not a terminal).
  const bool progress = isatty(STDERR_FILENO) != 0 && !o.json;
  bool shown = false;
  if (progress)
    options.progress = [&shown](const RunProgress& r) {
      shown = true;
      std::cerr << "\r" << (r.routing ? "" : "simulating a collective: ") << progress_text(r)
                << "   " << std::flush;
    };
  const ScenarioResult result = run_scenario(loaded, options);
  if (shown) std::cerr << "\r" << std::string(80, ' ') << "\r" << std::flush;
  const auto json = run_result_json(result, loaded);
  if (o.json)
    std::cout << json.dump(2) << '\n';
  else
    std::cout << run_result_text(result, loaded);
  if (!o.trace.empty())
    write_output_file(o.trace, chrome_trace_json(result, loaded).dump() + "\n");
  if (!o.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.out_dir, ec);
    if (ec) throw EnvironmentError(o.out_dir, "cannot create directory: " + ec.message());
    write_output_file(std::filesystem::path(o.out_dir) / "result.json", json.dump(2) + "\n");
    write_output_file(std::filesystem::path(o.out_dir) / "trace.json",
                      chrome_trace_json(result, loaded).dump() + "\n");
  }
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto opts = std::make_shared<RunCliOptions>();
  CLI::App* cmd = app.add_subcommand("run", "simulate training steps of a scenario and show "
                                            "where the time goes");
  cmd->add_option("scenario", opts->file, "scenario YAML file")->required();
  cmd->add_option("--set", opts->sets, "override a scenario key: dotted.key=value (repeatable)");
  cmd->add_flag("--json", opts->json, "print one JSON object");
  cmd->add_option("--trace", opts->trace, "write a Chrome/Perfetto trace to this file");
  cmd->add_option("-o,--output", opts->out_dir, "write result.json and trace.json to this folder");
  cmd->add_option("--fidelity", opts->fidelity, fmt::format("{}", fmt::join(fidelity_names(), " | ")))
      ->check(CLI::IsMember(fidelity_names()));
  cmd->add_option("--cfg", opts->cfg, "SimGrid option, e.g. contexts/factory:thread");
  cmd->callback([opts] { run(*opts); });
}

}  // namespace gradsync::cli
