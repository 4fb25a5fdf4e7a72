// The CI gate of a sweep (`gradsync sweep --baseline OLD.csv --max-regression 5%`): each point
// matched by its swept-key values to a row of an earlier results.csv, and the points whose step
// time grew by more than the limit, or that fail now, reported.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "gradsync/report/sweep_summary.hpp"
#include "sweep_results.hpp"

namespace gradsync::sweep {

// --baseline OLD.csv --max-regression 5%: points matched by their swept-key values; a point
// flagged is a SweepRegression, as `gradsync sweep` prints it (sweep_summary.hpp).
using Regression = SweepRegression;
struct BaselineReport {
  std::vector<Regression> regressions;
  std::size_t compared = 0;   // points with a successful baseline row and a result now
  std::size_t unmatched = 0;  // points with no baseline row
};
struct Baseline {
  std::string file;
  struct Row {
    int line = 0;
    std::string step_time_s;  // as written; empty when the baseline point failed
  };
  std::vector<std::string> keys;
  std::vector<std::pair<std::vector<std::string>, Row>> rows;  // key values → row
};
// Reads OLD.csv; ConfigError when it lacks a column of `keys` or step_time_s.
[[nodiscard]] Baseline load_baseline(const std::filesystem::path& path,
                                     const std::vector<std::string>& keys);
// "5%" → 0.05; ConfigError at "--max-regression TEXT".
[[nodiscard]] double parse_regression_limit(const std::string& text);
[[nodiscard]] BaselineReport compare_to_baseline(const Baseline& baseline,
                                                 const std::vector<PointRecord>& records,
                                                 double max_regression);

}  // namespace gradsync::sweep
