// What `gradsync import-trace` prints: the traced step as gradsync read it (the rank, the steps
// averaged, the model, the step's parts, where the sizes came from, the notes), and with
// --topology each bucket's measured all-reduce beside its simulation on that cluster. Pure
// functions: they print nothing; each text ends with a line break.
#pragma once

#include <cstdint>
#include <string>

#include "gradsync/scenario/scenario_runner.hpp"
#include "gradsync/trace/trace_workload.hpp"

namespace gradsync {

// "TRACE: rank R of N, Kineto format, ..." then the model, the step and the sizes' source.
[[nodiscard]] std::string trace_summary_text(const TraceWorkload& w, const std::string& trace,
                                             std::uint32_t rank);

// The buckets' table (bytes, ready at, measured, simulated, their ratio), the median ratio,
// and the traced step beside the simulated one (`result`: the written scenario run on
// `topology`, the topology's name).
[[nodiscard]] std::string trace_comparison_text(const TraceWorkload& w,
                                                const ScenarioResult& result,
                                                const std::string& topology);

}  // namespace gradsync
