// `gradsync calibrate TOPOLOGY --nccl-tests LOG [-o calibrated.yaml] [--json]` (DESIGN.md §6):
// fits the two parameters of a topology template that a real nccl-tests run pins down, by
// running the simulator itself:
//   - the efficiency of the bottleneck link group the collective crosses (`network.efficiency`
//     when the ranks span servers, `node.intra.efficiency` within one server), from sizes
//     >= 64 MiB: e <- e x measured busbw / simulated busbw, repeated (at most --iterations);
//   - the per-step latency of that group (`network.link_latency`, `node.intra.latency`), from
//     sizes <= 64 KiB: time is linear in it, so one probe run gives the slope and a least-
//     squares step lands on it.
// Every candidate is simulated by `gradsync bench` in a child process (/proc/self/exe): SimGrid
// runs one simulation per process. It prints the fit error per size and, with -o, writes the
// template with the fitted keys and comments saying where they came from.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
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
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "gradsync/calibrate.hpp"
#include "gradsync/config.hpp"
#include "gradsync/config_error.hpp"
#include "gradsync/fabric_defaults.hpp"
#include "gradsync/units.hpp"

extern char** environ;

namespace gradsync::cli {
namespace {

namespace fs = std::filesystem;

struct CalibrateOptions {
  std::string topology;
  std::string log;
  std::string output;
  std::string algo = "ring";
  int iterations = 4;
  bool json = false;
  std::vector<std::string> cfg;
};

constexpr double kLargeBytes = 64.0 * 1024 * 1024;  // >= : efficiency
constexpr double kSmallBytes = 64.0 * 1024;         // <= : latency
constexpr double kCheckBytes = 1024.0 * 1024;       // >= : the 5 % promise

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

struct Candidate {
  double efficiency;
  double latency_s;
};

struct Group {
  std::vector<std::string> efficiency_key;
  std::vector<std::string> latency_key;
  std::string label;  // "network" / "node.intra"
};

std::string yaml_number(double v) { return fmt::format("{:.6g}", v); }
std::string yaml_time(double s) { return fmt::format("{:.6g}ns", s * 1e9); }

class Calibrator {
 public:
  Calibrator(const CalibrateOptions& o, std::string base_text, Group group, int ranks,
             std::vector<double> sizes)
      : o_(o), base_(std::move(base_text)), group_(std::move(group)), ranks_(ranks),
        sizes_(std::move(sizes)) {
    dir_ = fs::temp_directory_path() / fmt::format("gradsync-calibrate-{}", getpid());
    fs::create_directories(dir_);
  }
  ~Calibrator() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  Calibrator(const Calibrator&) = delete;
  Calibrator& operator=(const Calibrator&) = delete;

  [[nodiscard]] std::string text_for(const Candidate& c, bool comments) const {
    const std::string src = fs::path(o_.log).filename().string();
    auto t = set_yaml_key(base_, group_.efficiency_key, yaml_number(c.efficiency),
                          comments ? fmt::format("calibrated from nccl-tests log {} (gradsync "
                                                 "calibrate)", src)
                                   : "");
    if (t)
      t = set_yaml_key(*t, group_.latency_key, yaml_time(c.latency_s),
                       comments ? fmt::format("calibrated from nccl-tests log {}", src) : "");
    if (!t)
      throw ConfigError(mark("TOPOLOGY"),
                        fmt::format("cannot edit {} in {}: write the {} group as a block mapping",
                                    fmt::join(group_.efficiency_key, "."), o_.topology,
                                    group_.label));
    return *t;
  }

  // bytes -> simulated time (us) for `sizes` (all of them by default).
  std::map<long long, double> simulate(const Candidate& c, const std::vector<double>& sizes) {
    const fs::path file = dir_ / fmt::format("candidate-{}.yaml", ++runs_);
    {
      std::ofstream out(file);
      out << text_for(c, false);
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
        // A candidate the topology loader rejects is bad input (e.g. a fitted efficiency > 1
        // is clamped, so this is the original file's problem); anything else is ours.
        if (rc == 2) throw ConfigError(mark("TOPOLOGY"), "simulating a candidate failed: " + err);
        throw std::runtime_error(fmt::format("gradsync bench exited {}: {}", rc, err));
      }
      const auto rows = nlohmann::json::parse(out);
      for (const auto& r : rows)
        result[std::llround(r.at("bytes").get<double>())] = r.at("time_us").get<double>();
    }
    return result;
  }

