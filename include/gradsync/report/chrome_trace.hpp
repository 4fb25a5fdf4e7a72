// The Chrome trace (Perfetto, chrome://tracing) of a scenario's steps, as `gradsync run
// --trace FILE` writes it: one track per GPU for compute (at most 1024 tracks), one per bucket
// for its collective and its compression codec, every step of the run laid end to end.
// Timestamps and durations are in microseconds. A pure function of the result.
#pragma once

#include <nlohmann/json.hpp>

#include "gradsync/config/scenario_loader.hpp"
#include "gradsync/scenario/scenario_runner.hpp"

namespace gradsync {

// {"traceEvents": [...], "displayTimeUnit": "ms"}: metadata events (ph "M") naming the
// processes and tracks, then complete events (ph "X") per step.
[[nodiscard]] nlohmann::json chrome_trace_json(const ScenarioResult& result,
                                               const LoadedScenario& loaded);

}  // namespace gradsync
