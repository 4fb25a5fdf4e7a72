// The sweep runner (include/gradsync/sweep/sweep_runner.hpp) without the CLI and without simulating:
// its workers are a shell script standing in for `gradsync run ... --json` that logs its
// arguments, prints a JSON object, and fails for one swept value. What is checked: every point
// runs once with its --set/--cfg arguments, a failed point is recorded with its error (exit 4),
// a stopped sweep keeps what finished and a resumed one runs only the rest, a folder holding
// results is refused without --resume, the folder lock refuses a second runner, a stop before
// any point runs starts no worker, and the baseline gate gives exit 3.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gradsync/units/config_error.hpp"
#include "gradsync/sweep/sweep_runner.hpp"
#include "../scratch_folder.hpp"

using namespace gradsync;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> lines_of(const fs::path& path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::size_t files_in(const fs::path& dir) {
  if (!fs::is_directory(dir)) return 0;
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".json") ++n;
  return n;
}

// A temp folder with a sweep file over sync.algorithm (ring, tree, hierarchical) and a fake
// worker: `tree` exits 2 with an error on stderr, the others print {"step_time_s": 1.5}.
struct SweepFixture {
  fs::path root;
  fs::path calls;  // one line per worker: its arguments
  SweepRunOptions options;

  explicit SweepFixture(const std::string& name) {
    root = fresh_folder("runner-" + name);
    calls = root / "calls.txt";
    const fs::path worker = root / "fake-gradsync.sh";
    std::ofstream(worker) << "#!/bin/sh\n"
                             "echo \"$*\" >> '" << calls.string() << "'\n"
                             "case \"$*\" in\n"
                             "  *sync.algorithm=tree*) echo 'tree is broken' >&2; exit 2;;\n"
                             "esac\n"
                             "echo '{\"step_time_s\": 1.5, \"samples_per_s\": 10}'\n";
    fs::permissions(worker, fs::perms::owner_all);
    std::ofstream(root / "s.yaml")
        << "name: runner-test\nbase: " << GRADSYNC_SOURCE_DIR
        << "/scenarios/resnet50-pcie-2node-10gbe.yaml\n"
           "grid:\n  sync.algorithm: [ring, tree, hierarchical]\n";
    options.file = (root / "s.yaml").string();
    options.out_dir = (root / "out").string();
    options.jobs = 2;
    options.keep_going = true;  // no scenario checks: the workers decide
    options.program = worker.string();
  }
  ~SweepFixture() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  [[nodiscard]] fs::path out() const { return options.out_dir; }
};

}  // namespace

TEST_CASE("sweep runner: every point runs once, a failed point is recorded with its error") {
  SweepFixture f("all");
  f.options.cfg = {"network/model:CM02"};
  std::vector<SweepPointDone> finished;
  std::size_t started = 0;
  SweepRunCallbacks cb;
  cb.started = [&](std::size_t n) { started = n; };
  cb.finished = [&](const SweepPointDone& p) { finished.push_back(p); };
  const SweepRunResult r = run_sweep(f.options, cb);

  CHECK(r.stopped_by == 0);
  CHECK(started == 3);
  REQUIRE(finished.size() == 3);
  const std::vector<std::string> calls = lines_of(f.calls);
  REQUIRE(calls.size() == 3);
  for (const std::string& c : calls) {
    CHECK(c.rfind("run ", 0) == 0);
    CHECK(c.find("--set sync.algorithm=") != std::string::npos);
    CHECK(c.find("--cfg network/model:CM02 --json") != std::string::npos);
  }
  CHECK(r.summary.points == 3);
  CHECK(r.summary.ran == 3);
  REQUIRE(r.summary.failed.size() == 1);
  CHECK(r.summary.failed[0].sets["sync.algorithm"] == "tree");
  CHECK(r.summary.failed[0].error.find("tree is broken") != std::string::npos);
  CHECK(sweep_exit_status(r) == 4);

  // Every point has its record; results.csv has a row per point in index order.
  CHECK(files_in(f.out() / "points") == 3);
  const std::vector<std::string> rows = lines_of(f.out() / "results.csv");
  REQUIRE(rows.size() == 4);
  CHECK(rows[0].rfind("sync.algorithm,step_time_s,samples_per_s,", 0) == 0);
  CHECK(rows[1].rfind("ring,1.5,10,", 0) == 0);
  CHECK(rows[2].rfind("tree,,,", 0) == 0);
  CHECK(rows[2].find("false") != std::string::npos);
  CHECK(rows[3].rfind("hierarchical,1.5,", 0) == 0);
  CHECK(lines_of(f.out() / "results.jsonl").size() == 3);
}

