// The fit behind `gradsync calibrate` (README.md, Commands): parameters of a topology fitted to a
// measured nccl-tests run over the whole curve. Analysis layer: pure C++; the caller supplies
// the simulation (the CLI runs `gradsync bench` on a candidate topology) and the YAML edits.
//
// Stages: parameters carry a stage number (1: the bottleneck link group's efficiency and
// latency; 2: what shapes the middle of the curve, nccl.latency_scale / channel_scale /
// nvls_chunk_overhead). Stage 2 runs only when stage 1 leaves a row outside the promise
// (>= 1 MiB within 5 % busbw, below within 10 %), and refits stage 1's parameters with its
// own (a level fitted while the shape was wrong would otherwise stay wrong). Each stage is a
// Levenberg-Marquardt fit of log(simulated / measured time) over every row, each size band
// weighted equally (its rows share one unit of weight), with a forward-difference Jacobian (one probe per parameter and
// iteration) and a trust region (a factor e per iteration for log parameters, twice the value
// or 2 units for linear ones: the model has thresholds a long step jumps over). A parameter the
// rows do not depend on is left as it is (a linear one is probed further out first: a latency
// below NCCL's per-step value has no effect). A stage that leaves any band's median |error|
// worse than it found it (by more than 0.5 pp) is undone.
// The verdict: `ok` unless a fitted band's median is beyond 2x its promise, a fitted row beyond
// 5x its promise (one noisy row of a single-run log is not a failed fit), or any band ends worse
// than the uncalibrated topology.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "gradsync/calibrate/nccl_tests_compare.hpp"

namespace gradsync {

// One fitted parameter. Values in SI units (seconds for times).
struct FitParam {
  std::string label;               // "network.efficiency"
  std::vector<std::string> path;   // its YAML key, {"network", "efficiency"}
  bool log_scale = true;           // fitted in log(value), else in value / unit
  double unit = 1.0;               // linear: the coordinate's unit (1e-6: µs for latencies)
  double initial = 0, value = 0, lo = 0, hi = 0;
  double probe = 0.95;             // log: the probe's factor; linear: its step (in units)
  bool is_time = false;            // a time (shown and written with a unit)
  bool nccl = false;               // under the topology's nccl: key
  int stage = 1;
  bool fitted = false;             // out: the rows depend on it and the fit kept its value
  bool no_effect = false;          // out: probed, the rows do not depend on it

  [[nodiscard]] double coord() const;
  [[nodiscard]] double from_coord(double u) const;  // clamped to [lo, hi]
  [[nodiscard]] bool at_bound() const;
};

// A measured row.
struct FitRow {
  double bytes = 0;
  double measured_time_us = 0;
  double measured_busbw_GBps = 0;
  int line = 0;
};

// Simulated time (µs) per row size (std::llround(bytes)) for the parameter values; `stage`: the
// highest stage whose parameters the candidate carries.
using FitSimulator =
    std::function<std::map<long long, double>(const std::vector<FitParam>&, int stage)>;

inline constexpr double kCalibrationPromiseLarge = 0.05;  // rows >= 1 MiB
inline constexpr double kCalibrationPromiseSmall = 0.10;  // rows below
inline constexpr double kCalibrationPromiseBytes = 1024.0 * 1024;
// The promise (|busbw error| allowed) at `bytes`.
[[nodiscard]] double calibration_promise(double bytes);

struct FitOptions {
  int iterations = 8;  // most iterations per stage
  // Bands fitted (kNcclTestsBands order); the others are simulated and must not get worse.
  std::array<bool, kNcclTestsBands.size()> asked{true, true, true, true};
};

struct FitBand {
  BandSummary before, after;
  bool asked = false;
  bool within_promise = true;
  bool degraded = false;
};

struct CalibrationFit {
  std::vector<FitParam> params;    // fitted values, `fitted` / `no_effect` set
  std::vector<ComparedRow> before;  // the uncalibrated topology, one per row
  std::vector<ComparedRow> after;   // the fit
  int stages = 1;                   // stages run
  int updates = 0;                  // accepted steps
  std::vector<FitBand> bands;       // bands the log has
  double worst_large = 0;           // max |busbw error| at >= 1 MiB
  bool within_promise = false;      // every fitted row within its promise
  bool ok = false;                  // see the header: no failure
  std::vector<std::string> failures;  // why not ok
  std::vector<std::string> notes;     // bands that miss and why, undone stages, idle parameters
};

// Throws std::invalid_argument when no row is in an asked band.
[[nodiscard]] CalibrationFit fit_calibration(const std::vector<FitRow>& rows,
                                             std::vector<FitParam> params,
                                             const FitSimulator& simulate,
                                             const FitOptions& options = {});

}  // namespace gradsync