  [[nodiscard]] int runs() const { return runs_; }

 private:
  const CalibrateOptions& o_;
  std::string base_;
  Group group_;
  int ranks_;
  std::vector<double> sizes_;
  fs::path dir_;
  int runs_ = 0;
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

  Group group;
  Candidate c{};
  if (multi) {
    group = {{"network", "efficiency"}, {"network", "link_latency"}, "network"};
    c.efficiency = spec.network->efficiency.value_or(default_efficiency(spec.network->fabric));
    c.latency_s = spec.network->link_latency.seconds();
  } else {
    group = {{"node", "intra", "efficiency"}, {"node", "intra", "latency"}, "node.intra"};
    c.efficiency = spec.node.intra.efficiency.value_or(default_efficiency(spec.node.intra.fabric));
    c.latency_s = spec.node.intra.latency.seconds();
  }
  const Candidate initial = c;

  std::vector<double> sizes, small;
  std::vector<const NcclTestsRow*> rows;
  for (const auto& r : log.rows) {
    if (r.bytes < 1 || r.time_us <= 0) continue;
    sizes.push_back(r.bytes);
    rows.push_back(&r);
    if (r.bytes <= kSmallBytes) small.push_back(r.bytes);
  }
  if (sizes.empty()) throw ConfigError(SourceMark{o.log, 1, 1}, "no rows with a size and a time");
  const bool fit_eff = std::any_of(sizes.begin(), sizes.end(), [](double s) { return s >= kLargeBytes; });
  const bool fit_lat = !small.empty();
  std::map<long long, double> measured;
  for (const auto* r : rows) measured[std::llround(r->bytes)] = r->time_us;

  Calibrator cal(o, text, group, ranks, sizes);
  std::map<long long, double> sim;
  int iterations = 0;
  std::vector<std::string> notes;
  std::vector<double> large;
  for (double s : sizes)
    if (s >= kLargeBytes) large.push_back(s);
  bool eff_capped_noted = false, eff_flat_noted = false, lat_floor_noted = false;
  for (int it = 0;; ++it) {
    sim = cal.simulate(c, sizes);
    // Converged when the sizes each parameter is fitted from match.
    double eff_err = 0, lat_err = 0;
    for (double s : large) {
      const auto b = std::llround(s);
      eff_err = std::max(eff_err, std::abs(sim.at(b) / measured.at(b) - 1.0));
    }
    for (double s : small) {
      const auto b = std::llround(s);
      lat_err = std::max(lat_err, std::abs(sim.at(b) / measured.at(b) - 1.0));
    }
    if ((!fit_eff || eff_err < 2e-3) && (!fit_lat || lat_err < 5e-3)) break;
    if (it >= o.iterations) break;
    ++iterations;
    Candidate next = c;
    if (fit_eff && eff_err >= 2e-3) {
      // e <- e x measured busbw / simulated busbw, for the sizes whose time the efficiency
      // actually sets: a probe at 0.95 e gives each size's sensitivity s = dlog t / dlog e
      // (-1 when bandwidth-bound, ~0 where the model's other limits hold the time), and the
      // least-squares step in log e weighs sizes by it (all s = -1: the plain ratio update).
      const double f = 0.95;
      const auto probe = cal.simulate({c.efficiency * f, c.latency_s}, large);
      double num = 0, den = 0;
      for (double s : large) {
        const auto b = std::llround(s);
        const double sens = std::log(probe.at(b) / sim.at(b)) / std::log(f);
        num += sens * std::log(measured.at(b) / sim.at(b));
        den += sens * sens;
      }
      if (den > 1e-4 * static_cast<double>(large.size())) {
        const double wanted = c.efficiency * std::exp(num / den);
        next.efficiency = std::clamp(wanted, 1e-3, 1.0);
        if (wanted > 1.0 && !eff_capped_noted) {
          eff_capped_noted = true;
          notes.push_back(fmt::format("the log is faster than {} at efficiency 1: another link "
                                      "group or the model caps the bandwidth",
                                      group.label));
        }
      } else if (!eff_flat_noted) {
        eff_flat_noted = true;
        notes.push_back(fmt::format("sizes >= 64 MiB do not depend on {}.efficiency here: "
                                    "another link group is the bottleneck",
                                    group.label));
      }
    }
    if (fit_lat && lat_err >= 5e-3) {
      // Time is linear in the per-link latency: a probe at a second latency gives each small
      // size's slope, then one least-squares step (relative errors) lands on it.
      const double step = std::max(c.latency_s, 500e-9);
      const auto probe = cal.simulate({c.efficiency, c.latency_s + step}, small);
      double num = 0, den = 0;
      for (double s : small) {
        const auto b = std::llround(s);
        const double slope = (probe.at(b) - sim.at(b)) / step;     // us per s
        const double w = 1.0 / (measured.at(b) * measured.at(b));  // relative errors
        num += w * slope * (measured.at(b) - sim.at(b));
        den += w * slope * slope;
      }
      if (den > 0) {
        next.latency_s = c.latency_s + num / den;
        if (next.latency_s < 0) {
          next.latency_s = 0;
          if (!lat_floor_noted) {
            lat_floor_noted = true;
            notes.push_back(fmt::format("small messages are faster than the model allows even "
                                        "at {} 0 (software overheads set the floor)",
                                        fmt::join(group.latency_key, ".")));
          }
        }
      }
    }
    if (next.efficiency == c.efficiency && next.latency_s == c.latency_s) break;
    c = next;
  }

