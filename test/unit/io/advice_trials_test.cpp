// advise's what-ifs as worker processes (include/gradsync/io/advice_trials.hpp) without
// simulating: the worker is a shell script standing in for `gradsync run ... --json` that logs
// its arguments and fails for one variant. What is checked: each variant runs once with the
// baseline's and its own --set and the --cfg options, trials come back in the batch's order,
// a failed run is a trial with the first line of its error, progress is reported, and a bad
// --timeout is bad input.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gradsync/io/advice_trials.hpp"
#include "gradsync/units/config_error.hpp"
#include "../scratch_folder.hpp"

using namespace gradsync;
namespace fs = std::filesystem;

namespace {

struct TrialFixture {
  fs::path root;
  fs::path calls;
  AdviceTrialOptions options;

  TrialFixture() {
    root = fresh_folder("trials");
    calls = root / "calls.txt";
    const fs::path worker = root / "fake-gradsync.sh";
    std::ofstream(worker) << "#!/bin/sh\n"
                             "echo \"$*\" >> '" << calls.string() << "'\n"
                             "case \"$*\" in\n"
                             "  *nodes=3*) printf 'bad nodes\\nsecond line\\n' >&2; exit 2;;\n"
                             "esac\n"
                             "echo 'not json'\n";
    fs::permissions(worker, fs::perms::owner_all);
    options.program = worker.string();
    options.scenario = "s.yaml";
    options.sets = {"sync.algorithm=ring"};
    options.cfg = {"contexts/factory:thread"};
    options.jobs = 2;
  }
  ~TrialFixture() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
};

}  // namespace

TEST_CASE("advice trials: every variant runs once, in order, failures keep their first line") {
  TrialFixture f;
  std::size_t reports = 0, last_done = 0;
  f.options.on_progress = [&](std::size_t done, std::size_t) {
    ++reports;
    last_done = done;
  };
  AdviceTrialRunner runner(f.options);
  const std::vector<AdviceTrial> trials =
      runner.run({{}, {"nodes=3"}, {"nodes=4", "sync.overlap=false"}});
  REQUIRE(trials.size() == 3);
  CHECK_FALSE(trials[0].outcome);
  CHECK(trials[0].error == "the run printed no usable JSON");
  CHECK(trials[1].error.find("bad nodes") != std::string::npos);
  CHECK(trials[1].error.find("second line") == std::string::npos);
  CHECK(trials[2].error == "the run printed no usable JSON");
  CHECK(runner.runs() == 3);
  CHECK(reports >= 1);
  CHECK(last_done == 3);

  std::vector<std::string> lines;
  std::ifstream in(f.calls);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::sort(lines.begin(), lines.end());
  CHECK(lines == std::vector<std::string>{
                     "run s.yaml --set sync.algorithm=ring --cfg contexts/factory:thread --json",
                     "run s.yaml --set sync.algorithm=ring --set nodes=3 --cfg "
                     "contexts/factory:thread --json",
                     "run s.yaml --set sync.algorithm=ring --set nodes=4 --set sync.overlap=false "
                     "--cfg contexts/factory:thread --json"});
  (void)runner.run({{}});
  CHECK(runner.runs() == 4);
}

TEST_CASE("advice trials: a --timeout that is not a time is bad input") {
  TrialFixture f;
  f.options.timeout = "soon";
  CHECK_THROWS_AS(AdviceTrialRunner{f.options}, ConfigError);
}
