// What `gradsync bench` prints about a bench run (README.md, Commands; docs/reference.md): the
// nccl-tests table, the `--json` rows, and with `--compare LOG` measured beside simulated.
// Pure functions of the request and the result (bench_runner.hpp): they print nothing; the CLI
// writes what they return.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gradsync/scenario/bench_runner.hpp"
#include "gradsync/calibrate/calibrate.hpp"
#include "gradsync/calibrate/nccl_tests_compare.hpp"

namespace gradsync {

// nccl-tests' table: a "#" header (operation, topology, ranks, software model, fidelity,
// channels), then per row size, count and type (float elements), redop, root (-1 unless
// broadcast or reduce), time (us), algbw and busbw (GB/s, GB = 1e9 B) and the algorithm that
// ran; under NCCL's software model its channels, with `best` the fastest simulated algorithm.
// Ends with a line break.
[[nodiscard]] std::string bench_table_text(const BenchRequest& request, const BenchResult& result);

// `bench --json`: one object per row (bytes, count, type, redop, root, time_us, algbw_GBps,
// busbw_GBps, op, algorithm, protocol (null without NCCL's model), channels, fidelity, flows,
// ranks; with `best` also best_algorithm, best_time_us, best_busbw_GBps).
[[nodiscard]] nlohmann::ordered_json bench_rows_json(const BenchRequest& request,
                                                     const BenchResult& result);

// Each measured row of `log` beside the simulated row of the same index (result.rows holds one
// per log row, in order).
[[nodiscard]] std::vector<ComparedRow> compare_bench_rows(const NcclTestsLog& log,
                                                          const BenchResult& result);

// `bench --compare LOG --json`: the log (file, ranks, nodes, device, runs), the topology, ranks,
// op, algo, the compared rows and the per-band summaries (summarize_bands()).
[[nodiscard]] nlohmann::ordered_json bench_comparison_json(const BenchRequest& request,
                                                           const BenchResult& result,
                                                           const NcclTestsLog& log);

// `bench --compare LOG`: measured and simulated time and busbw per row with the busbw error,
// then the per-band summary. Ends with a line break.
[[nodiscard]] std::string bench_comparison_text(const BenchRequest& request,
                                                const BenchResult& result,
                                                const NcclTestsLog& log);

}  // namespace gradsync
