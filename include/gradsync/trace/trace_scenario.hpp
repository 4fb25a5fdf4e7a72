// A TraceWorkload written as a gradsync scenario (YAML text) that replays the traced step:
// the layers' times, the optimizer, the buckets with their ready times, each with a comment
// saying where in the trace it came from.
#pragma once

#include <cstdint>
#include <string>

#include "gradsync/trace/trace_workload.hpp"

namespace gradsync {

struct TraceScenarioOptions {
  std::string name;            // scenario name
  std::string trace;           // the trace as the user named it (in comments)
  std::string topology;        // topology: as written in the scenario ("" = a placeholder)
  std::uint32_t rank = 0;      // the rank whose trace it is
  std::uint32_t samples = 1;   // samples per micro-batch (not in a trace)
};

// The scenario's text. Each layer's forward is the traced forward shared in proportion to
// the layer's backward (a trace has backward functions per gradient, not forward per module).
[[nodiscard]] std::string trace_scenario_yaml(const TraceWorkload& w,
                                              const TraceScenarioOptions& options);

}  // namespace gradsync
