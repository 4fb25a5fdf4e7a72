// The sweep's CI gate (sim/sweep/regression_gate.hpp) on synthetic results: points matched to
// an earlier results.csv by their swept values, regressions beyond the limit and failures
// reported, points without a baseline row counted apart.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "regression_gate.hpp"
#include "sweep_results.hpp"
#include "gradsync/units/config_error.hpp"

using namespace gradsync;
using namespace gradsync::sweep;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / fs::path("gradsync-gate-" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

PointRecord point(const fs::path& dir, std::size_t index, const std::string& nodes,
                  std::optional<double> step_s) {
  SweepPoint p;
  p.index = index;
  p.id = sweep_point_id(index, {SweepSet{"topology_overrides.nodes", nodes}});
  p.sets = {SweepSet{"topology_overrides.nodes", nodes}};
  Json metrics = nullptr;
  if (step_s) metrics = Json{{"step_time_s", *step_s}, {"samples_per_s", 1.0}};
  return store_point(dir, make_record(p, step_s.has_value(), step_s ? "" : "exit 2: bad", 0, 0.1,
                                      metrics));
}

}  // namespace

TEST_CASE("regression gate: beyond the limit or failing now, matched by swept values") {
  TempDir tmp;
  const fs::path baseline = tmp.path / "old.csv";
  std::ofstream(baseline) << "topology_overrides.nodes,step_time_s,point,ok,error\n"
                             "1,1.0,p0,true,\n2,2.0,p1,true,\n4,4.0,p2,true,\n8,,p3,false,x\n";
  const Baseline b = load_baseline(baseline, {"topology_overrides.nodes"});
  CHECK(b.rows.size() == 4);
  const fs::path dir = tmp.path / "new";
  fs::create_directories(points_dir(dir));
  std::vector<PointRecord> records{
      point(dir, 0, "1", 1.04),          // +4 %: within 5 %
      point(dir, 1, "2", 2.2),           // +10 %: a regression
      point(dir, 2, "4", std::nullopt),  // failing now: a regression
      point(dir, 3, "8", 9.0),           // the baseline point failed: not compared
      point(dir, 4, "16", 1.0),          // no baseline row
  };
  const BaselineReport r = compare_to_baseline(b, records, parse_regression_limit("5%"));
  CHECK(r.compared == 3);  // 1, 2 and 4 servers (a failure now is a result)
  CHECK(r.unmatched == 1);
  REQUIRE(r.regressions.size() == 2);
  CHECK(r.regressions[0].old_step_s == doctest::Approx(2.0));
  CHECK(r.regressions[0].new_step_s == doctest::Approx(2.2));
  CHECK(r.regressions[0].baseline == baseline.string() + ":3");
  CHECK(r.regressions[1].new_step_s == 0.0);
  CHECK(r.regressions[1].error.find("bad") != std::string::npos);
  // A tighter limit catches the 4 % too; a looser one lets the 10 % pass.
  CHECK(compare_to_baseline(b, records, 0.03).regressions.size() == 3);
  CHECK(compare_to_baseline(b, records, 0.2).regressions.size() == 1);
}

TEST_CASE("regression gate: bad limits and baselines are input errors") {
  CHECK(parse_regression_limit("5%") == doctest::Approx(0.05));
  CHECK_THROWS_AS((void)parse_regression_limit("-5%"), ConfigError);
  CHECK_THROWS_AS((void)parse_regression_limit("five"), ConfigError);
  TempDir tmp;
  const fs::path no_step = tmp.path / "no_step.csv";
  std::ofstream(no_step) << "topology_overrides.nodes,samples_per_s\n1,3\n";
  CHECK_THROWS_AS((void)load_baseline(no_step, {"topology_overrides.nodes"}), ConfigError);
  CHECK_THROWS_AS((void)load_baseline(tmp.path / "missing.csv", {"x"}), ConfigError);
}
