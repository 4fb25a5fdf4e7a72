// calibrate's candidate simulations (include/gradsync/io/calibration_runs.hpp) without
// simulating: the `gradsync bench` they run is a shell script that prints bench's --json rows,
// or fails as the topology loader (exit 2) or as something else (exit 3) would, chosen by the
// candidate file's name: key. What is checked: the candidate file holds the template's text,
// times and algorithms come back by size, candidates are counted, a loader failure is bad
// input at "gradsync calibrate TOPOLOGY" and any other failure is not.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "gradsync/io/calibration_runs.hpp"
#include "gradsync/units/config_error.hpp"
#include "../scratch_folder.hpp"

using namespace gradsync;
namespace fs = std::filesystem;

namespace {

struct BenchFixture {
  fs::path root;
  fs::path seen;  // the last candidate file's text
  CalibrationRunOptions options;

  BenchFixture() {
    root = fresh_folder("calruns");
    seen = root / "seen.yaml";
    const fs::path bench = root / "fake-bench.sh";
    std::ofstream(bench)
        << "#!/bin/sh\n"
           "cp \"$2\" '" << seen.string() << "'\n"
           "if grep -q 'name: broken' \"$2\"; then echo \"$2:1:1: error: bad key\" >&2; exit 2; fi\n"
           "if grep -q 'name: crash' \"$2\"; then echo 'boom' >&2; exit 3; fi\n"
           "echo '[{\"bytes\": 8, \"time_us\": 1.5, \"algorithm\": \"ring\", \"protocol\": \"LL\"},"
           " {\"bytes\": 16, \"time_us\": 2.5, \"algorithm\": \"tree\"}]'\n";
    fs::permissions(bench, fs::perms::owner_all);
    options.program = bench.string();
    options.topology = "cluster.yaml";
  }
  ~BenchFixture() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
};

std::string text_of(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("calibration runs: a candidate's times and algorithms by size") {
  BenchFixture f;
  CalibrationJob job;
  job.ranks = 4;
  job.base_text = "name: good\nnodes: 2\n";
  CalibrationRuns runs(f.options, job);
  const auto times = runs.simulate({}, 1, {8, 16});
  CHECK(times.size() == 2);
  CHECK(times.at(8) == 1.5);
  CHECK(times.at(16) == 2.5);
  CHECK(runs.algorithm_at(8) == "ring/LL");
  CHECK(runs.algorithm_at(16) == "tree");
  CHECK(runs.runs() == 1);
  CHECK(text_of(f.seen).find("name: good") != std::string::npos);
  (void)runs.simulate({}, 1, {8});
  CHECK(runs.runs() == 2);
}

TEST_CASE("calibration runs: a candidate the loader rejects is bad input, others are not") {
  BenchFixture f;
  CalibrationJob job;
  job.base_text = "name: broken\n";
  {
    CalibrationRuns runs(f.options, job);
    try {
      (void)runs.simulate({}, 1, {8});
      FAIL("no error");
    } catch (const ConfigError& e) {
      CHECK(std::string(e.what()).rfind(
                "gradsync calibrate TOPOLOGY: error: simulating a candidate failed: ", 0) == 0);
    }
  }
  job.base_text = "name: crash\n";
  CalibrationRuns runs(f.options, job);
  try {
    (void)runs.simulate({}, 1, {8});
    FAIL("no error");
  } catch (const ConfigError&) {
    FAIL("a crash is not bad input");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).rfind("gradsync bench exited 3: ", 0) == 0);
  }
}
