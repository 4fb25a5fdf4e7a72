// What `gradsync run` prints about a scenario's result (README.md, Commands): the JSON
// document of `run --json` (also DIR/result.json with -o) and the text report. Pure functions
// of the result and the loaded scenario: they print nothing; the CLI writes what they return.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "gradsync/config/scenario_loader.hpp"
#include "gradsync/scenario/scenario_runner.hpp"

namespace gradsync {

// The `run --json` document, keys in a fixed order (docs/reference.md lists them all; those
// other commands read back are spelled once, in run_json.hpp). With the topology's `cost:`
// prices it adds cluster_cost, cost_currency, cost_per_hour and cost_per_sample.
[[nodiscard]] nlohmann::ordered_json run_result_json(const ScenarioResult& result,
                                                     const LoadedScenario& loaded);

// The text report of `gradsync run`: the cluster and model, the step's time rows (compute,
// communication, exposed communication, ...), throughput, scaling, cost, the verdict, the
// busiest links and a GPU utilization sparkline. Ends with a line break.
[[nodiscard]] std::string run_result_text(const ScenarioResult& result,
                                          const LoadedScenario& loaded);

}  // namespace gradsync
