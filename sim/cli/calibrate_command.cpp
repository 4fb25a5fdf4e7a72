// `gradsync calibrate TOPOLOGY --nccl-tests LOG [-o calibrated.yaml] [--json] [--force]`
// (README.md, Commands): fits a topology template to a real nccl-tests run by running the simulator
// itself, over the whole curve. Parameters, in two stages:
//   1. the physical ones: the efficiency of the bottleneck link group the collective crosses
//      (`network.efficiency` when the ranks span servers, `node.intra.efficiency` within one
//      server; it sets the plateau) and its per-hop latency (`network.link_latency`,
//      `node.intra.latency`; it sets small sizes where the wire is slower than NCCL's table);
//   2. when those leave a size band outside the promise below, what shapes the middle of the
//      curve under `nccl:` (software: nccl): `latency_scale` (NCCL's latency table on this
//      host: launch, flag polling), `channel_scale` (each channel's bandwidth cap: where the
//      per-size channel count stops binding), `nvls_chunk_overhead` (the NVLS/NVLSTree ramp).
// The fit itself (stages, weighting, what is undone, the verdict) is fit_calibration()
// (calibration_fit.hpp); this command builds its parameters from the template, simulates its
// candidates, prints the report and writes the result. --bands limits the fit to some bands;
// the others are still simulated and must not get worse. A fit that stays far off exits 3 and
// writes nothing, unless --force.
// Every candidate is simulated by `gradsync bench` in a child process (/proc/self/exe): SimGrid
// runs one simulation per process. With -o it writes the template with the fitted keys and
// comments saying where they came from.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "../sweep/worker_pool.hpp"
#include "commands.hpp"
#include "gradsync/calibrate.hpp"
#include "gradsync/collective.hpp"
#include "gradsync/calibration_fit.hpp"
#include "gradsync/config.hpp"
#include "gradsync/config_error.hpp"
#include "gradsync/fabric_defaults.hpp"
#include "gradsync/nccl_model.hpp"
#include "gradsync/nccl_tests_compare.hpp"
#include "gradsync/units.hpp"


namespace gradsync::cli {
namespace {

namespace fs = std::filesystem;

struct CalibrateOptions {
  std::string topology;
  std::string log;
  std::string output;
  std::string algo = "auto";
  int iterations = 8;
  bool json = false;
  bool force = false;
  std::vector<std::string> bands;  // empty: every band the log has
  std::vector<std::string> cfg;
};

constexpr int kExitFitOff = 3;            // the fit stays off (nothing written unless --force)

SourceMark mark(const std::string& what) { return SourceMark{"gradsync calibrate " + what, 0, 0}; }

std::string read_file(const std::string& path, const std::string& option) {
  return read_input_file(path, "calibrate", option);
}

// Runs `gradsync ARGS...` (this executable) to completion; returns its exit status (128 +
// the signal when one killed it), its stdout in `out` and stderr in `err`.
int run_child(const std::vector<std::string>& args, std::string& out, std::string& err) {
  sweep::WorkerResult w = sweep::run_process("/proc/self/exe", "gradsync", args,
                                             std::chrono::hours(24));
  out = std::move(w.out);
  err = std::move(w.err);
  return w.signal != 0 ? 128 + w.signal : w.exit_code;
}

// A parameter's value as the YAML file writes it, and as the report shows it.
std::string yaml_value(const FitParam& p) {
  return p.is_time ? fmt::format("{:.6g}ns", p.value * 1e9) : fmt::format("{:.6g}", p.value);
}
std::string shown(const FitParam& p, double v) {
  return p.is_time ? format_time(Seconds(v)) : fmt::format("{:.4f}", v);
}

// Whether the YAML text has a top-level `nccl:` key.
bool has_nccl_block(const std::string& text) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("nccl:", 0) == 0) return true;
  return false;
}

class Calibrator {
 public:
  Calibrator(const CalibrateOptions& o, std::string base_text, int ranks)
      : o_(o), base_(std::move(base_text)), ranks_(ranks) {
    dir_ = fs::temp_directory_path() / fmt::format("gradsync-calibrate-{}", getpid());
    fs::create_directories(dir_);
  }
  ~Calibrator() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  Calibrator(const Calibrator&) = delete;
  Calibrator& operator=(const Calibrator&) = delete;

