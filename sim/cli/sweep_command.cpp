// `gradsync sweep SWEEP -o DIR [-j N] [--shard I/N] [--resume] [--baseline OLD.csv
//  --max-regression 5%]`: runs every point of a sweep file (docs/reference.md, Sweep files) as its own
// `gradsync run BASE --set ... --json` process (one SimGrid simulation per process), at most N
// at once, and stores each point's result atomically as it finishes (see
// sim/sweep/sweep_results.hpp), so a killed sweep resumes with --resume and shards merge.
//
// Exit codes: 0 every point ran; 2 bad input (the sweep file, options, baseline, or a folder
// that already holds another run); 3 the --baseline gate failed (a point's step_time_s grew
// by more than --max-regression, or a point that ran in the baseline now fails); 4 the sweep
// finished but some points failed (each recorded with its error); 128+N interrupted by signal
// N, the sweep's or its workers' (what finished is kept, an interrupted point is never
// recorded as failed; --resume continues); 1 a bug.
#include <fcntl.h>
#include <sched.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "../sweep/regression_gate.hpp"
#include "../sweep/sweep_results.hpp"
#include "../sweep/worker_pool.hpp"
#include "commands.hpp"
#include "gradsync/config_error.hpp"
#include "gradsync/sweep.hpp"
#include "gradsync/sweep_summary.hpp"
#include "gradsync/units.hpp"

namespace gradsync::cli {
namespace {

namespace fs = std::filesystem;
using sweep::Json;
using sweep::PointRecord;
using Clock = std::chrono::steady_clock;

struct SweepCliOptions {
  std::string file;
  std::string out_dir;
  unsigned jobs = 0;
  std::string shard;
  bool resume = false;
  bool keep_going = false;
  std::string baseline;
  std::string max_regression = "5%";
  std::string timeout = "600s";
  std::vector<std::string> cfg;
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

std::string clock_text(double seconds) {
  const auto s = static_cast<long long>(seconds + 0.5);
  if (s >= 3600) return fmt::format("{}:{:02d}:{:02d}", s / 3600, (s / 60) % 60, s % 60);
  return fmt::format("{}:{:02d}", s / 60, s % 60);
}

std::string sets_text(const SweepPoint& p) {
  std::string out;
  for (const SweepSet& s : p.sets) out += (out.empty() ? "" : " ") + s.to_arg();
  return out;
}

std::string first_line(const std::string& text) {
  const std::size_t end = text.find('\n');
  return end == std::string::npos ? text : text.substr(0, end) + " …";
}

// Progress on stderr: a redrawn bar with ETA on a terminal, one plain line per point otherwise
// (batch logs).
class Progress {
 public:
  explicit Progress(std::size_t to_run)
      : tty_(::isatty(STDERR_FILENO) == 1), to_run_(to_run), start_(Clock::now()),
        last_draw_(start_) {}

  void finished(const SweepPoint& p, const PointRecord& r, double wall_s) {
    ++done_;
    const bool ok = r.ok;
    if (!ok) ++failed_;
    if (tty_) {
      if (!ok)
        std::cerr << fmt::format("\r\033[Kfailed: {} {}: {}\n", p.id, sets_text(p),
                                 first_line(r.error));
      if (!ok || done_ == to_run_) draw();
      else tick();  // at most 4 redraws a second, however fast points finish
      return;
    }
    // A line per point for small sweeps; for large ones, failures and a status line every 10 s.
    if (!ok || to_run_ <= kEveryPointUpTo)
      std::cerr << fmt::format("sweep: [{}/{}] {} {} {:.2f} s  {}{}\n", done_, to_run_, p.id,
                               ok ? "ok" : "FAILED", wall_s, sets_text(p),
                               ok ? "" : ": " + first_line(r.error))
                << std::flush;
    const auto now = Clock::now();
    const bool status = to_run_ <= kEveryPointUpTo
                            ? done_ % 10 == 0
                            : now - last_draw_ >= std::chrono::seconds(10);
    if (status || done_ == to_run_) {
      last_draw_ = now;
      std::cerr << fmt::format("sweep: {}/{} done, {} failed, {} elapsed, ETA {}\n", done_,
                               to_run_, failed_, clock_text(elapsed()), eta()) << std::flush;
    }
  }

