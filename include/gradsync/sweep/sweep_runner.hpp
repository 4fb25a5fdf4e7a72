// Running a sweep (`gradsync sweep`, README.md, Commands): every point of a sweep file as its
// own `PROGRAM run BASE --set ... --json` process (one SimGrid simulation per process), at most
// `jobs` at once, each point's result stored atomically in the results folder as it finishes
// (sim/sweep/sweep_results.hpp), so a stopped sweep resumes and shards merge.
//
// The runner holds an exclusive lock on DIR/.lock while it runs, refuses a folder holding another
// sweep, moves records of values the sweep no longer has to DIR/stale/, and regenerates
// results.jsonl and results.csv from DIR/points/. It prints nothing and installs no signal
// handler: what it has to say goes through SweepRunCallbacks, and the caller says when to stop
// (a signal number, as the CLI's handlers record it).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "gradsync/sweep/sweep.hpp"
#include "gradsync/report/sweep_summary.hpp"

namespace gradsync {

struct SweepRunOptions {
  std::string file;                    // the sweep file
  std::string out_dir;                 // the results folder (created)
  unsigned jobs = 0;                   // points run at once; 0: the CPUs this process may use
  std::string shard;                   // "I/N", empty: every point
  bool resume = false;                 // continue the sweep already in out_dir
  bool keep_going = false;             // do not check every point's scenario before running
  std::string baseline;                // results.csv of an earlier sweep, empty: no gate
  std::string max_regression = "5%";   // allowed step_time_s growth against the baseline
  std::string timeout = "600s";        // wall-time limit per point
  std::vector<std::string> cfg;        // --cfg options passed to every point's run
  std::string program = "/proc/self/exe";  // the gradsync executable the workers run
};

// A point that finished (and is recorded), for progress output.
struct SweepPointDone {
  std::string id;
  std::string sets;    // "key=value key=value", as --set arguments
  bool ok = false;
  std::string error;   // when !ok
  double wall_s = 0.0;
};

// How the sweep tells its caller what happens. Every member may be empty.
struct SweepRunCallbacks {
  // The signal that asks the sweep to stop (SIGINT, SIGTERM, SIGHUP), 0 while none has come.
  // Asked before any point is checked or run, between points checked, and between polls of
  // the workers (at least every 250 ms).
  std::function<int()> stop_signal;
  // Points whose scenario has been checked so far, of `total` (not with keep_going).
  std::function<void(std::size_t checked, std::size_t total)> checked;
  // A line for the user, without a line break: warnings and what the sweep is about to do.
  std::function<void(const std::string& line)> note;
  // The workers are about to start: `to_run` points.
  std::function<void(std::size_t to_run)> started;
  // A point finished and is recorded.
  std::function<void(const SweepPointDone& point)> finished;
  // Between polls of the workers (for a redrawn progress bar).
  std::function<void()> waiting;
};

struct SweepRunResult {
  // Non-zero: stopped by that signal (stop_signal) before the end, `stopped_at` says when.
  // What finished is kept and the results files are regenerated; `summary` is left empty.
  int stopped_by = 0;
  enum class Stage { Checking, BeforeRunning, Running };
  Stage stopped_at = Stage::Running;
  std::size_t share_points = 0;         // points of this share (of the shard)
  std::size_t done_points = 0;          // recorded in the folder, this run's and earlier ones
  // Stopped by a signal to their worker (not recorded): `interrupt_signal` is the last one.
  int interrupt_signal = 0;
  bool regressions = false;             // the baseline gate failed
  SweepSummary summary;                 // when the sweep ran to the end
};

// Runs the sweep. Bad input (the sweep file, options, baseline, a folder locked by another
// sweep or holding another sweep) is a ConfigError; a folder that cannot be created or written
// an EnvironmentError. Failed points are recorded in the folder and in summary.failed.
[[nodiscard]] SweepRunResult run_sweep(const SweepRunOptions& options,
                                       const SweepRunCallbacks& callbacks);

// The exit status `gradsync sweep` gives a result: 128+N stopped by signal N; 3 the baseline
// gate failed; 4 some points failed; 128+N some workers were interrupted by signal N; else 0.
[[nodiscard]] int sweep_exit_status(const SweepRunResult& result);

}  // namespace gradsync