  // The template with `params` set: every parameter of the stages run so far when `all` (a
  // candidate of the fit), the fitted ones otherwise (the written file).
  [[nodiscard]] std::string text_for(const std::vector<FitParam>& params, bool all,
                                     bool comments) const {
    const std::string src = fs::path(o_.log).filename().string();
    const std::string note =
        comments ? fmt::format("calibrated from nccl-tests log {} (gradsync calibrate)", src) : "";
    std::string text = base_;
    std::vector<const FitParam*> appended;
    const bool nccl_block = has_nccl_block(base_);
    for (const FitParam& p : params) {
      // Candidates carry every parameter of the stages run so far; the written file only
      // the fitted ones (a key left as it was keeps its own line and comment).
      if (all ? (p.nccl && p.stage > stage_) : !p.fitted) continue;
      if (p.nccl && !nccl_block) {
        appended.push_back(&p);
        continue;
      }
      const auto t = set_yaml_key(text, p.path, yaml_value(p), note);
      if (!t)
        throw ConfigError(mark("TOPOLOGY"),
                          fmt::format("cannot edit {} in {}: write its group as a block mapping",
                                      p.label, o_.topology));
      text = *t;
    }
    if (!appended.empty()) {
      if (!text.empty() && text.back() != '\n') text += '\n';
      text += comments ? fmt::format("nccl:  # {}\n", note) : "nccl:\n";
      for (const FitParam* p : appended) text += fmt::format("  {}: {}\n", p->path.back(), yaml_value(*p));
    }
    return text;
  }

  void set_stage(int stage) { stage_ = stage; }

  // bytes -> simulated time (µs) for `sizes`.
  std::map<long long, double> simulate(const std::vector<FitParam>& params,
                                       const std::vector<double>& sizes) {
    const fs::path file = dir_ / fmt::format("candidate-{}.yaml", ++runs_);
    {
      std::ofstream out(file);
      out << text_for(params, true, false);
    }
    // One child per geometric run of sizes (nccl-tests' -b/-e/-f); odd sizes one by one.
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
    std::map<long long, double> result;
    for (const auto& g : groups) {
      std::vector<std::string> args{"bench", file.string(), "--json", "--algo", o_.algo,
                                    "--gpus", std::to_string(ranks_),
                                    "--min", fmt::format("{:.0f}B", g.front()),
                                    "--max", fmt::format("{:.0f}B", g.back())};
      if (g.size() >= 2) {
        args.push_back("--factor");
        args.push_back(fmt::format("{:.17g}", g[1] / g[0]));
      }
      for (const auto& c2 : o_.cfg) args.push_back("--cfg=" + c2);
      std::string out, err;
      const int rc = run_child(args, out, err);
      if (rc != 0) {
        // The candidate file is deleted on exit: name what it was instead.
        const std::string shown = fmt::format("{} (candidate {} of the fit)", o_.topology, runs_);
        for (std::size_t at = err.find(file.string()); at != std::string::npos;
             at = err.find(file.string(), at + shown.size()))
          err.replace(at, file.string().size(), shown);
        // A candidate the topology loader rejects is bad input (every fitted value is kept
        // within its key's range, so this is the original file's problem); anything else is
        // ours.
        if (rc == 2) throw ConfigError(mark("TOPOLOGY"), "simulating a candidate failed: " + err);
        throw std::runtime_error(fmt::format("gradsync bench exited {}: {}", rc, err));
      }
      const auto rows = nlohmann::json::parse(out);
      for (const auto& r : rows) {
        const auto b = std::llround(r.at("bytes").get<double>());
        result[b] = r.at("time_us").get<double>();
        algorithms_[b] = r.value("algorithm", std::string()) +
                         (r.contains("protocol") ? "/" + r.at("protocol").get<std::string>() : "");
      }
    }
    return result;
  }

  [[nodiscard]] int runs() const { return runs_; }
  [[nodiscard]] const std::string& algorithm_at(long long bytes) const { return algorithms_.at(bytes); }

 private:
  const CalibrateOptions& o_;
  std::string base_;
  int ranks_;
  int stage_ = 1;
  fs::path dir_;
  int runs_ = 0;
  std::map<long long, std::string> algorithms_;
};

