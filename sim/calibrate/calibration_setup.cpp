// What `gradsync calibrate` fits and simulates around the fit (calibration_setup.hpp): the job,
// the parameters, the rows and bands, the template's text with candidate or fitted values, and
// the `gradsync bench` runs of a candidate.
#include "gradsync/calibrate/calibration_setup.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "gradsync/units/config_error.hpp"
#include "gradsync/fabric/fabric_defaults.hpp"
#include "gradsync/fabric/nccl_model.hpp"
#include "gradsync/units/units.hpp"

namespace gradsync {
namespace {

SourceMark mark(const std::string& what) { return SourceMark{"gradsync calibrate " + what, 0, 0}; }

// Whether the YAML text has a top-level `nccl:` key.
bool has_nccl_block(const std::string& text) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("nccl:", 0) == 0) return true;
  return false;
}

// The template with `params` set: every parameter of the stages up to `stage` when `all` (a
// candidate of the fit), the fitted ones otherwise (the written file, with `note` comments).
std::string text_with(const std::string& base, const std::vector<FitParam>& params, bool all,
                      int stage, const std::string& note, const std::string& topology_path) {
  std::string text = base;
  std::vector<const FitParam*> appended;
  const bool nccl_block = has_nccl_block(base);
  for (const FitParam& p : params) {
    // Candidates carry every parameter of the stages run so far; the written file only
    // the fitted ones (a key left as it was keeps its own line and comment).
    if (all ? (p.nccl && p.stage > stage) : !p.fitted) continue;
    if (p.nccl && !nccl_block) {
      appended.push_back(&p);
      continue;
    }
    const auto t = set_yaml_key(text, p.path, fit_param_yaml(p), note);
    if (!t)
      throw ConfigError(mark("TOPOLOGY"),
                        fmt::format("cannot edit {} in {}: write its group as a block mapping",
                                    p.label, topology_path));
    text = *t;
  }
  if (!appended.empty()) {
    if (!text.empty() && text.back() != '\n') text += '\n';
    text += !note.empty() ? fmt::format("nccl:  # {}\n", note) : "nccl:\n";
    for (const FitParam* p : appended)
      text += fmt::format("  {}: {}\n", p->path.back(), fit_param_yaml(*p));
  }
  return text;
}

}  // namespace

CalibrationJob calibration_job(const ClusterSpec& spec, const NcclTestsLog& log,
                               const std::string& topology_text, const std::string& topology_path,
                               const std::string& log_path) {
  CalibrationJob job;
  job.base_text = topology_text;
  job.nodes = spec.nodes;
  if (log.nodes() > 0 && log.nodes() != spec.nodes) {
    job.nodes = log.nodes();
    auto t = set_yaml_key(job.base_text, {"nodes"}, std::to_string(job.nodes),
                          fmt::format("the servers of {} (was {})",
                                      std::filesystem::path(log_path).filename().string(),
                                      spec.nodes));
    if (!t) throw ConfigError(SourceMark{topology_path, 1, 1}, "cannot set nodes: in this file");
    job.base_text = *t;
  }
  const int gpus = job.nodes * spec.node.gpus;
  job.ranks = log.ranks > 0 ? log.ranks : gpus;
  job.gpus_per_thread = std::max(log.gpus_per_thread, 1);
  if (job.ranks > gpus)
    throw ConfigError(SourceMark{log_path, 1, 1},
                      fmt::format("the log has {} ranks, the topology {} only {} GPUs on {} "
                                  "servers",
                                  job.ranks, spec.name, gpus, job.nodes));
  job.multi = job.nodes > 1 && job.ranks > spec.node.gpus;
  if (job.multi && !spec.network)
    throw ConfigError(SourceMark{topology_path, 1, 1}, "a multi-node log needs a network: group");
  job.group = job.multi ? "network" : "node.intra";
  return job;
}

std::vector<FitParam> calibration_params(const ClusterSpec& spec, bool multi) {
  std::vector<FitParam> params;
  const std::string group = multi ? "network" : "node.intra";
  {
    // One server whose GPUs stage their data in host memory (node.host_memory): the DRAM, not
    // the PCIe links, sets the rate, so its efficiency is the one to fit.
    const bool staged = !multi && spec.node.host_memory.has_value();
    FitParam e;
    e.label = (staged ? std::string("node.host_memory") : group) + ".efficiency";
    e.path = multi    ? std::vector<std::string>{"network", "efficiency"}
             : staged ? std::vector<std::string>{"node", "host_memory", "efficiency"}
                      : std::vector<std::string>{"node", "intra", "efficiency"};
    const LinkGroupSpec& own = staged ? *spec.node.host_memory : spec.node.intra;
    e.initial = multi ? spec.network->efficiency.value_or(default_efficiency(spec.network->fabric))
                      : own.efficiency.value_or(default_efficiency(own.fabric));
    e.lo = 1e-3;
    e.hi = 1.0;
    e.probe = 0.95;
    params.push_back(e);
    FitParam l;
    l.label = multi ? "network.link_latency" : "node.intra.latency";
    l.path = multi ? std::vector<std::string>{"network", "link_latency"}
                   : std::vector<std::string>{"node", "intra", "latency"};
    l.log_scale = false;
    l.unit = 1e-6;
    l.initial = multi ? spec.network->link_latency.seconds() : spec.node.intra.latency.seconds();
    l.lo = 0.0;
    l.hi = 1e-3;
    l.probe = std::max(l.initial / l.unit, 0.5);
    l.is_time = true;
    params.push_back(l);
  }
  if (spec.software == SoftwareModel::Nccl) {
    // Bounds: the topology loader's ranges for these keys.
    const auto nccl_param = [&](const char* key, double initial, double lo, double hi,
                                double probe, bool is_time) {
      FitParam p;
      p.label = std::string("nccl.") + key;
      p.path = {"nccl", key};
      p.initial = initial;
      p.lo = lo;
      p.hi = hi;
      p.probe = probe;
      p.is_time = is_time;
      p.nccl = true;
      p.stage = 2;
      params.push_back(p);
    };
    nccl_param("latency_scale", spec.nccl.latency_scale, 0.01, 100.0, 1.1, false);
    nccl_param("channel_scale", spec.nccl.channel_scale, 0.01, 100.0, 0.9, false);
    nccl_param("nvls_chunk_overhead",
               spec.nccl.nvls_chunk_overhead_s.value_or(kNvlsChunkOverheadUs * 1e-6), 1e-8,
               1e-3, 1.2, true);
  }
  return params;
}

