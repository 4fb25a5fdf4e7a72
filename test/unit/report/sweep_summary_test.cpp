// What `gradsync sweep` prints when it ends (sweep_summary.hpp), on a made-up sweep: reused
// points, failures cut at their first line, a gate with a slower point and a failing one.
#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "gradsync/report/sweep_summary.hpp"

using namespace gradsync;

namespace {

SweepSummary summary() {
  SweepSummary s;
  s.name = "lab";
  s.dir = "out/lab";
  s.results_csv = "out/lab/results.csv";
  s.results_jsonl = "out/lab/results.jsonl";
  s.points = 30;
  s.ran = 25;
  s.wall_s = 12.34;
  s.failed.push_back({"p00007-aa", {{"sync.algorithm", "rng"}}, "bad value\nsecond line"});
  return s;
}

SweepSummary::Gate gate() {
  SweepSummary::Gate g;
  g.baseline_file = "old.csv";
  g.max_regression = 0.05;
  g.compared = 28;
  g.unmatched = 2;
  g.regressions.push_back({"p00003-bb", "nodes=2", "old.csv:5", 1.0, 1.25, ""});
  g.regressions.push_back({"p00007-aa", "sync.algorithm=rng", "old.csv:9", 0.5, 0.0, "bad"});
  return g;
}

bool includes(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("sweep summary JSON: counts, reused points, failures; the gate only with a baseline") {
  const nlohmann::ordered_json j = sweep_summary_json(summary());
  CHECK(j.begin().key() == "sweep");
  CHECK(j["sweep"] == "lab");
  CHECK(j["points"] == 30);
  CHECK(j["ran"] == 25);
  CHECK(j["reused"] == 5);
  CHECK(j["wall_s"].get<double>() == 12.34);
  REQUIRE(j["failed"].size() == 1);
  CHECK(j["failed"][0]["point"] == "p00007-aa");
  CHECK(j["failed"][0]["sets"]["sync.algorithm"] == "rng");
  CHECK(j["failed"][0]["error"] == "bad value\nsecond line");  // whole, unlike the text
  CHECK(j["results_csv"] == "out/lab/results.csv");
  CHECK_FALSE(j.contains("baseline"));
  CHECK_FALSE(j.contains("regressions"));

  SweepSummary s = summary();
  s.gate = gate();
  const nlohmann::ordered_json g = sweep_summary_json(s);
  CHECK(g["baseline"] == "old.csv");
  CHECK(g["max_regression"].get<double>() == 0.05);
  CHECK(g["compared"] == 28);
  CHECK(g["unmatched"] == 2);
  REQUIRE(g["regressions"].size() == 2);
  CHECK(g["regressions"][0]["new_step_time_s"].get<double>() == 1.25);
  CHECK(g["regressions"][0]["error"].is_null());
  CHECK(g["regressions"][1]["new_step_time_s"].is_null());  // it fails now
  CHECK(g["regressions"][1]["error"] == "bad");
}

TEST_CASE("sweep summary text: the sweep's line, failures, regressions and the gate's line") {
  SweepSummary s = summary();
  s.gate = gate();
  const std::string text = sweep_summary_text(s);
  CHECK(text.rfind("lab: 30 points (25 run now, 5 from before), 1 failed, 12.3 s → "
                   "out/lab/results.csv\n", 0) == 0);
  CHECK(includes(text, "failed: p00007-aa {\"sync.algorithm\":\"rng\"}: bad value …\n"));
  CHECK(includes(text, "regression: p00003-bb (nodes=2): step_time_s 1 → 1.25 s (+25.0 %, "
                       "limit 5.0 %; baseline old.csv:5)\n"));
  CHECK(includes(text, "regression: p00007-aa (sync.algorithm=rng): now fails (old.csv:9: ran "
                       "in 0.5 s): bad\n"));
  CHECK(includes(text, "baseline old.csv: 28 points compared, 2 regressed beyond 5.0 %, 2 points "
                       "not in the baseline\n"));
}

TEST_CASE("sweep summary text: at most 20 failures listed, no gate line without a baseline") {
  SweepSummary s = summary();
  s.ran = s.points;
  s.failed.resize(23, s.failed[0]);
  const std::string text = sweep_summary_text(s);
  CHECK(includes(text, "(30 run now), 23 failed"));
  std::size_t listed = 0;
  for (std::size_t at = text.find("\nfailed: "); at != std::string::npos;
       at = text.find("\nfailed: ", at + 1))
    ++listed;
  CHECK(listed == 20);
  CHECK(includes(text, "… and 3 more failed points\n"));
  CHECK_FALSE(includes(text, "baseline"));
}