void run_calibrate(const CalibrateOptions& o) {
  const std::string log_text = read_file(o.log, "--nccl-tests");
  const NcclTestsLog log = parse_nccl_tests_log(log_text, o.log);
  const TopologyFile topo_file = load_topology_file(o.topology);
  if (!topo_file.cluster)
    throw ConfigError(SourceMark{o.topology, 1, 1},
                      "calibrate needs the cluster template form (nodes/node/network), whose "
                      "link groups have one efficiency and latency each");
  const ClusterSpec& spec = *topo_file.cluster;
  std::string text = read_file(o.topology, "TOPOLOGY");

  // The job size: the log's ranks (else every GPU) and its servers (else the template's).
  int nodes = spec.nodes;
  if (log.nodes() > 0 && log.nodes() != spec.nodes) {
    nodes = log.nodes();
    auto t = set_yaml_key(text, {"nodes"}, std::to_string(nodes),
                          fmt::format("the servers of {} (was {})",
                                      fs::path(o.log).filename().string(), spec.nodes));
    if (!t) throw ConfigError(SourceMark{o.topology, 1, 1}, "cannot set nodes: in this file");
    text = *t;
  }
  const int gpus = nodes * spec.node.gpus;
  const int ranks = log.ranks > 0 ? log.ranks : gpus;
  if (ranks > gpus)
    throw ConfigError(SourceMark{o.log, 1, 1},
                      fmt::format("the log has {} ranks, the topology {} only {} GPUs on {} "
                                  "servers",
                                  ranks, spec.name, gpus, nodes));
  const bool multi = nodes > 1 && ranks > spec.node.gpus;
  if (multi && !spec.network)
    throw ConfigError(SourceMark{o.topology, 1, 1}, "a multi-node log needs a network: group");

  // The parameters, stage 1 (the bottleneck link group) then stage 2 (what shapes the middle
  // of the curve under NCCL's software model).
  std::vector<FitParam> params;
  const std::string group = multi ? "network" : "node.intra";
  {
    FitParam e;
    e.label = group + ".efficiency";
    e.path = multi ? std::vector<std::string>{"network", "efficiency"}
                   : std::vector<std::string>{"node", "intra", "efficiency"};
    e.initial = multi ? spec.network->efficiency.value_or(default_efficiency(spec.network->fabric))
                      : spec.node.intra.efficiency.value_or(default_efficiency(spec.node.intra.fabric));
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

  // The rows, and which bands the fit is asked for.
  FitOptions fit_options;
  fit_options.iterations = o.iterations;
  if (!o.bands.empty()) fit_options.asked.fill(false);
  for (const std::string& b : o.bands) {
    bool known = false;
    for (std::size_t i = 0; i < kNcclTestsBands.size(); ++i)
      if (kNcclTestsBands[i].name == b) fit_options.asked[i] = known = true;
    if (!known)
      throw ConfigError(mark("--bands"),
                        fmt::format("unknown band '{}' (expected latency, A, B or C)", b));
  }
  std::vector<FitRow> rows;
  std::vector<double> sizes;
  for (const auto& r : log.rows) {
    if (r.bytes < 1 || r.time_us <= 0) continue;
    sizes.push_back(r.bytes);
    rows.push_back(FitRow{r.bytes, fit_time_us(r), fit_busbw_GBps(r), r.line});
  }
  if (rows.empty()) throw ConfigError(SourceMark{o.log, 1, 1}, "no rows with a size and a time");
  if (!std::any_of(rows.begin(), rows.end(), [&](const FitRow& r) {
        for (std::size_t i = 0; i < kNcclTestsBands.size(); ++i)
          if (in_band(kNcclTestsBands[i], r.bytes)) return fit_options.asked[i];
        return false;
      }))
    throw ConfigError(mark("--bands"), "the log has no row in the bands asked for");

  Calibrator cal(o, text, ranks);
  const CalibrationFit fit = fit_calibration(
      rows, params,
      [&](const std::vector<FitParam>& candidate, int stage) {
        cal.set_stage(stage);
        return cal.simulate(candidate, sizes);
      },
      fit_options);
  params = fit.params;
  cal.set_stage(fit.stages);
  const int stages = fit.stages;
  const bool ok = fit.ok;
  const bool write = !o.output.empty() && (ok || o.force);

  if (write) {
    std::string changes;
    for (const FitParam& p : params)
      if (p.fitted)
        changes += fmt::format("\n#   {} {} (was {})", p.label, shown(p, p.value), shown(p, p.initial));
    if (changes.empty()) changes = "\n#   no parameter changed";
    std::string out = fmt::format(
        "# Calibrated by `gradsync calibrate {} --nccl-tests {}` ({} ranks on {} server{}, {} "
        "run{} averaged, --algo {}):{}\n#   sizes >= 1 MiB within {:.1f} %{}.\n",
        o.topology, o.log, ranks, nodes, nodes == 1 ? "" : "s", log.runs, log.runs == 1 ? "" : "s",
        o.algo, changes, fit.worst_large * 100, ok ? "" : " (written with --force: the fit stays off)");
    out += cal.text_for(params, false, true);
    // The written file must load (and it is what bench will read).
    (void)load_topology_text(out, o.output);
    std::ofstream file(o.output);
    if (!file) throw ConfigError(mark("-o"), fmt::format("cannot write '{}'", o.output));
    file << out;
  }

  // The rows as fitted, with the algorithm each size runs with the fitted values (the fit's
  // last simulation may have been a probe or a rejected step: simulate the result once more).
  (void)cal.simulate(params, sizes);
  std::vector<ComparedRow> after = fit.after;
  for (ComparedRow& r : after) r.algorithm = cal.algorithm_at(std::llround(r.bytes));
  const std::vector<ComparedRow>& before = fit.before;
  const FitParam& eff = params[0];
  const FitParam& lat = params[1];
  if (o.json) {
    nlohmann::ordered_json j;
    j["topology"] = o.topology;
    j["log"] = o.log;
    j["ranks"] = ranks;
    j["nodes"] = nodes;
    j["runs"] = log.runs;
    j["algorithm"] = o.algo;
    j["group"] = group;
    j["parameters"] = {
        {"efficiency", {{"key", eff.label}, {"initial", eff.initial}, {"fitted", eff.value},
                        {"fitted_from", eff.fitted ? "every row" : "not fitted (no effect)"}}},
        {"latency", {{"key", lat.label}, {"initial_s", lat.initial}, {"fitted_s", lat.value},
                     {"fitted_from", lat.fitted ? "every row" : "not fitted (no effect)"}}}};
    for (const FitParam& p : params)
      if (p.nccl)
        j["parameters"][p.path.back()] = {{"key", p.label}, {"initial", p.initial},
                                          {"fitted", p.value}, {"used", p.fitted}};
    j["stages"] = stages;
    j["iterations"] = fit.updates;
    j["simulations"] = cal.runs();
    nlohmann::ordered_json arr = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < after.size(); ++i) {
      const ComparedRow& r = after[i];
      arr.push_back({{"bytes", r.bytes}, {"measured_time_us", r.measured_time_us},
                     {"simulated_time_us", r.simulated_time_us},
                     {"measured_busbw_GBps", r.measured_busbw_GBps},
                     {"simulated_busbw_GBps", r.simulated_busbw_GBps},
                     {"error", r.time_ratio() - 1.0}, {"busbw_error", r.busbw_error()},
                     {"uncalibrated_busbw_error", before[i].busbw_error()},
                     {"algorithm", r.algorithm}});
    }
    j["rows"] = arr;
    nlohmann::ordered_json jb = nlohmann::ordered_json::array();
    for (const FitBand& b : fit.bands)
      jb.push_back({{"band", b.after.band.name}, {"rows", b.after.rows}, {"asked", b.asked},
                    {"median_abs_error_before", b.before.median_abs_error},
                    {"median_abs_error", b.after.median_abs_error},
                    {"worst_abs_error", b.after.worst_abs_error},
                    {"worst_bytes", b.after.worst_bytes}, {"within_promise", b.within_promise},
                    {"degraded", b.degraded}});
    j["bands"] = jb;
    j["max_abs_error_ge_1MiB"] = fit.worst_large;
    j["within_5pct_ge_1MiB"] = fit.worst_large <= kCalibrationPromiseLarge;
    j["within_promise"] = fit.within_promise;
    j["ok"] = ok;
    j["failures"] = fit.failures;
    j["notes"] = fit.notes;
    if (write) j["output"] = o.output;
    std::cout << j.dump(2) << '\n';
  } else {
    std::cout << fmt::format("# gradsync calibrate: {} against {} ({} ranks on {} server{}, {} "
                             "run{} averaged), algorithm {}\n",
                             o.topology, o.log, ranks, nodes, nodes == 1 ? "" : "s", log.runs,
                             log.runs == 1 ? "" : "s", o.algo);
    for (const FitParam& p : params) {
      if (p.stage > stages && p.value == p.initial) continue;
      std::cout << fmt::format("# {}: {} (was {}){}\n", p.label, shown(p, p.value),
                               shown(p, p.initial),
                               p.fitted ? "" : p.no_effect ? "  [no effect on these rows]"
                                                           : "  [not fitted]");
    }
    std::cout << fmt::format("# {} stage{}, {} update{}, {} simulations\n", stages,
                             stages == 1 ? "" : "s", fit.updates, fit.updates == 1 ? "" : "s",
                             cal.runs());
    std::cout << "# measured: the faster of each row's out-of-place and in-place times\n#\n";
    std::cout << fmt::format("#{:>11} {:>11} {:>11} {:>10} {:>10} {:>8} {:>8}  {}\n", "size",
                             "measured", "simulated", "meas busbw", "sim busbw", "error", "before",
                             "algorithm");
    std::cout << fmt::format("#{:>11} {:>11} {:>11} {:>10} {:>10} {:>8} {:>8}\n", "(B)", "(us)",
                             "(us)", "(GB/s)", "(GB/s)", "(busbw)", "");
    for (std::size_t i = 0; i < after.size(); ++i) {
      const ComparedRow& r = after[i];
      std::cout << fmt::format("{:>12.0f} {:>11.2f} {:>11.2f} {:>10.2f} {:>10.2f} {:>+7.1f}% "
                               "{:>+7.1f}%  {}\n",
                               r.bytes, r.measured_time_us, r.simulated_time_us,
                               r.measured_busbw_GBps, r.simulated_busbw_GBps,
                               r.busbw_error() * 100, before[i].busbw_error() * 100, r.algorithm);
    }
    std::cout << "#\n# band                     rows  median before  median after   worst  promise\n";
    for (const FitBand& b : fit.bands)
      std::cout << fmt::format("# {:<7} {:<16} {:>4} {:>13.1f}% {:>12.1f}% {:>+6.1f}%  {}{}\n",
                               b.after.band.name, b.after.band.label, b.after.rows,
                               b.before.median_abs_error * 100, b.after.median_abs_error * 100,
                               b.after.worst_error * 100,
                               b.within_promise ? "met" : "MISSED", b.asked ? "" : " (not fitted)");
    std::cout << fmt::format("# sizes >= 1 MiB: max |error| {:.2f} %{}\n", fit.worst_large * 100,
                             fit.worst_large <= kCalibrationPromiseLarge ? " (within 5 %)" : " (NOT within 5 %)");
    for (const auto& n : fit.notes) std::cout << "# note: " << n << '\n';
    if (write) std::cout << "# wrote " << o.output << '\n';
  }
  if (!ok) {
    std::cout.flush();
    std::cerr << fmt::format("gradsync calibrate: error: the fit stays off: {}; {}\n",
                             fmt::join(fit.failures, "; "),
                             o.force ? "written anyway (--force)"
                                     : o.output.empty() ? "--force accepts it"
                                                        : "nothing written (--force writes it)");
    if (!o.force) throw ExitStatus{kExitFitOff};
  }
}

}  // namespace