FitOptions calibration_fit_options(int iterations, const std::vector<std::string>& bands) {
  FitOptions options;
  options.iterations = iterations;
  if (!bands.empty()) options.asked.fill(false);
  for (const std::string& b : bands) {
    bool known = false;
    for (std::size_t i = 0; i < kNcclTestsBands.size(); ++i)
      if (kNcclTestsBands[i].name == b) options.asked[i] = known = true;
    if (!known)
      throw ConfigError(mark("--bands"),
                        fmt::format("unknown band '{}' (expected latency, A, B or C)", b));
  }
  return options;
}

std::vector<FitRow> calibration_rows(const NcclTestsLog& log, const FitOptions& options,
                                     const std::string& log_path) {
  std::vector<FitRow> rows;
  for (const auto& r : log.rows) {
    if (r.bytes < 1 || r.time_us <= 0) continue;
    rows.push_back(FitRow{r.bytes, fit_time_us(r), fit_busbw_GBps(r), r.line});
  }
  if (rows.empty()) throw ConfigError(SourceMark{log_path, 1, 1}, "no rows with a size and a time");
  if (!std::any_of(rows.begin(), rows.end(), [&](const FitRow& r) {
        for (std::size_t i = 0; i < kNcclTestsBands.size(); ++i)
          if (in_band(kNcclTestsBands[i], r.bytes)) return options.asked[i];
        return false;
      }))
    throw ConfigError(mark("--bands"), "the log has no row in the bands asked for");
  return rows;
}

std::string fit_param_yaml(const FitParam& p) {
  return p.is_time ? fmt::format("{:.6g}ns", p.value * 1e9) : fmt::format("{:.6g}", p.value);
}

std::string fit_param_text(const FitParam& p, double value) {
  return p.is_time ? format_time(Seconds(value)) : fmt::format("{:.4f}", value);
}

std::string calibration_candidate_text(const std::string& base_text,
                                       const std::vector<FitParam>& params, int stage,
                                       const std::string& topology_path) {
  return text_with(base_text, params, true, stage, "", topology_path);
}

std::string calibrated_topology_text(const std::string& base_text,
                                     const std::vector<FitParam>& params,
                                     const std::string& log_path,
                                     const std::string& topology_path) {
  const std::string note =
      fmt::format("calibrated from nccl-tests log {} (gradsync calibrate)",
                  std::filesystem::path(log_path).filename().string());
  return text_with(base_text, params, false, 0, note, topology_path);
}

std::string candidate_error_text(std::string err, const std::string& candidate_file,
                                 const std::string& topology_path, int candidate) {
  const std::string shown = fmt::format("{} (candidate {} of the fit)", topology_path, candidate);
  for (std::size_t at = err.find(candidate_file); at != std::string::npos;
       at = err.find(candidate_file, at + shown.size()))
    err.replace(at, candidate_file.size(), shown);
  return err;
}

std::vector<std::vector<double>> bench_size_runs(const std::vector<double>& sizes) {
  std::vector<std::vector<double>> groups;
  for (double s : sizes) {
    if (!groups.empty()) {
      auto& g = groups.back();
      const double f = g.size() >= 2 ? g[1] / g[0] : s / g.back();
      if (f > 1.0 && std::abs(std::round(g.back() * f) - s) < 0.5 &&
          std::abs(std::round(g.front() * std::pow(f, static_cast<double>(g.size()))) - s) < 0.5) {
        g.push_back(s);
        continue;
      }
    }
    groups.push_back({s});
  }
  return groups;
}

std::vector<std::string> calibration_bench_args(const std::string& candidate_file,
                                                const std::string& algorithm, int ranks,
                                                const std::vector<double>& run,
                                                const std::vector<std::string>& cfg,
                                                int gpus_per_thread) {
  std::vector<std::string> args{"bench", candidate_file, "--json", "--algo", algorithm,
                                "--gpus", std::to_string(ranks),
                                "--min", fmt::format("{:.0f}B", run.front()),
                                "--max", fmt::format("{:.0f}B", run.back())};
  if (run.size() >= 2) {
    args.push_back("--factor");
    args.push_back(fmt::format("{:.17g}", run[1] / run[0]));
  }
  if (gpus_per_thread > 1)
    args.insert(args.end(), {"--gpus-per-thread", std::to_string(gpus_per_thread)});
  for (const auto& c : cfg) args.push_back(fmt::format("--cfg={}", c));
  return args;
}

}  // namespace gradsync
