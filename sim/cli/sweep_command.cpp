// `gradsync sweep SWEEP -o DIR [-j N] [--shard I/N] [--resume] [--baseline OLD.csv
//  --max-regression 5%]`: runs every point of a sweep file (docs/reference.md, Sweep files) as its own
// `gradsync run BASE --set ... --json` process (one SimGrid simulation per process), at most N
// at once, and stores each point's result atomically as it finishes (see
// sim/sweep/sweep_results.hpp), so a killed sweep resumes with --resume and shards merge.
// The running is the library's (include/gradsync/sweep/sweep_runner.hpp); this file parses the
// options, installs the stop handlers, shows progress (sweep_progress.hpp) and prints.
//
// Exit codes: 0 every point ran; 2 bad input (the sweep file, options, baseline, or a folder
// that already holds another run); 3 the --baseline gate failed (a point's step_time_s grew
// by more than --max-regression, or a point that ran in the baseline now fails); 4 the sweep
// finished but some points failed (each recorded with its error); 128+N interrupted by signal
// N, the sweep's or its workers' (what finished is kept, an interrupted point is never
// recorded as failed; --resume continues); 1 a bug.
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.hpp"
#include "gradsync/sweep/sweep_runner.hpp"
#include "gradsync/report/sweep_summary.hpp"
#include "sweep_progress.hpp"

namespace gradsync::cli {
namespace {

struct SweepCliOptions : SweepRunOptions {
  bool json = false;
};

volatile std::sig_atomic_t g_stop_signal = 0;
extern "C" void on_stop_signal(int signal) { g_stop_signal = signal; }

// SIGINT/SIGTERM (Ctrl-C, Slurm's time limit, kubectl delete) stop the sweep cleanly: workers
// are killed, finished points stay, results files are regenerated. No SA_RESTART, so poll()
// returns at once.
void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(s, &sa, nullptr);
}

void sweep_run(const SweepCliOptions& o) {
  install_stop_handlers();  // from the start: a signal while points are checked stops cleanly
  const bool tty = ::isatty(STDERR_FILENO) != 0 && !o.json;
  std::optional<SweepProgress> progress;
  SweepRunCallbacks cb;
  cb.stop_signal = [] { return static_cast<int>(g_stop_signal); };
  cb.checked = [tty](std::size_t n, std::size_t total) {
    if (!tty || (n % 50 != 0 && n != total)) return;
    std::cerr << fmt::format("\r\033[Kchecking points: {}/{}", n, total) << std::flush;
    if (n == total) std::cerr << "\r\033[K" << std::flush;
  };
  cb.note = [](const std::string& line) { std::cerr << line << '\n'; };
  cb.started = [&](std::size_t to_run) { progress.emplace(to_run); };
  cb.finished = [&](const SweepPointDone& p) { progress->finished(p); };
  cb.waiting = [&] { progress->tick(); };
  const SweepRunResult r = run_sweep(o, cb);
  if (progress) progress->close();

  const int stop = r.stopped_by;
  if (stop != 0 && r.stopped_at == SweepRunResult::Stage::BeforeRunning)
    std::cerr << fmt::format("sweep: stopped by signal {} ({}) before any point ran\n", stop,
                             ::strsignal(stop));
  else if (stop != 0 && r.stopped_at == SweepRunResult::Stage::Running)
    std::cerr << fmt::format("sweep: stopped by signal {} ({}): {} of {} points done; continue "
                             "with --resume\n",
                             stop, ::strsignal(stop), r.done_points, r.share_points);
  if (stop == 0) {
    if (o.json)
      std::cout << sweep_summary_json(r.summary).dump(2) << '\n';
    else
      std::cout << sweep_summary_text(r.summary);
    std::cout.flush();
    if (r.summary.interrupted > 0)
      std::cerr << fmt::format("sweep: {} points were stopped by a signal to their worker and "
                               "are not recorded; --resume runs them\n",
                               r.summary.interrupted);
  }
  if (const int status = sweep_exit_status(r); status != 0) throw ExitStatus{status};
}

}  // namespace

void add_sweep_command(CLI::App& app) {
  auto opts = std::make_shared<SweepCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "sweep", "run every point of a sweep file, one process per point; results go to "
               "DIR/results.csv and DIR/results.jsonl as points finish");
  cmd->add_option("sweep", opts->file, "sweep YAML file (base:, grid:, zip:)")->required();
  cmd->add_option("-o,--output", opts->out_dir, "results folder")->required();
  cmd->add_option("-j,--jobs", opts->jobs, "points run at once (default: the CPUs this process "
                                           "may use)")
      ->check(CLI::Range(1u, 4096u));
  cmd->add_option("--shard", opts->shard,
                  "run only points whose index mod N == I (I counts from 0: "
                  "--shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT)");
  cmd->add_flag("--resume", opts->resume, "continue a sweep in DIR: finished points are kept");
  auto* baseline = cmd->add_option("--baseline", opts->baseline,
                                   "results.csv of an earlier sweep: exit 3 when a point got "
                                   "slower than --max-regression");
  cmd->add_option("--max-regression", opts->max_regression,
                  "allowed step_time_s growth per point against --baseline (default 5%)")
      ->needs(baseline);
  cmd->add_option("--timeout", opts->timeout, "wall-time limit per point (default 600s)");
  cmd->add_flag("--keep-going", opts->keep_going,
                "do not check every point before running: run them all and record a point "
                "whose scenario is invalid as failed (exit 4)");
  cmd->add_option("--cfg", opts->cfg, "SimGrid option passed to every point's run");
  cmd->add_flag("--json", opts->json, "print a JSON summary on stdout");
  cmd->callback([opts] { sweep_run(*opts); });
}

}  // namespace gradsync::cli
