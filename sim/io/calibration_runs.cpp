// calibrate's candidates simulated by `gradsync bench` child processes (calibration_runs.hpp).
#include "gradsync/io/calibration_runs.hpp"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "../sweep/worker_pool.hpp"
#include "gradsync/report/calibrate_report.hpp"
#include "gradsync/units/config_error.hpp"

namespace gradsync {

namespace fs = std::filesystem;

CalibrationRuns::CalibrationRuns(CalibrationRunOptions options, const CalibrationJob& job)
    : options_(std::move(options)), job_(job) {
  dir_ = fs::temp_directory_path() / fmt::format("gradsync-calibrate-{}", getpid());
  fs::create_directories(dir_);
}

CalibrationRuns::~CalibrationRuns() {
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

std::map<long long, double> CalibrationRuns::simulate(const std::vector<FitParam>& params,
                                                      int stage,
                                                      const std::vector<double>& sizes) {
  const fs::path file = dir_ / fmt::format("candidate-{}.yaml", ++runs_);
  std::ofstream(file) << calibration_candidate_text(job_.base_text, params, stage,
                                                    options_.topology);
  std::map<long long, double> result;
  for (const auto& run : bench_size_runs(sizes)) {
    sweep::WorkerResult w = sweep::run_process(
        options_.program, "gradsync",
        calibration_bench_args(file.string(), options_.algorithm, job_.ranks, run, options_.cfg,
                               job_.gpus_per_thread),
        std::chrono::hours(24));
    const int rc = w.signal != 0 ? 128 + w.signal : w.exit_code;
    if (rc != 0) {
      const std::string err =
          candidate_error_text(std::move(w.err), file.string(), options_.topology, runs_);
      // A candidate the topology loader rejects is bad input (every fitted value is kept
      // within its key's range, so this is the original file's problem); anything else is
      // ours.
      if (rc == 2)
        throw ConfigError(SourceMark{"gradsync calibrate TOPOLOGY", 0, 0},
                          "simulating a candidate failed: " + err);
      throw std::runtime_error(fmt::format("gradsync bench exited {}: {}", rc, err));
    }
    read_bench_times(w.out, result, algorithms_);
  }
  return result;
}

}  // namespace gradsync
