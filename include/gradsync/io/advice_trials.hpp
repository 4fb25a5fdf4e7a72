// `gradsync advise`'s what-ifs run as worker processes: each variant is one `gradsync run
// --json` of the scenario with the variant's --set overrides (advice_run_args(), advisor.hpp),
// in a process of its own (SimGrid allows one simulation per process), -j at a time, each
// within a wall-time limit; its output becomes an AdviceTrial (advice_trial_from_run_output()).
// Part of gradsync_io (POSIX processes); it prints nothing: progress goes to a callback.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gradsync/report/advisor.hpp"

namespace gradsync {

struct AdviceTrialOptions {
  std::string program = "/proc/self/exe";  // the gradsync executable the workers run
  std::string scenario;                    // the baseline's scenario file
  std::vector<std::string> sets;           // the baseline's --set overrides
  std::vector<std::string> cfg;            // SimGrid options passed to every run
  unsigned jobs = 0;                       // workers at once; 0: the CPUs this process may use
  std::string timeout = "600s";            // wall-time limit per run
  // Called after each poll of the workers (about 4 times a second while they run) with the
  // runs finished so far and those running; empty: never.
  std::function<void(std::size_t done, std::size_t running)> on_progress;
};

class AdviceTrialRunner {
 public:
  // ConfigError at "--timeout TEXT" for a timeout that is not a time from 1 ms to 7 days.
  explicit AdviceTrialRunner(AdviceTrialOptions options);
  ~AdviceTrialRunner();  // kills what still runs
  AdviceTrialRunner(const AdviceTrialRunner&) = delete;
  AdviceTrialRunner& operator=(const AdviceTrialRunner&) = delete;

  // Runs each variant of `batch` (its --set overrides) and returns their trials in order: a
  // run that fails (exit code, signal, time limit) is a trial with the first line of why.
  [[nodiscard]] std::vector<AdviceTrial> run(const std::vector<std::vector<std::string>>& batch);
  // Runs finished so far, over every batch.
  [[nodiscard]] std::size_t runs() const;

 private:
  struct Workers;
  AdviceTrialOptions options_;
  std::chrono::milliseconds limit_;
  std::unique_ptr<Workers> workers_;
  std::size_t done_ = 0;
};

}  // namespace gradsync
