// What `gradsync advise` reads and prints (README.md, Commands): the advisor's view of a loaded
// scenario (AdviceBaseline), the `gradsync run` that simulates a what-if and its outcome read
// back from `run --json`, and the advice as text and as one JSON document. Pure functions: they
// print nothing; the CLI (sim/cli/advise_command.cpp) runs the what-ifs and writes what these
// return.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gradsync/report/advise.hpp"
#include "gradsync/report/advisor.hpp"
#include "gradsync/config/scenario_loader.hpp"

namespace gradsync {

// What the advisor needs of the scenario: its sync settings, the cluster template's shape
// (servers, GPUs and NICs per server, network, prices), or the explicit topology's counts.
[[nodiscard]] AdviceBaseline advice_baseline(const LoadedScenario& loaded);

// The arguments of the `gradsync run` that simulates a what-if: the scenario file, the
// baseline's --set overrides then the what-if's, each --cfg, and --json.
[[nodiscard]] std::vector<std::string> advice_run_args(
    const std::string& scenario_file, const std::vector<std::string>& baseline_sets,
    const std::vector<std::string>& variant_sets, const std::vector<std::string>& cfg);

// A what-if's outcome from its `run --json` document (the keys of run_json.hpp). Throws
// nlohmann::json::exception when a required key is missing or not a number.
[[nodiscard]] AdviceOutcome advice_outcome_from_run_json(const nlohmann::json& run);
// The same from what a successful `gradsync run --json` printed: the outcome, or the error
// "the run printed no usable JSON".
[[nodiscard]] AdviceTrial advice_trial_from_run_output(const std::string& run_stdout);

// The text report: the baseline, the what-ifs best first (by samples/s, or by cost per sample
// under AdviceRanking::CostPerSample), what was left out and why, the networks, the scaling
// curve, the 30 % rule's targets, notes, and the what-ifs that do not apply. Ends with a line
// break; the CLI adds the "N simulations in T s" line.
[[nodiscard]] std::string advice_text(const LoadedScenario& loaded, const AdviceBaseline& baseline,
                                      const Advice& advice, AdviceRanking ranking);

// The `advise --json` document, keys in a fixed order (docs/reference.md); `simulations` and
// `wall_s` are the run's count and wall-clock seconds.
[[nodiscard]] nlohmann::ordered_json advice_json(const LoadedScenario& loaded, const Advice& advice,
                                                 std::size_t simulations, double wall_s);

}  // namespace gradsync