  void tick() {
    if (!tty_ || to_run_ == 0) return;
    const auto now = Clock::now();
    if (now - last_draw_ < std::chrono::milliseconds(250)) return;
    draw();
  }

  void close() {
    if (tty_ && to_run_ > 0) std::cerr << "\r\033[K" << std::flush;
  }

  [[nodiscard]] double elapsed() const {
    return std::chrono::duration<double>(Clock::now() - start_).count();
  }

 private:
  [[nodiscard]] std::string eta() const {
    if (done_ == 0) return "?";
    return clock_text(elapsed() / static_cast<double>(done_) *
                      static_cast<double>(to_run_ - done_));
  }

  void draw() {
    last_draw_ = Clock::now();
    constexpr std::size_t kWidth = 30;
    const std::size_t filled = to_run_ == 0 ? kWidth : kWidth * done_ / to_run_;
    std::cerr << fmt::format("\r\033[K[{}{}] {}/{} points{}  {} elapsed  ETA {}",
                             std::string(filled, '#'), std::string(kWidth - filled, '.'), done_,
                             to_run_, failed_ ? fmt::format(", {} failed", failed_) : "",
                             clock_text(elapsed()), eta())
              << std::flush;
  }

  static constexpr std::size_t kEveryPointUpTo = 500;
  bool tty_;
  std::size_t to_run_;
  std::size_t done_ = 0;
  std::size_t failed_ = 0;
  Clock::time_point start_;
  Clock::time_point last_draw_;
};

// The record of a finished worker.
Json record_of_worker(const SweepPoint& p, const sweep::WorkerResult& w,
                             std::chrono::milliseconds limit) {
  std::string error = sweep::worker_failure(w, limit).value_or("");
  Json metrics = nullptr;
  if (error.empty()) {
    metrics = Json::parse(w.out, nullptr, /*allow_exceptions=*/false);
    if (!metrics.is_object()) {
      metrics = nullptr;
      error = "the worker printed no JSON object";
    }
  }
  const bool ok = error.empty();
  return sweep::make_record(p, ok, error, w.signal ? -1 : w.exit_code, w.wall_s,
                           std::move(metrics));
}

// An exclusive lock on DIR/.lock for the sweep's lifetime: two sweeps writing one folder
// would regenerate its results from under each other.
int lock_folder(const fs::path& dir) {
  const fs::path path = dir / ".lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    throw EnvironmentError(dir.string(),
                           fmt::format("cannot create {}: {}", path.string(), std::strerror(errno)));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0)
    throw ConfigError(SourceMark{dir.string(), 0, 0},
                      "another gradsync sweep is writing this folder (give each shard its own "
                      "-o folder, then merge them)");
  return fd;
}

void sweep_run(const SweepCliOptions& o) {
  install_stop_handlers();  // from the start: a signal while points are checked stops cleanly
  if (o.out_dir.empty())
    throw ConfigError(SourceMark{"gradsync sweep -o", 0, 0},
                      "the results folder is empty: give a folder (it is created)");
  const SweepSpec spec = load_sweep_file(o.file);
  const SweepShard shard = o.shard.empty() ? SweepShard{} : parse_sweep_shard(o.shard);
  const unsigned jobs = o.jobs == 0 ? sweep::available_cpus() : o.jobs;
  const double max_regression = sweep::parse_regression_limit(o.max_regression);
  const std::chrono::milliseconds limit = sweep::parse_worker_limit(o.timeout);
  const std::vector<std::string> keys = spec.keys();
  std::optional<sweep::Baseline> baseline;
  if (!o.baseline.empty()) baseline = sweep::load_baseline(o.baseline, keys);  // fail early
  check_sweep_keys(spec);
  if (!o.keep_going) {
    // Every point of this share is a valid scenario before any runs (a bad value costs an exit 2
    // now, not an hour of points and an exit 4).
    std::vector<SweepPoint> share_points;
    for (std::size_t i = 0; i < spec.point_count(); ++i)
      if (shard.contains(i)) share_points.push_back(spec.point(i));
    const bool tty = isatty(STDERR_FILENO) != 0 && !o.json;
    check_sweep_points(spec, share_points, [&](std::size_t n) {
      if (g_stop_signal != 0) throw ExitStatus{128 + g_stop_signal};
      if (tty && (n % 50 == 0 || n == share_points.size()))
        std::cerr << fmt::format("\r\033[Kchecking points: {}/{}", n, share_points.size())
                  << std::flush;
    });
    if (tty) std::cerr << "\r\033[K" << std::flush;
  }

  const fs::path dir = o.out_dir;
  std::error_code ec;
  fs::create_directories(sweep::points_dir(dir), ec);
  if (ec)
    throw EnvironmentError(dir.string(), "cannot create the folder: " + ec.message());
  const int lock_fd = lock_folder(dir);
  (void)lock_fd;  // held until exit

  sweep::Manifest manifest{spec.name, spec.file, spec.base.string(), keys, spec.point_count(),
                           o.shard.empty() ? std::nullopt : std::optional<SweepShard>(shard)};
  std::vector<std::string> bad;
  std::vector<PointRecord> stored = sweep::read_points(dir, /*remove_temp=*/true, &bad);
  if (!o.resume) {
    if (!stored.empty() || !bad.empty() || fs::exists(dir / "sweep.json", ec))
      throw ConfigError(SourceMark{dir.string(), 0, 0},
                        fmt::format("already holds results of a sweep ({} points); pass --resume "
                                    "to continue it, or write to another folder",
                                    stored.size() + bad.size()));
  } else if (const auto old = sweep::read_manifest(dir)) {
    if (old->keys != manifest.keys || old->points != manifest.points ||
        (old->shard ? old->shard->to_string() : "") != (o.shard.empty() ? "" : shard.to_string()))
      throw ConfigError(
          SourceMark{(dir / "sweep.json").string(), 0, 0},
          fmt::format("holds another sweep ({} points over {}{}), not this one ({} points over "
                      "{}{}); resume with the same sweep file and --shard",
                      old->points, fmt::join(old->keys, ", "),
                      old->shard ? ", shard " + old->shard->to_string() : "", manifest.points,
                      fmt::join(manifest.keys, ", "),
                      o.shard.empty() ? "" : ", shard " + shard.to_string()));
  }
  for (const std::string& b : bad) {  // only a failing disk makes these: run the point again
    std::cerr << fmt::format("{}: warning: not a complete record; the point runs again\n", b);
    fs::remove(b, ec);
  }
  sweep::write_manifest(dir, manifest);

  // This share's points, those already done, and those to run.
  std::vector<SweepPoint> share;
  for (std::size_t i = 0; i < spec.point_count(); ++i)
    if (shard.contains(i)) share.push_back(spec.point(i));
  std::map<std::string, PointRecord> done;
  std::set<std::string> wanted;
  for (const SweepPoint& p : share) wanted.insert(p.id);
  // Records of values this sweep no longer has (the sweep file was edited between runs) are
  // moved to DIR/stale/: kept, but out of the results and out of what merge reads.
  std::size_t foreign = 0;
  for (PointRecord& r : stored) {
    if (wanted.count(r.id)) {
      done.emplace(r.id, std::move(r));
      continue;
    }
    fs::create_directories(dir / "stale", ec);
    fs::rename(r.source, dir / "stale" / fs::path(r.source).filename(), ec);
    if (ec)
      throw ConfigError(SourceMark{r.source, 0, 0},
                        "cannot move a result of other values to stale/: " + ec.message());
    ++foreign;
  }
  std::vector<const SweepPoint*> todo;
  for (const SweepPoint& p : share)
    if (!done.count(p.id)) todo.push_back(&p);
  auto current_records = [&] {
    std::vector<PointRecord> out;
    for (const auto& [id, r] : done) out.push_back(r);
    return out;
  };
  // Regenerated now: a resumed folder's results.jsonl loses any line torn by the crash.
  sweep::write_results(dir, keys, current_records());
  if (o.resume)
    std::cerr << fmt::format("sweep: resuming {}: {} of {} points already done, {} to run{}\n",
                             dir.string(), done.size(), share.size(), todo.size(),
                             foreign ? fmt::format(" ({} results of values no longer in the sweep "
                                                   "moved to stale/)",
                                                   foreign)
                                     : "");
  else
    std::cerr << fmt::format("sweep: {}: {} points{}, {} at a time → {}\n", spec.name,
                             share.size(),
                             o.shard.empty() ? ""
                                             : fmt::format(" (shard {} of {} points)",
                                                           shard.to_string(), spec.point_count()),
                             jobs, dir.string());

  // Run.
  if (g_stop_signal != 0) {
    std::cerr << fmt::format("sweep: stopped by signal {} ({}) before any point ran\n",
                             static_cast<int>(g_stop_signal), ::strsignal(g_stop_signal));
    throw ExitStatus{128 + g_stop_signal};
  }
  sweep::WorkerPool pool("/proc/self/exe", limit);
  Progress progress(todo.size());
  std::size_t next = 0, ran = 0, interrupted = 0;
  int interrupt_signal = SIGTERM;
  const std::string base = spec.base.string();
  while ((next < todo.size() || pool.running() > 0) && g_stop_signal == 0) {
    while (next < todo.size() && pool.running() < jobs && g_stop_signal == 0) {
      const SweepPoint& p = *todo[next];
      std::vector<std::string> args{"run", base};
      for (const SweepSet& s : p.sets) {
        args.emplace_back("--set");
        args.push_back(s.to_arg());
      }
      for (const std::string& c : o.cfg) {
        args.emplace_back("--cfg");
        args.push_back(c);
      }
      args.emplace_back("--json");
      pool.start(next, "gradsync", args);
      ++next;
    }
    for (const sweep::WorkerResult& w : pool.collect(std::chrono::milliseconds(250))) {
      const SweepPoint& p = *todo[w.tag];
      // A point stopped by an interrupt, or that failed while the sweep itself is being
      // stopped, is not recorded: it stays unfinished and --resume runs it.
      const bool failed = sweep::worker_failure(w, limit).has_value();
      if (sweep::worker_interrupted(w) || (failed && g_stop_signal != 0)) {
        ++interrupted;
        interrupt_signal = w.signal != 0 ? w.signal : w.exit_code - 128;
        continue;
      }
      // The durable record: from here on, the point is done.
      const Json record = record_of_worker(p, w, limit);
      PointRecord r = sweep::store_point(dir, record);
      sweep::append_line(dir / "results.jsonl", record.dump());
      progress.finished(p, r, w.wall_s);
      done.emplace(p.id, std::move(r));
      ++ran;
    }
    progress.tick();
  }
  progress.close();
  if (g_stop_signal != 0) {
    pool.kill_all();
    sweep::write_results(dir, keys, current_records());
    std::cerr << fmt::format("sweep: stopped by signal {} ({}): {} of {} points done; continue "
                             "with --resume\n",
                             static_cast<int>(g_stop_signal), ::strsignal(g_stop_signal),
                             done.size(), share.size());
    throw ExitStatus{128 + g_stop_signal};
  }

  const std::vector<PointRecord> records = current_records();
  sweep::write_results(dir, keys, records);
  std::vector<const PointRecord*> failed;
  for (const PointRecord& r : records)
    if (!r.ok) failed.push_back(&r);
  std::sort(failed.begin(), failed.end(),
            [](const PointRecord* a, const PointRecord* b) { return a->index < b->index; });

  std::optional<sweep::BaselineReport> gate;
  if (baseline) gate = sweep::compare_to_baseline(*baseline, records, max_regression);

  SweepSummary summary{spec.name, dir.string(), (dir / "results.csv").string(),
                       (dir / "results.jsonl").string(), records.size(), ran, interrupted,
                       progress.elapsed()};
  for (const PointRecord* r : failed)
    summary.failed.push_back({r->id, r->load()["sets"], r->error});
  if (gate)
    summary.gate = SweepSummary::Gate{o.baseline, max_regression, gate->compared,
                                      gate->unmatched, gate->regressions};
  if (o.json)
    std::cout << sweep_summary_json(summary).dump(2) << '\n';
  else
    std::cout << sweep_summary_text(summary);
  std::cout.flush();
  if (interrupted > 0)
    std::cerr << fmt::format("sweep: {} points were stopped by a signal to their worker and are "
                             "not recorded; --resume runs them\n", interrupted);
  if (gate && !gate->regressions.empty()) throw ExitStatus{3};
  if (!failed.empty()) throw ExitStatus{4};  // 4: real failures only
  if (interrupted > 0) throw ExitStatus{128 + interrupt_signal};
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
