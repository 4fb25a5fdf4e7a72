// What `gradsync sweep` prints on stdout when it ends (README.md, Commands): one JSON object
// with --json, else a line per sweep, per failed point (the first 20) and per regression
// against --baseline, and the gate's verdict line. Pure functions of the summary.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gradsync {

// A point that the --baseline gate flags: slower than the limit, or failing now.
struct SweepRegression {
  std::string id;
  std::string sets;        // "key=value, key=value"
  std::string baseline;    // OLD.csv:LINE
  double old_step_s = 0;
  double new_step_s = 0;   // 0 when the point now fails
  std::string error;       // the point's error when it now fails
};

struct SweepSummary {
  std::string name;                   // the sweep's
  std::string dir;                    // its results folder
  std::string results_csv;            // DIR/results.csv
  std::string results_jsonl;          // DIR/results.jsonl
  std::size_t points = 0;             // recorded in the folder (this run's and earlier ones)
  std::size_t ran = 0;                // run now
  std::size_t interrupted = 0;        // stopped by a signal to their worker, not recorded
  double wall_s = 0.0;
  struct Failure {
    std::string id;
    nlohmann::ordered_json sets;      // {key: value} of the point's record
    std::string error;
  };
  std::vector<Failure> failed;        // by point index
  struct Gate {
    std::string baseline_file;        // --baseline as given
    double max_regression = 0.0;      // 0.05 for 5 %
    std::size_t compared = 0;
    std::size_t unmatched = 0;
    std::vector<SweepRegression> regressions;
  };
  std::optional<Gate> gate;           // with --baseline
};

// `gradsync sweep --json`: {"sweep", "dir", "points", "ran", "reused", "failed": [{point, sets,
// error}], "interrupted", "wall_s", "results_csv", "results_jsonl"}, and with a baseline
// "baseline", "max_regression", "compared", "unmatched", "regressions".
[[nodiscard]] nlohmann::ordered_json sweep_summary_json(const SweepSummary& summary);
// The text lines, each ending with a line break; errors cut at their first line.
[[nodiscard]] std::string sweep_summary_text(const SweepSummary& summary);

}  // namespace gradsync
