// What `gradsync calibrate` fits and simulates (README.md, Commands), before and around the fit
// of calibration_fit.hpp. Parameters, in two stages:
//   1. the physical ones: the efficiency of the bottleneck link group the collective crosses
//      (`network.efficiency` when the ranks span servers, `node.intra.efficiency` within one
//      server; it sets the plateau) and its per-hop latency (`network.link_latency`,
//      `node.intra.latency`; it sets small sizes where the wire is slower than NCCL's table);
//   2. when those leave a size band outside the promise, what shapes the middle of the curve
//      under `nccl:` (software: nccl): `latency_scale` (NCCL's latency table on this host:
//      launch, flag polling), `channel_scale` (each channel's bandwidth cap: where the
//      per-size channel count stops binding), `nvls_chunk_overhead` (the NVLS/NVLSTree ramp).
// Also: the job the nccl-tests log describes on a cluster template, the rows and bands fitted,
// the template's text with candidate or fitted values, and the `gradsync bench` runs that
// simulate a candidate. Analysis layer: pure C++, no YAML library, no SimGrid; bad input
// throws ConfigError.
#pragma once

#include <string>
#include <vector>

#include "gradsync/calibrate/calibrate.hpp"
#include "gradsync/calibrate/calibration_fit.hpp"
#include "gradsync/topology/cluster_spec.hpp"

namespace gradsync {

// The job size: the log's ranks (else every GPU) on the log's servers (else the template's).
struct CalibrationJob {
  int nodes = 1;
  int ranks = 1;
  bool multi = false;       // the ranks span servers: the network is the bottleneck group
  int gpus_per_thread = 1;  // the log's harness (nccl-tests -g, its header's nGpus)
  std::string group;        // "network" or "node.intra"
  std::string base_text;    // the template's text, `nodes:` set to the log's servers
};
// Throws ConfigError (at `topology_path` or `log_path`) when the log has more ranks than the
// template's GPUs, a multi-node log meets a template without `network:`, or `nodes:` cannot be
// edited in `topology_text`.
[[nodiscard]] CalibrationJob calibration_job(const ClusterSpec& spec, const NcclTestsLog& log,
                                             const std::string& topology_text,
                                             const std::string& topology_path,
                                             const std::string& log_path);

// The parameters, stage 1 (the bottleneck link group: `network` when `multi`, else
// `node.intra`) then, under software: nccl, stage 2; initial values from the template (or
// the fabric's default efficiency), bounds the topology loader's ranges.
[[nodiscard]] std::vector<FitParam> calibration_params(const ClusterSpec& spec, bool multi);

// --bands (names of kNcclTestsBands) as FitOptions::asked; empty: every band. Throws
// ConfigError on an unknown name.
[[nodiscard]] FitOptions calibration_fit_options(int iterations,
                                                 const std::vector<std::string>& bands);

// The log's rows with a size and a time, as the fit reads them (fit_time_us, fit_busbw_GBps).
// Throws ConfigError when there is none, or none in an asked band.
[[nodiscard]] std::vector<FitRow> calibration_rows(const NcclTestsLog& log,
                                                   const FitOptions& options,
                                                   const std::string& log_path);

// A parameter's value as the YAML file writes it ("0.84", "13000ns") and as the report shows
// a value of it ("0.8400", "13 us").
[[nodiscard]] std::string fit_param_yaml(const FitParam& p);
[[nodiscard]] std::string fit_param_text(const FitParam& p, double value);

// The template's text with a candidate's values: every parameter of the stages up to `stage`
// (and every stage-1 one), no comments. An nccl parameter with no top-level `nccl:` key in
// the text goes into an `nccl:` block appended at the end.
[[nodiscard]] std::string calibration_candidate_text(const std::string& base_text,
                                                     const std::vector<FitParam>& params,
                                                     int stage, const std::string& topology_path);
// The template's text with the fitted parameters only, each line commented "calibrated from
// nccl-tests log FILE (gradsync calibrate)" (a key left as it was keeps its line and comment).
[[nodiscard]] std::string calibrated_topology_text(const std::string& base_text,
                                                   const std::vector<FitParam>& params,
                                                   const std::string& log_path,
                                                   const std::string& topology_path);

// What a failed `gradsync bench` of candidate `candidate` printed on stderr, the candidate
// file's path (deleted on exit) replaced by "TOPOLOGY (candidate N of the fit)".
[[nodiscard]] std::string candidate_error_text(std::string err, const std::string& candidate_file,
                                               const std::string& topology_path, int candidate);

// The sizes split into runs that one `gradsync bench --min --max --factor` covers: geometric
// runs (nccl-tests' -b/-e/-f), odd sizes alone. Sizes ascending, as the log's rows.
[[nodiscard]] std::vector<std::vector<double>> bench_size_runs(const std::vector<double>& sizes);
// The arguments of `gradsync bench` simulating one such run of `candidate_file` on `ranks`
// GPUs with `algorithm`, each `cfg` passed as --cfg=; the log's harness (--gpus-per-thread)
// when it drove several GPUs per thread.
[[nodiscard]] std::vector<std::string> calibration_bench_args(const std::string& candidate_file,
                                                              const std::string& algorithm,
                                                              int ranks,
                                                              const std::vector<double>& run,
                                                              const std::vector<std::string>& cfg,
                                                              int gpus_per_thread = 1);

}  // namespace gradsync