  // The fit table.
  struct Fit {
    double bytes, measured_us, simulated_us, measured_busbw, simulated_busbw, error;
  };
  std::vector<Fit> fits;
  double worst_large = 0;
  for (const auto* r : rows) {
    const auto b = std::llround(r->bytes);
    const double ts = sim.at(b);
    Fit f{r->bytes, r->time_us, ts, r->busbw_GBps,
          r->time_us > 0 ? r->busbw_GBps * r->time_us / ts : 0.0, ts / r->time_us - 1.0};
    if (r->bytes >= kCheckBytes) worst_large = std::max(worst_large, std::abs(f.error));
    fits.push_back(f);
  }
  const bool within = worst_large <= 0.05;
  if (!within)
    notes.push_back(fmt::format("sizes >= 1 MiB are off by up to {:.1f} %: the model's shape "
                                "differs from this run (see the table)",
                                worst_large * 100));

  if (!o.output.empty()) {
    std::string out = fmt::format(
        "# Calibrated by `gradsync calibrate {} --nccl-tests {}` ({} ranks on {} server{}, {} "
        "run{} averaged, --algo {}):\n#   {}.efficiency {:.4f} (was {:.4f}), {} {} (was {}); "
        "sizes >= 1 MiB within {:.1f} %.\n",
        o.topology, o.log, ranks, nodes, nodes == 1 ? "" : "s", log.runs, log.runs == 1 ? "" : "s",
        o.algo, group.label, c.efficiency, initial.efficiency,
        fmt::join(group.latency_key, "."), format_time(Seconds(c.latency_s)),
        format_time(Seconds(initial.latency_s)), worst_large * 100);
    out += cal.text_for(c, true);
    // The written file must load (and it is what bench will read).
    (void)load_topology_text(out, o.output);
    std::ofstream f(o.output);
    if (!f) throw ConfigError(mark("-o"), fmt::format("cannot write '{}'", o.output));
    f << out;
  }

