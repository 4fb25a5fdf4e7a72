// `gradsync merge`'s work: the outputs of sweep shards (or of interrupted and resumed runs)
// joined into one results folder (results.jsonl, results.csv, sweep.json; README.md, Commands),
// each point exactly once. A point found in several folders must hold the same result (its wall
// time aside); a conflicting duplicate means the folders come from different sweeps or
// gradsync versions, and is an error. Part of gradsync_io (files); it prints nothing.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace gradsync {

struct MergeSummary {
  std::string dir;                   // the merged folder, as given
  std::size_t points = 0;            // points merged
  std::size_t sweep_points = 0;      // points of the sweep (its manifest), else those merged
  std::size_t missing = 0;           // points of the sweep found in no folder
  std::vector<std::size_t> missing_indexes;  // the first (at most 10) of them
  std::size_t failed = 0;            // merged points whose run failed
  std::size_t duplicates = 0;        // points found again in a later folder, dropped
};

// Merges the sweep output folders `inputs` into `out_dir` (created). ConfigError for an empty
// `out_dir`, an `out_dir` that is itself a sweep's output folder, folders of different
// sweeps, and conflicting duplicates; EnvironmentError when `out_dir` cannot be created.
[[nodiscard]] MergeSummary merge_sweep_results(const std::vector<std::string>& inputs,
                                               const std::string& out_dir);

}  // namespace gradsync
