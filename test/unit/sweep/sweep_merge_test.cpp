// `gradsync merge`'s work (include/gradsync/sweep/sweep_merge.hpp) on hand-written results folders,
// no sweep and no simulation: two shards' results.jsonl merged with each point once, a
// duplicate holding the same result dropped and counted, one holding another result refused,
// failed points counted, and the output folder's mistakes refused before anything is written.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gradsync/units/config_error.hpp"
#include "gradsync/sweep/sweep_merge.hpp"
#include "../scratch_folder.hpp"

using namespace gradsync;
namespace fs = std::filesystem;

namespace {

std::string record(int index, const std::string& id, bool ok, double step, double wall) {
  return "{\"point\": \"" + id + "\", \"index\": " + std::to_string(index) +
         ", \"sets\": {\"nodes\": " + std::to_string(index + 1) + "}, \"ok\": " +
         (ok ? "true" : "false") + ", \"error\": " + (ok ? "null" : "\"broke\"") +
         ", \"exit_code\": " + (ok ? "0" : "2") + ", \"wall_s\": " + std::to_string(wall) +
         ", \"metrics\": " + (ok ? "{\"step_time_s\": " + std::to_string(step) + "}" : "null") +
         "}\n";
}

struct MergeFixture {
  fs::path root;
  MergeFixture() {
    root = fresh_folder("merge");
    fs::create_directories(root / "a");
    fs::create_directories(root / "b");
  }
  ~MergeFixture() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  void write(const std::string& folder, const std::string& text) const {
    std::ofstream(root / folder / "results.jsonl") << text;
  }
  [[nodiscard]] std::string in(const std::string& folder) const { return (root / folder).string(); }
};

}  // namespace

TEST_CASE("sweep merge: shards joined, each point once, duplicates with the same result dropped") {
  MergeFixture f;
  f.write("a", record(0, "p00000-0000000a", true, 1.5, 3.0) +
                   record(1, "p00001-0000000b", false, 0, 1.0));
  // point 1 again, another wall time: the same result
  f.write("b", record(1, "p00001-0000000b", false, 0, 9.0) +
                   record(2, "p00002-0000000c", true, 2.5, 1.0));
  const MergeSummary m = merge_sweep_results({f.in("a"), f.in("b")}, f.in("out"));
  CHECK(m.dir == f.in("out"));
  CHECK(m.points == 3);
  CHECK(m.sweep_points == 3);  // no manifest: the points merged
  CHECK(m.missing == 0);
  CHECK(m.missing_indexes.empty());
  CHECK(m.failed == 1);
  CHECK(m.duplicates == 1);
  CHECK(fs::is_regular_file(f.root / "out" / "results.csv"));
  CHECK(fs::is_regular_file(f.root / "out" / "results.jsonl"));
  CHECK(fs::is_regular_file(f.root / "out" / "sweep.json"));
}

TEST_CASE("sweep merge: a duplicate with another result is refused") {
  MergeFixture f;
  f.write("a", record(0, "p00000-0000000a", true, 1.5, 3.0));
  f.write("b", record(0, "p00000-0000000a", true, 1.75, 3.0));
  CHECK_THROWS_WITH_AS(merge_sweep_results({f.in("a"), f.in("b")}, f.in("out")),
                       doctest::Contains("conflicting results for point p00000-0000000a"),
                       ConfigError);
  CHECK_FALSE(fs::exists(f.root / "out"));
}

TEST_CASE("sweep merge: the output folder's mistakes are bad input") {
  MergeFixture f;
  f.write("a", record(0, "p00000-0000000a", true, 1.5, 3.0));
  CHECK_THROWS_AS(merge_sweep_results({f.in("a")}, ""), ConfigError);
  fs::create_directories(f.root / "sweep" / "points");
  CHECK_THROWS_WITH_AS(merge_sweep_results({f.in("a")}, f.in("sweep")),
                       doctest::Contains("is a sweep's own output folder"), ConfigError);
  CHECK_THROWS_WITH_AS(merge_sweep_results({f.in("missing")}, f.in("out")),
                       doctest::Contains("not a folder of sweep results"), ConfigError);
}