void add_calibrate_command(CLI::App& app) {
  auto opts = std::make_shared<CalibrateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate", "fit a topology's bottleneck efficiency and latency to an nccl-tests log");
  cmd->add_option("topology", opts->topology, "topology YAML file (cluster template form)")
      ->required();
  cmd->add_option("--nccl-tests", opts->log, "all_reduce_perf output (several runs may be "
                                             "concatenated)")
      ->required();
  cmd->add_option("-o,--output", opts->output, "write the calibrated topology YAML here");
  // Every algorithm that runs an AllReduce as a contender (parameter servers are a strategy).
  std::vector<std::string> algos = algorithm_names(
      [](const AlgorithmInfo& a) { return a.in_auto != AutoUse::Never; });
  algos.insert(algos.begin(), "auto");
  cmd->add_option("--algo", opts->algo,
                  fmt::format("algorithm simulated (default auto: NCCL's choice per size, as the "
                              "logged run): {}", fmt::join(algos, " | ")))
      ->check(CLI::IsMember(algos));
  cmd->add_option("--iterations", opts->iterations, "most fit iterations per stage (default 8)")
      ->check(CLI::Range(0, 40));
  cmd->add_option("--bands", opts->bands, "size bands to fit (default: all the log has): "
                                          "latency, A, B, C; the others must not get worse")
      ->delimiter(',');
  cmd->add_flag("--force", opts->force, "accept (and write) a fit that stays far off or makes "
                                        "a band worse");
  cmd->add_flag("--json", opts->json, "print the fit as one JSON object");
  cmd->add_option("--cfg", opts->cfg, "SimGrid option passed to each simulation");
  cmd->callback([opts] { run_calibrate(*opts); });
}

}  // namespace gradsync::cli
