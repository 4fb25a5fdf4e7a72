// `gradsync advise SCENARIO [--set key=value]... [--json] [--rank samples|cost] [-j N]`:
// "what should we change?". The advisor (advisor.hpp) plans, searches and ranks; each what-if
// runs as its own `gradsync run --json` worker process (advice_trials.hpp: SimGrid allows one
// simulation per process); this file shows their progress on a terminal and prints the advice
// that advise_report.hpp writes.
#include <chrono>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.hpp"
#include "gradsync/io/advice_trials.hpp"
#include "gradsync/report/advise_report.hpp"
#include "gradsync/report/advisor.hpp"
#include "gradsync/units/config_error.hpp"
#include "gradsync/config/scenario_loader.hpp"

namespace gradsync::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct AdviseCliOptions {
  std::string file;
  std::vector<std::string> sets;
  bool json = false;
  std::string rank = "samples";
  unsigned jobs = 0;
  int max_nodes = 64;
  std::string timeout = "600s";
  std::vector<std::string> cfg;
};

void advise_run(const AdviseCliOptions& o) {
  // Load in-process first: a bad scenario or --set is reported once, as `run` would.
  const LoadedScenario loaded = load_scenario_file(o.file, o.sets);
  if (o.rank != "samples" && o.rank != "cost")
    throw ConfigError(SourceMark{"--rank " + o.rank, 0, 0},
                      "unknown ranking; expected samples or cost");
  const AdviceBaseline b = advice_baseline(loaded);
  if (o.rank == "cost" && !b.has_cost)
    throw ConfigError(SourceMark{"--rank cost", 0, 0},
                      "the topology has no cost: to rank by cost per sample");
  const auto start = Clock::now();
  // On a terminal: how many simulations are done and running.
  const bool tty = ::isatty(STDERR_FILENO) == 1;
  bool drawn = false;
  AdviceTrialRunner runner({.scenario = o.file, .sets = o.sets, .cfg = o.cfg, .jobs = o.jobs,
                            .timeout = o.timeout,
                            .on_progress = [&](std::size_t done, std::size_t running) {
                              if (!tty) return;
                              drawn = true;
                              std::cerr << fmt::format(
                                               "\r\033[Kadvise: {} simulations done, {} running",
                                               done, running)
                                        << std::flush;
                            }});
  const auto close = [&] {
    if (tty && drawn) std::cerr << "\r\033[K" << std::flush;
  };
  AdviseOptions options;
  options.max_nodes = o.max_nodes;
  options.ranking = o.rank == "cost" ? AdviceRanking::CostPerSample : AdviceRanking::SamplesPerSecond;
  Advice a;
  try {
    a = advise(b, options, [&](const std::vector<std::vector<std::string>>& batch) {
      return runner.run(batch);
    });
  } catch (const AdviceBaselineError& e) {  // `run` reported it on one line
    close();
    std::cerr << e.what() << '\n';
    throw ExitStatus{2};
  }
  close();
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  if (o.json) {
    std::cout << advice_json(loaded, a, runner.runs(), wall).dump(2) << '\n';
  } else {
    std::cout << advice_text(loaded, b, a, options.ranking);
    std::cout << fmt::format("\n{} simulations in {:.1f} s\n", runner.runs(), wall);
  }
}

}  // namespace

void add_advise_command(CLI::App& app) {
  auto opts = std::make_shared<AdviseCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "advise", "simulate what-ifs of a scenario (servers, fabric, overlap, accumulation, "
                "compression, strategy, algorithm) and rank them by samples/s");
  cmd->add_option("scenario", opts->file, "scenario YAML file")->required();
  cmd->add_option("--set", opts->sets, "override a scenario key of the baseline (key=value)");
  cmd->add_flag("--json", opts->json, "print one JSON document: baseline, variants best first");
  cmd->add_option("--rank", opts->rank, "samples (samples/s, default) or cost (cost per sample)");
  cmd->add_option("-j,--jobs", opts->jobs, "simulations run at once (default: the CPUs)")
      ->check(CLI::Range(1u, 4096u));
  cmd->add_option("--max-nodes", opts->max_nodes,
                  "largest server count on the scaling curve (default 64)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--timeout", opts->timeout, "wall-time limit per simulation (default 600s)");
  cmd->add_option("--cfg", opts->cfg, "SimGrid option passed to every simulation");
  cmd->callback([opts] { advise_run(*opts); });
}

}  // namespace gradsync::cli
