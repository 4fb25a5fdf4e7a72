// The advisor (`gradsync advise`): runs the what-ifs of advise.hpp through a caller's runner
// (the CLI's runs each as its own `gradsync run` process; tests pass a synthetic model),
// searches the smallest accumulation and the largest Top-K keep-ratio that meet the 30 % rule
// (bisect_threshold), and ranks what ran. Every figure it returns is an outcome the runner
// produced; nothing is estimated here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "gradsync/report/advise.hpp"

namespace gradsync {

// One simulated what-if: its outcome, or why it could not run (one line).
struct AdviceTrial {
  std::optional<AdviceOutcome> outcome;
  std::string error;
};

// Runs a batch of what-ifs, each a list of "key=value" overrides of the scenario, and returns
// their trials in the same order (an empty list is the baseline itself).
using AdviceRunner =
    std::function<std::vector<AdviceTrial>(const std::vector<std::vector<std::string>>&)>;

struct AdviseOptions {
  int max_nodes = 64;  // the scaling curve's largest server count
  AdviceRanking ranking = AdviceRanking::SamplesPerSecond;
};

// The baseline itself could not run: what() is its one-line error.
class AdviceBaselineError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Advice {
  AdviceOutcome baseline;
  std::vector<RankedVariant> ranked;
  ScalingSummary scaling;
  // Targets of the 30 % rule: the smallest accumulation and the largest Top-K keep-ratio that
  // meet it (unset: not needed, or none of the values tried does).
  bool rule_met_already = false;
  std::optional<std::uint32_t> accumulation_needed;
  std::optional<double> topk_ratio_needed;
  std::optional<double> compression_ratio_needed;  // dense bytes / wire bytes at that ratio
  std::vector<std::pair<AdviceVariant, std::string>> not_applicable;
  std::vector<RankedVariant> no_better;  // networks that gain < 1 % over a slower one
  std::vector<RankedVariant> unchanged;  // algorithms auto already runs
  // Every network simulated (the baseline's first), and the cheapest that meets the rule.
  std::vector<NetworkOption> networks;
  std::optional<std::size_t> cheapest_network;
  std::vector<std::string> notes;
};

// Runs the baseline, then every what-if of plan_advice_variants() and the scaling counts in one
// batch, then the two searches of the 30 % rule (when the baseline misses it), probe by probe.
// Throws AdviceBaselineError when the baseline fails.
[[nodiscard]] Advice advise(const AdviceBaseline& baseline, const AdviseOptions& options,
                            const AdviceRunner& run);

// Refines a threshold between `failing` (misses the rule) and `passing` (meets it): probes
// next(failing, passing) while it gives a value, runs variant(probe), and moves the bound the
// outcome says; `best` ends as the passing bound's result. Used by both searches (accumulation:
// integers, bisection; Top-K: ratios, geometric, to 2 significant digits).
template <typename T, typename Next, typename Variant>
void bisect_threshold(T& failing, T& passing, RankedVariant& best, Next next, Variant variant,
                      const AdviceRunner& run) {
  while (const std::optional<T> probe = next(failing, passing)) {
    const AdviceVariant v = variant(*probe);
    const AdviceTrial t = run({v.sets})[0];
    if (t.outcome && t.outcome->under_rule()) {
      passing = *probe;
      best = RankedVariant{v, *t.outcome, 0.0};
    } else {
      failing = *probe;
    }
  }
}

}  // namespace gradsync
