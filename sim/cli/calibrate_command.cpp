// `gradsync calibrate TOPOLOGY --nccl-tests LOG [-o calibrated.yaml] [--json] [--force]`
// (DESIGN.md §6): fits a topology template to a real nccl-tests run by running the simulator
// itself, over the whole curve. Parameters, in two stages:
//   1. the physical ones: the efficiency of the bottleneck link group the collective crosses
//      (`network.efficiency` when the ranks span servers, `node.intra.efficiency` within one
//      server; it sets the plateau) and its per-hop latency (`network.link_latency`,
//      `node.intra.latency`; it sets small sizes where the wire is slower than NCCL's table);
//   2. when those leave a size band outside the promise below, what shapes the middle of the
//      curve under `nccl:` (software: nccl): `latency_scale` (NCCL's latency table on this
//      host: launch, flag polling), `channel_scale` (each channel's bandwidth cap: where the
//      per-size channel count stops binding), `nvls_chunk_overhead` (the NVLS/NVLSTree ramp).
// Each stage is a damped Gauss-Newton (Levenberg-Marquardt) fit of log(simulated / measured
// time) over every row, each size band weighted equally (its rows share one unit of weight);
// a parameter the rows do not depend on is left as it is. --bands limits the fit to some
// bands; the others are still simulated and must not get worse.
// The promise: every row >= 1 MiB within 5 % busbw, every row below within 10 %. When a band
// misses it the output says which and why. A fit that stays far off (a band's median |error|
// beyond twice its promise, or a row beyond five times) or leaves any band worse than the
// uncalibrated topology exits 3 and writes nothing, unless --force.
// Every candidate is simulated by `gradsync bench` in a child process (/proc/self/exe): SimGrid
// runs one simulation per process. With -o it writes the template with the fitted keys and
// comments saying where they came from.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
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
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "gradsync/calibrate.hpp"
#include "gradsync/config.hpp"
#include "gradsync/config_error.hpp"
#include "gradsync/fabric_defaults.hpp"
#include "gradsync/nccl_model.hpp"
#include "gradsync/nccl_tests_compare.hpp"
#include "gradsync/units.hpp"

extern char** environ;

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

constexpr double kCheckBytes = 1024.0 * 1024;  // >= : the 5 % promise, below: 10 %
constexpr double kPromiseLarge = 0.05;
constexpr double kPromiseSmall = 0.10;
// The fit stays far off: a band's median beyond kFarOff × its promise, or one row beyond
// kFarOffRow × its promise (a single noisy row of a one-run log is not a failed fit).
constexpr double kFarOff = 2.0;
constexpr double kFarOffRow = 5.0;
constexpr double kDegraded = 0.005;       // a band's median |error| worse by more: degraded
constexpr int kExitFitOff = 3;            // the fit stays off (nothing written unless --force)

SourceMark mark(const std::string& what) { return SourceMark{"gradsync calibrate " + what, 0, 0}; }

std::string read_file(const std::string& path, const std::string& option) {
  return read_input_file(path, "calibrate", option);
}

