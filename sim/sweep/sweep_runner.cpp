// Running a sweep: check, lock, resume, the worker loop, the summary (see
// include/gradsync/sweep/sweep_runner.hpp). Workers are WorkerPool processes; records go through
// sweep_results.hpp (atomic point files, regenerated results files).
#include "gradsync/sweep/sweep_runner.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "gradsync/units/config_error.hpp"
#include "durable_file.hpp"
#include "regression_gate.hpp"
#include "sweep_results.hpp"
#include "worker_pool.hpp"

namespace gradsync {
namespace {

namespace fs = std::filesystem;
using sweep::Json;
using sweep::PointRecord;
using Clock = std::chrono::steady_clock;

// Thrown from the points' check when the caller asks to stop; caught by run_sweep.
struct StopWhileChecking {
  int signal;
};

std::string sets_text(const SweepPoint& p) {
  std::string out;
  for (const SweepSet& s : p.sets) {
    if (!out.empty()) out += ' ';
    out += s.to_arg();
  }
  return out;
}

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
// would regenerate its results from under each other. Released when the descriptor closes.
class FolderLock {
 public:
  explicit FolderLock(const fs::path& dir) {
    const fs::path path = dir / ".lock";
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw EnvironmentError(dir.string(), fmt::format("cannot create {}: {}", path.string(),
                                                       std::strerror(errno)));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd_);
      throw ConfigError(SourceMark{dir.string(), 0, 0},
                        "another gradsync sweep is writing this folder (give each shard its own "
                        "-o folder, then merge them)");
    }
  }
  ~FolderLock() { ::close(fd_); }
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_ = -1;
};

int stop_signal(const SweepRunCallbacks& cb) { return cb.stop_signal ? cb.stop_signal() : 0; }

}  // namespace

SweepRunResult run_sweep(const SweepRunOptions& o, const SweepRunCallbacks& cb) {
  SweepRunResult result;
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

  // This share's points.
  std::vector<SweepPoint> share;
  for (std::size_t i = 0; i < spec.point_count(); ++i)
    if (shard.contains(i)) share.push_back(spec.point(i));
  result.share_points = share.size();
  if (!o.keep_going) {
    // Every point of this share is a valid scenario before any runs (a bad value costs an exit 2
    // now, not an hour of points and an exit 4).
    try {
      check_sweep_points(spec, share, [&](std::size_t n) {
        if (const int s = stop_signal(cb); s != 0) throw StopWhileChecking{s};
        if (cb.checked) cb.checked(n, share.size());
      });
    } catch (const StopWhileChecking& stop) {
      result.stopped_by = stop.signal;
      result.stopped_at = SweepRunResult::Stage::Checking;
      return result;
    }
  }

  const fs::path dir = o.out_dir;
  std::error_code ec;
  fs::create_directories(sweep::points_dir(dir), ec);
  if (ec) throw EnvironmentError(dir.string(), "cannot create the folder: " + ec.message());
  const FolderLock lock(dir);

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
    if (cb.note) cb.note(fmt::format("{}: warning: not a complete record; the point runs again", b));
    fs::remove(b, ec);
  }
  sweep::write_manifest(dir, manifest);

  // Those already done, and those to run.
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
  if (cb.note) {
    if (o.resume)
      cb.note(fmt::format("sweep: resuming {}: {} of {} points already done, {} to run{}",
                          dir.string(), done.size(), share.size(), todo.size(),
                          foreign ? fmt::format(" ({} results of values no longer in the sweep "
                                                "moved to stale/)",
                                                foreign)
                                  : ""));
    else
      cb.note(fmt::format("sweep: {}: {} points{}, {} at a time → {}", spec.name, share.size(),
                          o.shard.empty() ? ""
                                          : fmt::format(" (shard {} of {} points)",
                                                        shard.to_string(), spec.point_count()),
                          jobs, dir.string()));
  }

  // Run.
  result.done_points = done.size();
  if (const int s = stop_signal(cb); s != 0) {
    result.stopped_by = s;
    result.stopped_at = SweepRunResult::Stage::BeforeRunning;
    return result;
  }
  const auto start = Clock::now();
  sweep::WorkerPool pool(o.program, limit);
  if (cb.started) cb.started(todo.size());
  std::size_t next = 0, ran = 0, interrupted = 0;
  int interrupt_signal = SIGTERM;
  const std::string base = spec.base.string();
  int stop = 0;
  while ((next < todo.size() || pool.running() > 0) && (stop = stop_signal(cb)) == 0) {
    while (next < todo.size() && pool.running() < jobs && (stop = stop_signal(cb)) == 0) {
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
      // stopped, is not recorded: it stays unfinished and a resumed sweep runs it.
      const bool failed = sweep::worker_failure(w, limit).has_value();
      if (sweep::worker_interrupted(w) || (failed && stop_signal(cb) != 0)) {
        ++interrupted;
        interrupt_signal = w.signal != 0 ? w.signal : w.exit_code - 128;
        continue;
      }
      // The durable record: from here on, the point is done.
      const Json record = record_of_worker(p, w, limit);
      PointRecord r = sweep::store_point(dir, record);
      sweep::append_line(dir / "results.jsonl", record.dump());
      if (cb.finished) cb.finished(SweepPointDone{p.id, sets_text(p), r.ok, r.error, w.wall_s});
      done.emplace(p.id, std::move(r));
      ++ran;
    }
    if (cb.waiting) cb.waiting();
  }
  result.done_points = done.size();
  if (stop != 0 || (stop = stop_signal(cb)) != 0) {
    pool.kill_all();
    sweep::write_results(dir, keys, current_records());
    result.stopped_by = stop;
    result.stopped_at = SweepRunResult::Stage::Running;
    return result;
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

  SweepSummary& summary = result.summary;
  summary = SweepSummary{spec.name, dir.string(), (dir / "results.csv").string(),
                         (dir / "results.jsonl").string(), records.size(), ran, interrupted,
                         std::chrono::duration<double>(Clock::now() - start).count()};
  for (const PointRecord* r : failed)
    summary.failed.push_back({r->id, r->load()["sets"], r->error});
  if (gate) {
    summary.gate = SweepSummary::Gate{o.baseline, max_regression, gate->compared,
                                      gate->unmatched, gate->regressions};
    result.regressions = !gate->regressions.empty();
  }
  if (interrupted > 0) result.interrupt_signal = interrupt_signal;
  return result;
}

int sweep_exit_status(const SweepRunResult& r) {
  if (r.stopped_by != 0) return 128 + r.stopped_by;
  if (r.regressions) return 3;
  if (!r.summary.failed.empty()) return 4;  // 4: real failures only
  if (r.summary.interrupted > 0) return 128 + r.interrupt_signal;
  return 0;
}

}  // namespace gradsync