TEST_CASE("sweep runner: a stopped sweep keeps what finished, a resumed one runs the rest") {
  SweepFixture f("resume");
  f.options.jobs = 1;
  std::size_t finished = 0;
  SweepRunCallbacks cb;
  cb.stop_signal = [&] { return finished >= 1 ? SIGTERM : 0; };
  cb.finished = [&](const SweepPointDone&) { ++finished; };
  const SweepRunResult stopped = run_sweep(f.options, cb);
  CHECK(stopped.stopped_by == SIGTERM);
  CHECK(stopped.stopped_at == SweepRunResult::Stage::Running);
  CHECK(stopped.done_points == 1);
  CHECK(stopped.share_points == 3);
  CHECK(sweep_exit_status(stopped) == 128 + SIGTERM);
  CHECK(lines_of(f.calls).size() == 1);
  CHECK(files_in(f.out() / "points") == 1);
  CHECK(lines_of(f.out() / "results.jsonl").size() == 1);

  // The folder holds a sweep: without resume it is refused, and nothing runs.
  CHECK_THROWS_WITH_AS(static_cast<void>(run_sweep(f.options, {})),
                       doctest::Contains("already holds results of a sweep (1 points)"),
                       ConfigError);
  CHECK(lines_of(f.calls).size() == 1);

  f.options.resume = true;
  std::vector<std::string> notes;
  std::vector<std::string> ran;
  SweepRunCallbacks again;
  again.note = [&](const std::string& line) { notes.push_back(line); };
  again.finished = [&](const SweepPointDone& p) { ran.push_back(p.sets); };
  const SweepRunResult resumed = run_sweep(f.options, again);
  CHECK(resumed.stopped_by == 0);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].find("1 of 3 points already done, 2 to run") != std::string::npos);
  CHECK(ran == std::vector<std::string>{"sync.algorithm=tree", "sync.algorithm=hierarchical"});
  CHECK(lines_of(f.calls).size() == 3);  // the first point did not run again
  CHECK(resumed.summary.points == 3);
  CHECK(resumed.summary.ran == 2);
  CHECK(lines_of(f.out() / "results.jsonl").size() == 3);
}

TEST_CASE("sweep runner: the folder lock refuses a second runner") {
  SweepFixture f("lock");
  fs::create_directories(f.out());
  const fs::path lock = f.out() / ".lock";
  const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::flock(fd, LOCK_EX | LOCK_NB) == 0);
  CHECK_THROWS_WITH_AS(static_cast<void>(run_sweep(f.options, {})),
                       doctest::Contains("another gradsync sweep is writing this folder"),
                       ConfigError);
  CHECK_FALSE(fs::exists(f.calls));
  CHECK_FALSE(fs::exists(f.out() / "sweep.json"));
  ::close(fd);
  // Released: the sweep runs.
  CHECK(run_sweep(f.options, {}).summary.points == 3);
}

TEST_CASE("sweep runner: a stop before any point runs starts no worker") {
  SweepFixture f("early");
  SweepRunCallbacks cb;
  cb.stop_signal = [] { return SIGINT; };
  const SweepRunResult r = run_sweep(f.options, cb);
  CHECK(r.stopped_by == SIGINT);
  CHECK(r.stopped_at == SweepRunResult::Stage::BeforeRunning);
  CHECK(sweep_exit_status(r) == 128 + SIGINT);
  CHECK_FALSE(fs::exists(f.calls));

  // While the points are checked (without keep_going): the folder is not even created.
  SweepFixture g("checking");
  g.options.keep_going = false;
  const SweepRunResult c = run_sweep(g.options, cb);
  CHECK(c.stopped_by == SIGINT);
  CHECK(c.stopped_at == SweepRunResult::Stage::Checking);
  CHECK_FALSE(fs::exists(g.out()));
}

TEST_CASE("sweep runner: without keep_going a bad value fails before any point runs") {
  SweepFixture f("badvalue");
  std::ofstream(f.options.file) << "base: " << GRADSYNC_SOURCE_DIR
                                << "/scenarios/resnet50-pcie-2node-10gbe.yaml\n"
                                   "grid:\n  sync.algorithm: [ring, rng]\n";
  f.options.keep_going = false;
  std::size_t checked = 0;
  SweepRunCallbacks cb;
  cb.checked = [&](std::size_t n, std::size_t total) {
    checked = n;
    CHECK(total == 2);
  };
  CHECK_THROWS_WITH_AS(static_cast<void>(run_sweep(f.options, cb)),
                       doctest::Contains("'rng' is not one of"), ConfigError);
  CHECK(checked == 1);  // ring passed, rng did not
  CHECK_FALSE(fs::exists(f.out()));
  CHECK_FALSE(fs::exists(f.calls));
}

TEST_CASE("sweep runner: a point slower than the baseline fails the gate (exit 3)") {
  SweepFixture f("gate");
  std::ofstream(f.root / "old.csv") << "sync.algorithm,step_time_s,point,ok,error\n"
                                       "ring,1.0,p0,true,\nhierarchical,1.49,p2,true,\n";
  f.options.baseline = (f.root / "old.csv").string();
  f.options.max_regression = "10%";
  const SweepRunResult r = run_sweep(f.options, {});
  REQUIRE(r.summary.gate.has_value());
  CHECK(r.summary.gate->compared == 2);
  CHECK(r.summary.gate->unmatched == 1);  // tree has no baseline row
  REQUIRE(r.summary.gate->regressions.size() == 1);  // ring 1.0 -> 1.5; hierarchical within 10 %
  CHECK(r.summary.gate->regressions[0].old_step_s == doctest::Approx(1.0));
  CHECK(r.summary.gate->regressions[0].new_step_s == doctest::Approx(1.5));
  CHECK(r.regressions);
  CHECK(sweep_exit_status(r) == 3);  // the gate before the failed point's 4
}
