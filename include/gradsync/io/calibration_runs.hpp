// `gradsync calibrate`'s simulations of candidates: each candidate topology (the template's text
// with a candidate's values, calibration_candidate_text()) written to a temporary file and
// simulated by `gradsync bench --json` child processes, one per run of sizes
// (bench_size_runs(); SimGrid runs one simulation per process). The fit
// (fit_calibration(), calibration_fit.hpp) calls simulate() for each candidate it tries.
// Part of gradsync_io (files and processes); it prints nothing.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "gradsync/calibrate/calibration_fit.hpp"
#include "gradsync/calibrate/calibration_setup.hpp"

namespace gradsync {

struct CalibrationRunOptions {
  std::string program = "/proc/self/exe";  // the gradsync executable run as `gradsync bench`
  std::string topology;                    // TOPOLOGY as given (messages, relative includes)
  std::string algorithm = "auto";          // bench --algo
  std::vector<std::string> cfg;            // SimGrid options passed to each bench
};

class CalibrationRuns {
 public:
  // Creates the temporary folder TMPDIR/gradsync-calibrate-PID (std::filesystem::filesystem_error
  // when it cannot), removed with the object.
  CalibrationRuns(CalibrationRunOptions options, const CalibrationJob& job);
  ~CalibrationRuns();
  CalibrationRuns(const CalibrationRuns&) = delete;
  CalibrationRuns& operator=(const CalibrationRuns&) = delete;

  // Bytes -> simulated time (µs) for `sizes`, with every parameter of the stages up to
  // `stage`. A bench the topology loader rejects (exit 2) throws ConfigError at "gradsync
  // calibrate TOPOLOGY"; any other failure std::runtime_error ("gradsync bench exited N: ...").
  [[nodiscard]] std::map<long long, double> simulate(const std::vector<FitParam>& params,
                                                     int stage, const std::vector<double>& sizes);

  // Candidates simulated so far.
  [[nodiscard]] int runs() const { return runs_; }
  // The algorithm (and protocol) the latest simulation of size `bytes` ran with.
  [[nodiscard]] const std::string& algorithm_at(long long bytes) const {
    return algorithms_.at(bytes);
  }

 private:
  CalibrationRunOptions options_;
  const CalibrationJob& job_;
  std::filesystem::path dir_;
  int runs_ = 0;
  std::map<long long, std::string> algorithms_;
};

}  // namespace gradsync
