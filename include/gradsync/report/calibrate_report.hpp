// What `gradsync calibrate` reads and prints (README.md, Commands): the times of its `gradsync
// bench` runs, the fit as text or as one JSON object, the header of the calibrated topology
// file, and the one-line error of a fit that stays off. Pure functions: they print nothing;
// the CLI (sim/cli/calibrate_command.cpp) runs the fit and writes what these return.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "gradsync/calibrate/calibration_fit.hpp"
#include "gradsync/calibrate/calibration_setup.hpp"

namespace gradsync {

// What one `gradsync bench --json` run printed, added by size (std::llround(bytes)): the
// simulated time (µs) to `time_us`, the algorithm and protocol ("tree/LL") to `algorithm`.
// Throws nlohmann::json::exception on output that is not bench's.
void read_bench_times(const std::string& bench_stdout, std::map<long long, double>& time_us,
                      std::map<long long, std::string>& algorithm);

// One calibration as reported.
struct CalibrationReport {
  std::string topology;   // TOPOLOGY as given on the command line
  std::string log;        // --nccl-tests as given
  std::string algorithm;  // --algo
  CalibrationJob job;     // ranks, nodes, the bottleneck group
  int runs = 0;           // runs averaged in the log
  CalibrationFit fit;     // fit.after[i].algorithm: what each size runs with the fitted values
  int simulations = 0;    // candidates simulated, the final one included
  std::string output;     // -o, empty without
  bool written = false;   // the file was written (a fit that is ok, or --force)
  bool forced = false;    // --force
};

// The calibrated topology file: a comment header (the command, the job, each fitted parameter
// and its old value, the error reached at sizes >= 1 MiB, "written with --force" when the fit
// stays off) followed by calibrated_topology_text(base_text, ...).
[[nodiscard]] std::string calibrated_topology_file(const CalibrationReport& report,
                                                   const std::string& base_text);

// The text report: the job, each parameter (fitted, not fitted, no effect), the stages,
// updates and simulations, one row per size (measured, simulated, busbw error after and
// before, algorithm), one per band against its promise, the error at >= 1 MiB, notes, and the
// file written. Ends with a line break.
[[nodiscard]] std::string calibration_text(const CalibrationReport& report);

// The `calibrate --json` object, keys in a fixed order.
[[nodiscard]] nlohmann::ordered_json calibration_json(const CalibrationReport& report);

// The stderr line of a fit that stays off (fit.ok false): its failures, and whether the file
// was written anyway (--force) or not. Ends with a line break.
[[nodiscard]] std::string calibration_failure_text(const CalibrationReport& report);

}  // namespace gradsync