// Runs argv, returns (exit status, stdout); stderr is kept in `err`.
int run_child(const std::vector<std::string>& args, std::string& out, std::string& err) {
  int out_pipe[2], err_pipe[2];
  if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0) throw std::runtime_error("pipe failed");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, err_pipe[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&fa, out_pipe[0]);
  posix_spawn_file_actions_addclose(&fa, err_pipe[0]);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, "/proc/self/exe", &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    throw std::runtime_error("cannot start gradsync bench: " + std::string(std::strerror(rc)));
  }
  // stderr is small (one error line); read stdout first, then stderr.
  char buf[65536];
  ssize_t n;
  while ((n = read(out_pipe[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  while ((n = read(err_pipe[0], buf, sizeof buf)) > 0) err.append(buf, static_cast<std::size_t>(n));
  close(out_pipe[0]);
  close(err_pipe[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// One fitted parameter: a YAML key of the template and how it is searched.
struct Param {
  std::string label;               // "network.efficiency"
  std::vector<std::string> path;   // {"network", "efficiency"}
  std::string sets;                // what it shapes, for the report
  bool log_scale = true;           // fitted in log(value), else in value / unit
  double unit = 1.0;               // linear: the step's unit (1 µs for latencies)
  double initial = 0, value = 0, lo = 0, hi = 0;
  double probe = 0.95;             // log: the probe's factor; linear: its step (in units)
  bool is_time = false;            // written as a time ("1.5us"), else a number
  bool nccl = false;               // under nccl: (written only when fitted)
  int stage = 1;
  bool fitted = false;             // the rows depend on it and the fit used it
  bool no_effect = false;          // probed: the rows do not depend on it

  [[nodiscard]] double coord() const { return log_scale ? std::log(value) : value / unit; }
  [[nodiscard]] double from_coord(double u) const {
    return std::clamp(log_scale ? std::exp(u) : u * unit, lo, hi);
  }
  [[nodiscard]] std::string yaml() const {
    return is_time ? fmt::format("{:.6g}ns", value * 1e9) : fmt::format("{:.6g}", value);
  }
  [[nodiscard]] std::string shown(double v) const {
    return is_time ? format_time(Seconds(v)) : fmt::format("{:.4f}", v);
  }
  [[nodiscard]] bool at_bound() const {
    return value <= lo * (1 + 1e-9) || value >= hi * (1 - 1e-9);
  }
};

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
  [[nodiscard]] std::string text_for(const std::vector<Param>& params, bool all,
                                     bool comments) const {
    const std::string src = fs::path(o_.log).filename().string();
    const std::string note =
        comments ? fmt::format("calibrated from nccl-tests log {} (gradsync calibrate)", src) : "";
    std::string text = base_;
    std::vector<const Param*> appended;
    const bool nccl_block = has_nccl_block(base_);
    for (const Param& p : params) {
      // Candidates carry every parameter of the stages run so far; the written file only
      // the fitted ones (a key left as it was keeps its own line and comment).
      if (all ? (p.nccl && p.stage > stage_) : !p.fitted) continue;
      if (p.nccl && !nccl_block) {
        appended.push_back(&p);
        continue;
      }
      const auto t = set_yaml_key(text, p.path, p.yaml(), note);
      if (!t)
        throw ConfigError(mark("TOPOLOGY"),
                          fmt::format("cannot edit {} in {}: write its group as a block mapping",
                                      p.label, o_.topology));
      text = *t;
    }
    if (!appended.empty()) {
      if (!text.empty() && text.back() != '\n') text += '\n';
      text += comments ? fmt::format("nccl:  # {}\n", note) : "nccl:\n";
      for (const Param* p : appended) text += fmt::format("  {}: {}\n", p->path.back(), p->yaml());
    }
    return text;
  }

  void set_stage(int stage) { stage_ = stage; }

  // bytes -> simulated time (µs) for `sizes`.
  std::map<long long, double> simulate(const std::vector<Param>& params,
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
      std::vector<std::string> args{"gradsync", "bench", file.string(), "--json", "--algo", o_.algo,
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

// The measured rows and their weights in the fit.
struct FitRows {
  std::vector<const NcclTestsRow*> rows;
  std::vector<double> weight;  // per row: 1 / rows of its band, 0 outside --bands
};

// Rows' band for weighting: the first band that holds the size (a 64 KiB row is a latency row).
std::size_t band_index(double bytes) {
  for (std::size_t b = 0; b < kNcclTestsBands.size(); ++b)
    if (in_band(kNcclTestsBands[b], bytes)) return b;
  return kNcclTestsBands.size() - 1;
}

double promise_at(double bytes) { return bytes >= kCheckBytes ? kPromiseLarge : kPromiseSmall; }

std::vector<double> residuals(const FitRows& f, const std::map<long long, double>& sim) {
  std::vector<double> r;
  r.reserve(f.rows.size());
  for (std::size_t i = 0; i < f.rows.size(); ++i) {
    const auto b = std::llround(f.rows[i]->bytes);
    r.push_back(std::sqrt(f.weight[i]) * std::log(sim.at(b) / f.rows[i]->time_us));
  }
  return r;
}

double cost_of(const std::vector<double>& r) {
  double c = 0;
  for (double v : r) c += v * v;
  return c;
}

// Solves A x = b (small, symmetric positive definite after damping) by Gaussian elimination
// with partial pivoting; false when singular.
bool solve(std::vector<std::vector<double>> a, std::vector<double> b, std::vector<double>& x) {
  const std::size_t n = b.size();
  for (std::size_t c = 0; c < n; ++c) {
    std::size_t piv = c;
    for (std::size_t r = c + 1; r < n; ++r)
      if (std::abs(a[r][c]) > std::abs(a[piv][c])) piv = r;
    if (!(std::abs(a[piv][c]) > 1e-300)) return false;
    std::swap(a[c], a[piv]);
    std::swap(b[c], b[piv]);
    for (std::size_t r = c + 1; r < n; ++r) {
      const double f = a[r][c] / a[c][c];
      for (std::size_t k = c; k < n; ++k) a[r][k] -= f * a[c][k];
      b[r] -= f * b[c];
    }
  }
  x.assign(n, 0.0);
  for (std::size_t c = n; c-- > 0;) {
    double s = b[c];
    for (std::size_t k = c + 1; k < n; ++k) s -= a[c][k] * x[k];
    x[c] = s / a[c][c];
  }
  return true;
}

struct FitState {
  std::map<long long, double> sim;
  double cost = 0;
  int updates = 0;
};

// One stage of the fit: Levenberg-Marquardt over the stage's parameters (forward-difference
// Jacobian, one probe per parameter and iteration).
void fit_stage(Calibrator& cal, std::vector<Param>& params, int stage, const FitRows& f,
               const std::vector<double>& sizes, int iterations, FitState& st) {
  cal.set_stage(stage);
  st.sim = cal.simulate(params, sizes);
  std::vector<double> r = residuals(f, st.sim);
  st.cost = cost_of(r);
  double lambda = 1e-2;
  for (int it = 0; it < iterations && st.cost > 1e-8; ++it) {
    std::vector<std::size_t> free;
    std::vector<std::vector<double>> cols;
    for (std::size_t j = 0; j < params.size(); ++j) {
      Param& p = params[j];
      if (p.stage != stage || p.no_effect) continue;
      std::vector<Param> probe = params;
      const double h = p.log_scale ? std::log(p.probe) : p.probe;
      probe[j].value = p.from_coord(p.coord() + h);
      const double dh = probe[j].coord() - p.coord();  // after clamping
      if (dh == 0.0) {
        // At a bound in the probe's direction: probe the other way.
        probe[j].value = p.from_coord(p.coord() - h);
      }
      double step = probe[j].coord() - p.coord();
      if (step == 0.0) continue;
      std::vector<double> col(r.size());
      double norm = 0;
      // A latency below NCCL's per-step value has no effect (the collective takes the larger
      // of the two), so a linear parameter is probed further out before it counts as idle.
      for (int widen = 0; widen < (p.log_scale ? 1 : 4); ++widen) {
        if (widen > 0) {
          probe[j].value = p.from_coord(p.coord() + 4.0 * step);
          step = probe[j].coord() - p.coord();
        }
        const std::vector<double> rp = residuals(f, cal.simulate(probe, sizes));
        norm = 0;
        for (std::size_t i = 0; i < r.size(); ++i) {
          col[i] = (rp[i] - r[i]) / step;
          norm += col[i] * col[i];
        }
        if (norm >= 1e-8) break;
      }
      if (norm < 1e-8) {  // the rows do not depend on it (another limit holds them)
        p.no_effect = true;
        continue;
      }
      p.fitted = true;
      free.push_back(j);
      cols.push_back(std::move(col));
    }
    if (free.empty()) return;
    const std::size_t n = free.size();
    std::vector<std::vector<double>> jtj(n, std::vector<double>(n, 0.0));
    std::vector<double> jtr(n, 0.0);
    for (std::size_t a = 0; a < n; ++a) {
      for (std::size_t i = 0; i < r.size(); ++i) jtr[a] -= cols[a][i] * r[i];
      for (std::size_t b = 0; b < n; ++b)
        for (std::size_t i = 0; i < r.size(); ++i) jtj[a][b] += cols[a][i] * cols[b][i];
    }
    bool accepted = false;
    for (int tries = 0; tries < 10 && !accepted; ++tries) {
      std::vector<std::vector<double>> m = jtj;
      for (std::size_t a = 0; a < n; ++a) m[a][a] *= 1.0 + lambda;
      std::vector<double> d;
      if (!solve(m, jtr, d)) break;
      // A trust region: at most a factor e per iteration (log parameters), at most twice
      // the value or 2 units (linear ones); the model has thresholds (protocol and algorithm
      // switches) that a long step jumps over.
      double shrink = 1.0;
      for (std::size_t a = 0; a < n; ++a) {
        const Param& p = params[free[a]];
        const double limit = p.log_scale ? 1.0 : std::max(2.0 * std::abs(p.coord()), 2.0);
        if (std::abs(d[a]) > limit) shrink = std::min(shrink, limit / std::abs(d[a]));
      }
      for (double& v : d) v *= shrink;
      std::vector<Param> trial = params;
      for (std::size_t a = 0; a < n; ++a) {
        Param& p = trial[free[a]];
        p.value = p.from_coord(p.coord() + d[a]);
      }
      auto sim = cal.simulate(trial, sizes);
      const std::vector<double> rt = residuals(f, sim);
      const double c = cost_of(rt);
      if (std::getenv("GRADSYNC_CALIBRATE_TRACE") != nullptr) {
        std::cerr << fmt::format("stage {} it {} lambda {:.3g} cost {:.6g} -> {:.6g}:", stage, it,
                                 lambda, st.cost, c);
        for (std::size_t a = 0; a < n; ++a)
          std::cerr << fmt::format(" {}={:.6g}", trial[free[a]].label, trial[free[a]].value);
        std::cerr << '\n';
      }
      if (c < st.cost) {
        const double gain = (st.cost - c) / st.cost;
        params = std::move(trial);
        st.sim = std::move(sim);
        r = rt;
        st.cost = c;
        ++st.updates;
        lambda = std::max(lambda / 3.0, 1e-6);
        accepted = true;
        if (gain < 1e-4 || c < 1e-9) return;  // converged
      } else {
        lambda *= 4.0;
      }
    }
    if (!accepted) return;
  }
}

std::vector<ComparedRow> compared(const std::vector<const NcclTestsRow*>& rows,
                                  const std::map<long long, double>& sim,
                                  const Calibrator& cal) {
  std::vector<ComparedRow> out;
  for (const NcclTestsRow* r : rows) {
    ComparedRow c;
    const auto b = std::llround(r->bytes);
    c.bytes = r->bytes;
    c.measured_time_us = r->time_us;
    c.simulated_time_us = sim.at(b);
    c.measured_busbw_GBps = r->busbw_GBps;
    c.simulated_busbw_GBps = r->busbw_GBps * r->time_us / sim.at(b);
    c.algorithm = cal.algorithm_at(b);
    c.line = r->line;
    out.push_back(c);
  }
  return out;
}

std::string size_text(double bytes) { return format_size(Bytes(bytes)); }

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

  // The parameters, stage 1 (the bottleneck link group) then stage 2 (NCCL's shape).
  std::vector<Param> params;
  const std::string group = multi ? "network" : "node.intra";
  {
    Param e;
    e.label = group + ".efficiency";
    e.path = multi ? std::vector<std::string>{"network", "efficiency"}
                   : std::vector<std::string>{"node", "intra", "efficiency"};
    e.sets = "the bandwidth plateau";
    e.initial = multi ? spec.network->efficiency.value_or(default_efficiency(spec.network->fabric))
                      : spec.node.intra.efficiency.value_or(default_efficiency(spec.node.intra.fabric));
    e.lo = 1e-3;
    e.hi = 1.0;
    e.probe = 0.95;
    params.push_back(e);
    Param l;
    l.label = multi ? "network.link_latency" : "node.intra.latency";
    l.path = multi ? std::vector<std::string>{"network", "link_latency"}
                   : std::vector<std::string>{"node", "intra", "latency"};
    l.sets = "small sizes, where the wire is slower than NCCL's per-step latency";
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
    const auto nccl_param = [&](const char* key, const char* sets, double initial, double lo,
                                double hi, double probe, bool is_time) {
      Param p;
      p.label = std::string("nccl.") + key;
      p.path = {"nccl", key};
      p.sets = sets;
      p.initial = initial;
      p.lo = lo;
      p.hi = hi;
      p.probe = probe;
      p.is_time = is_time;
      p.nccl = true;
      p.stage = 2;
      params.push_back(p);
    };
    nccl_param("latency_scale", "the small-message floor (NCCL's latency table on this host)",
               spec.nccl.latency_scale, 0.01, 100.0, 1.1, false);
    nccl_param("channel_scale", "the middle of the curve (a channel's bandwidth cap)",
               spec.nccl.channel_scale, 0.01, 100.0, 0.9, false);
    nccl_param("nvls_chunk_overhead", "the NVLS/NVLSTree ramp",
               spec.nccl.nvls_chunk_overhead_s.value_or(kNvlsChunkOverheadUs * 1e-6), 1e-8,
               1e-3, 1.2, true);
  }
  for (Param& p : params) p.value = p.initial;
  const std::vector<Param> initial = params;

  // The rows, and which bands the fit is asked for.
  std::array<bool, kNcclTestsBands.size()> asked{};
  if (o.bands.empty()) asked.fill(true);
  for (const std::string& b : o.bands) {
    bool known = false;
    for (std::size_t i = 0; i < kNcclTestsBands.size(); ++i)
      if (kNcclTestsBands[i].name == b) asked[i] = known = true;
    if (!known)
      throw ConfigError(mark("--bands"),
                        fmt::format("unknown band '{}' (expected latency, A, B or C)", b));
  }
  FitRows f;
  std::vector<double> sizes;
  std::array<int, kNcclTestsBands.size()> in_band_rows{};
  for (const auto& r : log.rows) {
    if (r.bytes < 1 || r.time_us <= 0) continue;
    sizes.push_back(r.bytes);
    f.rows.push_back(&r);
    ++in_band_rows[band_index(r.bytes)];
  }
  if (sizes.empty()) throw ConfigError(SourceMark{o.log, 1, 1}, "no rows with a size and a time");
  for (const NcclTestsRow* r : f.rows) {
    const std::size_t b = band_index(r->bytes);
    f.weight.push_back(asked[b] ? 1.0 / in_band_rows[b] : 0.0);
  }
  if (std::all_of(f.weight.begin(), f.weight.end(), [](double w) { return w == 0.0; }))
    throw ConfigError(mark("--bands"), "the log has no row in the bands asked for");

  Calibrator cal(o, text, ranks);
  FitState st;
  cal.set_stage(1);
  const std::map<long long, double> sim0 = cal.simulate(params, sizes);
  const std::vector<ComparedRow> before = compared(f.rows, sim0, cal);
  const auto within_promise = [&](const std::vector<ComparedRow>& rows) {
    for (std::size_t i = 0; i < rows.size(); ++i)
      if (f.weight[i] > 0 && std::abs(rows[i].busbw_error()) > promise_at(rows[i].bytes))
        return false;
    return true;
  };
  // A stage is kept only when it leaves no band worse than it found it: the fit weighs bands
  // equally, so it could trade one band's accuracy for another's.
  std::vector<std::string> reverted;
  const auto run_stage = [&](int stage, const std::map<long long, double>& sim_before) {
    const std::vector<Param> keep = params;
    const std::vector<BandSummary> start = summarize_bands(compared(f.rows, sim_before, cal));
    fit_stage(cal, params, stage, f, sizes, o.iterations, st);
    const std::vector<BandSummary> end = summarize_bands(compared(f.rows, st.sim, cal));
    for (const BandSummary& e : end)
      for (const BandSummary& b : start)
        if (b.band.name == e.band.name && e.median_abs_error > b.median_abs_error + kDegraded) {
          reverted.push_back(fmt::format(
              "stage {} ({}) was undone: it made band {} worse (median |error| {:.1f} % -> "
              "{:.1f} %)",
              stage, stage == 1 ? "link group" : "nccl:", e.band.name, b.median_abs_error * 100,
              e.median_abs_error * 100));
          params = keep;
          for (Param& p : params)
            if (p.stage == stage) p.fitted = false;
          cal.set_stage(stage);
          st.sim = cal.simulate(params, sizes);
          return;
        }
  };
  run_stage(1, sim0);
  int stages = 1;
  if (!within_promise(compared(f.rows, st.sim, cal)) &&
      std::any_of(params.begin(), params.end(), [](const Param& p) { return p.stage == 2; })) {
    stages = 2;
    const std::map<long long, double> sim1 = st.sim;
    run_stage(2, sim1);
  }
  // Stage-2 parameters that did not move are left out of the written file.
  for (Param& p : params)
    if (p.nccl && std::abs(p.value / p.initial - 1.0) < 1e-6) p.fitted = false;
  cal.set_stage(stages);
  const std::vector<ComparedRow> after = compared(f.rows, st.sim, cal);

  // What the fit achieved, per band, against the uncalibrated topology.
  const std::vector<BandSummary> bands_before = summarize_bands(before);
  const std::vector<BandSummary> bands_after = summarize_bands(after);
  std::vector<std::string> notes, failures;
  double worst_large = 0;
  bool promise = true, far_off = false;
  for (std::size_t i = 0; i < after.size(); ++i) {
    const double e = std::abs(after[i].busbw_error());
    if (after[i].bytes >= kCheckBytes) worst_large = std::max(worst_large, e);
    if (f.weight[i] == 0) continue;
    if (e > promise_at(after[i].bytes)) promise = false;
    if (e > kFarOffRow * promise_at(after[i].bytes)) {
      if (!far_off)
        failures.push_back(fmt::format("{} is off by {:+.1f} % (beyond {}x the promise)",
                                       size_text(after[i].bytes), after[i].busbw_error() * 100,
                                       kFarOffRow));
      far_off = true;
    }
  }
  std::vector<std::string> fitted_names, stuck, idle;
  for (const Param& p : params) {
    if (p.fitted) fitted_names.push_back(p.label);
    if (p.fitted && p.at_bound()) stuck.push_back(fmt::format("{} at its bound {}", p.label, p.yaml()));
    if (p.no_effect && p.stage <= stages) idle.push_back(p.label);
  }
  struct BandReport {
    BandSummary before, after;
    bool asked = false, met = true, degraded = false;
  };
  std::vector<BandReport> reports;
  for (const BandSummary& a : bands_after) {
    BandReport br;
    br.after = a;
    for (const BandSummary& b : bands_before)
      if (b.band.name == a.band.name) br.before = b;
    std::size_t bi = 0;
    while (kNcclTestsBands[bi].name != a.band.name) ++bi;
    br.asked = asked[bi];
    int slower = 0, total = 0;
    for (const ComparedRow& r : after)
      if (in_band(a.band, r.bytes)) {
        ++total;
        if (std::abs(r.busbw_error()) > promise_at(r.bytes)) br.met = false;
        slower += r.busbw_error() > 0 ? 1 : 0;  // gradsync optimistic: the run is slower
      }
    br.degraded = a.median_abs_error > br.before.median_abs_error + kDegraded;
    if (br.asked && a.median_abs_error > kFarOff * promise_at(a.band.lo_bytes)) {
      failures.push_back(fmt::format("band {} ({}) median |error| {:.1f} % (beyond {}x its {} % "
                                     "promise)",
                                     a.band.name, a.band.label, a.median_abs_error * 100, kFarOff,
                                     promise_at(a.band.lo_bytes) * 100));
      far_off = true;
    }
    if (!br.met && br.asked) {
      std::string why = stuck.empty() ? "" : fmt::format("; {}", fmt::join(stuck, ", "));
      notes.push_back(fmt::format(
          "band {} ({}) misses the promise: worst {:+.1f} % at {}, the run {} than the model "
          "at {} of {} rows; {}: the model's shape differs from this run here{}",
          a.band.name, a.band.label, a.worst_error * 100, size_text(a.worst_bytes),
          slower * 2 >= total ? "slower" : "faster", slower * 2 >= total ? slower : total - slower,
          total,
          fitted_names.empty()
              ? std::string("no fitted parameter could be kept (see the notes below)")
              : fmt::format("the fitted parameters ({}) cannot move these sizes apart from the "
                            "others",
                            fmt::join(fitted_names, ", ")),
          why));
    }
    if (br.degraded) {
      const std::string msg =
          fmt::format("band {} ({}) got worse: median |error| {:.1f} % -> {:.1f} %{}", a.band.name,
                      a.band.label, br.before.median_abs_error * 100, a.median_abs_error * 100,
                      br.asked ? "" : " (a band the fit was not asked for)");
      notes.push_back(msg);
      failures.push_back(msg);
    }
    reports.push_back(br);
  }
  for (const std::string& r : reverted) notes.push_back(r);
  if (!idle.empty())
    notes.push_back(fmt::format("{} had no effect on these rows (another limit holds them)",
                                fmt::join(idle, ", ")));
  const bool ok = failures.empty();
  const bool write = !o.output.empty() && (ok || o.force);

  if (write) {
    std::string changes;
    for (const Param& p : params)
      if (p.fitted)
        changes += fmt::format("\n#   {} {} (was {})", p.label, p.shown(p.value), p.shown(p.initial));
    if (changes.empty()) changes = "\n#   no parameter changed";
    std::string out = fmt::format(
        "# Calibrated by `gradsync calibrate {} --nccl-tests {}` ({} ranks on {} server{}, {} "
        "run{} averaged, --algo {}):{}\n#   sizes >= 1 MiB within {:.1f} %{}.\n",
        o.topology, o.log, ranks, nodes, nodes == 1 ? "" : "s", log.runs, log.runs == 1 ? "" : "s",
        o.algo, changes, worst_large * 100, ok ? "" : " (written with --force: the fit stays off)");
    out += cal.text_for(params, false, true);
    // The written file must load (and it is what bench will read).
    (void)load_topology_text(out, o.output);
    std::ofstream file(o.output);
    if (!file) throw ConfigError(mark("-o"), fmt::format("cannot write '{}'", o.output));
    file << out;
  }

  const Param& eff = params[0];
  const Param& lat = params[1];
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
    for (const Param& p : params)
      if (p.nccl)
        j["parameters"][p.path.back()] = {{"key", p.label}, {"initial", p.initial},
                                          {"fitted", p.value}, {"used", p.fitted}};
    j["stages"] = stages;
    j["iterations"] = st.updates;
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
    for (const BandReport& b : reports)
      jb.push_back({{"band", b.after.band.name}, {"rows", b.after.rows}, {"asked", b.asked},
                    {"median_abs_error_before", b.before.median_abs_error},
                    {"median_abs_error", b.after.median_abs_error},
                    {"worst_abs_error", b.after.worst_abs_error},
                    {"worst_bytes", b.after.worst_bytes}, {"within_promise", b.met},
                    {"degraded", b.degraded}});
    j["bands"] = jb;
    j["max_abs_error_ge_1MiB"] = worst_large;
    j["within_5pct_ge_1MiB"] = worst_large <= kPromiseLarge;
    j["within_promise"] = promise;
    j["ok"] = ok;
    j["failures"] = failures;
    j["notes"] = notes;
    if (write) j["output"] = o.output;
    std::cout << j.dump(2) << '\n';
  } else {
    std::cout << fmt::format("# gradsync calibrate: {} against {} ({} ranks on {} server{}, {} "
                             "run{} averaged), algorithm {}\n",
                             o.topology, o.log, ranks, nodes, nodes == 1 ? "" : "s", log.runs,
                             log.runs == 1 ? "" : "s", o.algo);
    for (const Param& p : params) {
      if (p.stage > stages && p.value == p.initial) continue;
      std::cout << fmt::format("# {}: {} (was {}){}\n", p.label, p.shown(p.value),
                               p.shown(p.initial),
                               p.fitted ? "" : p.no_effect ? "  [no effect on these rows]"
                                                           : "  [not fitted]");
    }
    std::cout << fmt::format("# {} stage{}, {} update{}, {} simulations\n#\n", stages,
                             stages == 1 ? "" : "s", st.updates, st.updates == 1 ? "" : "s",
                             cal.runs());
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
    for (const BandReport& b : reports)
      std::cout << fmt::format("# {:<7} {:<16} {:>4} {:>13.1f}% {:>12.1f}% {:>+6.1f}%  {}{}\n",
                               b.after.band.name, b.after.band.label, b.after.rows,
                               b.before.median_abs_error * 100, b.after.median_abs_error * 100,
                               b.after.worst_error * 100,
                               b.met ? "met" : "MISSED", b.asked ? "" : " (not fitted)");
    std::cout << fmt::format("# sizes >= 1 MiB: max |error| {:.2f} %{}\n", worst_large * 100,
                             worst_large <= kPromiseLarge ? " (within 5 %)" : " (NOT within 5 %)");
    for (const auto& n : notes) std::cout << "# note: " << n << '\n';
    if (write) std::cout << "# wrote " << o.output << '\n';
  }
  if (!ok) {
    std::cout.flush();
    std::cerr << fmt::format("gradsync calibrate: error: the fit stays off: {}; {}\n",
                             fmt::join(failures, "; "),
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
  cmd->add_option("--algo", opts->algo, "algorithm simulated (default auto: NCCL's choice per "
                                        "size, as the logged run): auto | ring | tree | nvls | "
                                        "nvlstree | hierarchical")
      ->check(CLI::IsMember({"auto", "ring", "tree", "nvls", "nvlstree", "hierarchical"}));
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