  if (o.json) {
    nlohmann::ordered_json j;
    j["topology"] = o.topology;
    j["log"] = o.log;
    j["ranks"] = ranks;
    j["nodes"] = nodes;
    j["runs"] = log.runs;
    j["algorithm"] = o.algo;
    j["group"] = group.label;
    j["parameters"] = {
        {"efficiency", {{"key", fmt::format("{}", fmt::join(group.efficiency_key, "."))},
                        {"initial", initial.efficiency}, {"fitted", c.efficiency},
                        {"fitted_from", fit_eff ? "sizes >= 64 MiB" : "not fitted (no such sizes)"}}},
        {"latency", {{"key", fmt::format("{}", fmt::join(group.latency_key, "."))},
                     {"initial_s", initial.latency_s}, {"fitted_s", c.latency_s},
                     {"fitted_from", fit_lat ? "sizes <= 64 KiB" : "not fitted (no such sizes)"}}}};
    j["iterations"] = iterations;
    j["simulations"] = cal.runs();
    nlohmann::ordered_json arr = nlohmann::ordered_json::array();
    for (const auto& f : fits)
      arr.push_back({{"bytes", f.bytes}, {"measured_time_us", f.measured_us},
                     {"simulated_time_us", f.simulated_us},
                     {"measured_busbw_GBps", f.measured_busbw},
                     {"simulated_busbw_GBps", f.simulated_busbw}, {"error", f.error}});
    j["rows"] = arr;
    j["max_abs_error_ge_1MiB"] = worst_large;
    j["within_5pct_ge_1MiB"] = within;
    j["notes"] = notes;
    if (!o.output.empty()) j["output"] = o.output;
    std::cout << j.dump(2) << '\n';
    return;
  }
  std::cout << fmt::format("# gradsync calibrate: {} against {} ({} ranks on {} server{}, {} "
                           "run{} averaged), algorithm {}\n",
                           o.topology, o.log, ranks, nodes, nodes == 1 ? "" : "s", log.runs,
                           log.runs == 1 ? "" : "s", o.algo);
  std::cout << fmt::format("# {}.efficiency: {:.4f} (was {:.4f}){}\n", group.label, c.efficiency,
                           initial.efficiency, fit_eff ? "" : "  [not fitted: no size >= 64 MiB]");
  std::cout << fmt::format("# {}: {} (was {}){}\n", fmt::join(group.latency_key, "."),
                           format_time(Seconds(c.latency_s)), format_time(Seconds(initial.latency_s)),
                           fit_lat ? "" : "  [not fitted: no size <= 64 KiB]");
  std::cout << fmt::format("# {} update{}, {} simulations\n#\n", iterations,
                           iterations == 1 ? "" : "s", cal.runs());
  std::cout << fmt::format("#{:>11} {:>12} {:>12} {:>10} {:>10} {:>8}\n", "size", "measured",
                           "simulated", "meas busbw", "sim busbw", "error");
  std::cout << fmt::format("#{:>11} {:>12} {:>12} {:>10} {:>10} {:>8}\n", "(B)", "(us)", "(us)",
                           "(GB/s)", "(GB/s)", "");
  for (const auto& f : fits)
    std::cout << fmt::format("{:>12.0f} {:>12.2f} {:>12.2f} {:>10.2f} {:>10.2f} {:>+7.1f}%\n",
                             f.bytes, f.measured_us, f.simulated_us, f.measured_busbw,
                             f.simulated_busbw, f.error * 100);
  std::cout << fmt::format("# sizes >= 1 MiB: max |error| {:.2f} %{}\n", worst_large * 100,
                           within ? " (within 5 %)" : " (NOT within 5 %)");
  for (const auto& n : notes) std::cout << "# note: " << n << '\n';
  if (!o.output.empty()) std::cout << "# wrote " << o.output << '\n';
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
  cmd->add_option("--algo", opts->algo, "algorithm simulated (default ring): ring | tree | "
                                        "hierarchical | auto")
      ->check(CLI::IsMember({"ring", "tree", "hierarchical", "auto"}));
  cmd->add_option("--iterations", opts->iterations, "most parameter updates (default 4)")
      ->check(CLI::Range(0, 20));
  cmd->add_flag("--json", opts->json, "print the fit as one JSON object");
  cmd->add_option("--cfg", opts->cfg, "SimGrid option passed to each simulation");
  cmd->callback([opts] { run_calibrate(*opts); });
}

}  // namespace gradsync::cli
