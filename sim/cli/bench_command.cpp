// `gradsync bench TOPOLOGY --op OP --algo ALGO [--min 8B --max 1GiB --factor 2] [--gpus N]`:
// a virtual nccl-tests. For each message size it plans the collective, replays it on the
// topology's SimGrid platform and prints nccl-tests' table (size, count, type, redop, root,
// time, algbw, busbw), so the rows can sit beside a real all_reduce_perf run. `--algo auto`
// simulates every algorithm that applies and keeps the fastest, as a tuner would, and says
// which it picked in the last column. `--algo nvls` (NVLink SHARP) adds the ranks' NVSwitch as
// the plan's in-fabric reducer (nvls_switch()), `--algo nvlstree` each server's NVSwitch
// (nvls_tree_devices()); auto includes the one that applies. `--compare LOG` takes the sizes
// and the rank count from a real nccl-tests log and prints measured beside simulated, with the
// busbw error per row and per size band (nccl_tests_compare.hpp).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "gradsync/calibrate.hpp"
#include "gradsync/collective.hpp"
#include "gradsync/config.hpp"
#include "gradsync/config_error.hpp"
#include "gradsync/engine.hpp"
#include "gradsync/nccl_tests_compare.hpp"
#include "gradsync/nccl_tuner.hpp"
#include "gradsync/scenario_config.hpp"
#include "gradsync/server_hosts.hpp"

namespace gradsync::cli {
namespace {

// The most sizes one bench run simulates (nccl-tests -f 2 from 8 B to 16 GiB is 32).
constexpr double kMaxBenchSizes = 10000;

struct BenchOptions {
  std::string file;
  std::string op = "allreduce";
  std::string algo = "ring";
  std::string min = "8B";
  std::string max = "1GiB";
  double factor = 2.0;
  std::uint32_t gpus = 0;
  std::string fidelity = "auto";
  std::string placement = "in-order";
  std::uint64_t seed = 1;
  std::uint32_t channels = 0;  // 0 = NICs per node across nodes (like NCCL), else 1
  std::uint32_t pipeline = 0;
  std::uint32_t ps_servers = 1;
  std::string ps_placement = "colocated";
  bool ps_servers_given = false;
  bool ps_placement_given = false;
  std::uint32_t ps_hosts = 0;  // servers on hosts of their own (server_hosts.hpp); 0 = on GPUs
  std::string ps_host_nic;     // their NIC rate; "" = the GPU servers' NIC rate
  std::uint32_t root = 0;
  bool json = false;
  std::vector<std::string> cfg;
  std::vector<std::string> sets;  // topology overrides, as a scenario's topology_overrides
  std::string compare;         // nccl-tests log: its sizes and ranks, measured beside simulated
  bool best = false;           // also the fastest simulated algorithm (auto under NCCL)
  bool sizes_given = false;    // --min, --max or --factor on the command line
};

constexpr double kFloatBytes = 4.0;  // nccl-tests' default type: float

// --algo's choices: every algorithm of the registry (collective.hpp), and auto.
std::vector<std::string> bench_algorithm_choices() {
  std::vector<std::string> choices = algorithm_names();
  choices.emplace_back("auto");
  return choices;
}

SourceMark cli_mark(const std::string& option) { return SourceMark{"gradsync bench " + option, 0, 0}; }

Bytes parse_cli_size(const std::string& option, const std::string& text) {
  try {
    return parse_size(text);
  } catch (const UnitError& e) {
    throw ConfigError(cli_mark(option), e.what());
  }
}

struct Row {
  double bytes = 0;
  double time_us = -1;
  double algbw = 0;
  double busbw = 0;
  std::string algorithm;
  std::string protocol;       // software: nccl only
  std::uint32_t channels = 0;  // NCCL's channels for this size (software: nccl only)
  std::string fidelity;
  std::size_t flows = 0;  // SimGrid communications the replay started
  // --best: the fastest simulated algorithm, whatever NCCL's tuner picks
  std::string best_algorithm;
  double best_time_us = -1;
  double best_busbw = 0;

  // "ring/LL" under NCCL's model, else "ring".
  [[nodiscard]] std::string label() const {
    return protocol.empty() ? algorithm : algorithm + "/" + protocol;
  }
};

// `--compare LOG`: measured (the log's out-of-place columns) beside simulated, per row and
// per size band.
void print_comparison(const BenchOptions& o, const Topology& topo, const NcclTestsLog& log,
                      const std::vector<Row>& simulated, std::uint32_t ranks, std::uint32_t ppn) {
  std::vector<ComparedRow> rows;
  for (std::size_t i = 0; i < log.rows.size(); ++i) {
    const NcclTestsRow& m = log.rows[i];
    const Row& s = simulated[i];
    rows.push_back(ComparedRow{m.bytes, m.time_us, s.time_us, m.busbw_GBps, s.busbw,
                               s.label(), m.line});
  }
  const std::vector<BandSummary> bands = summarize_bands(rows);
  if (o.json) {
    nlohmann::ordered_json out;
    out["log"] = {{"file", log.file}, {"ranks", log.ranks}, {"nodes", log.nodes()},
                  {"device", log.device}, {"runs", log.runs}};
    out["topology"] = topo.name();
    out["ranks"] = ranks;
    out["op"] = o.op;
    out["algo"] = o.algo;
    out["rows"] = nlohmann::ordered_json::array();
    for (const ComparedRow& r : rows)
      out["rows"].push_back({{"bytes", r.bytes},
                             {"line", r.line},
                             {"measured_time_us", r.measured_time_us},
                             {"simulated_time_us", r.simulated_time_us},
                             {"time_ratio", r.time_ratio()},
                             {"measured_busbw_GBps", r.measured_busbw_GBps},
                             {"simulated_busbw_GBps", r.simulated_busbw_GBps},
                             {"busbw_error", r.busbw_error()},
                             {"algorithm", r.algorithm}});
    out["bands"] = nlohmann::ordered_json::array();
    for (const BandSummary& b : bands)
      out["bands"].push_back({{"band", b.band.name},
                              {"sizes", b.band.label},
                              {"rows", b.rows},
                              {"median_abs_busbw_error", b.median_abs_error},
                              {"worst_abs_busbw_error", b.worst_abs_error},
                              {"worst_bytes", b.worst_bytes},
                              {"min_time_ratio", b.min_time_ratio},
                              {"max_time_ratio", b.max_time_ratio}});
    std::cout << out.dump(2) << '\n';
    return;
  }
  std::cout << fmt::format("# gradsync bench --compare: {} on {} ({} ranks, {} per node), "
                           "algorithm {}\n", o.op, topo.name(), ranks, ppn, o.algo);
  std::cout << fmt::format("# measured: {} ({} ranks on {} hosts{}{}), out-of-place columns; "
                           "GB = 1e9 B\n", log.file, log.ranks, log.nodes(),
                           log.device.empty() ? "" : ", ", log.device);
  if (log.ranks > 0 && static_cast<std::uint32_t>(log.ranks) != ranks)
    std::cout << fmt::format("# note: the log ran {} ranks, the simulation {}\n", log.ranks, ranks);
  std::cout << "# error = simulated busbw / measured busbw - 1 (positive: gradsync is optimistic)\n#\n";
  std::cout << fmt::format("#{:>11} {:>10} {:>10} {:>6} {:>9} {:>9} {:>8}  {}\n", "size",
                           "measured", "simulated", "t x", "meas bw", "sim bw", "error", "algo");
  std::cout << fmt::format("#{:>11} {:>10} {:>10} {:>6} {:>9} {:>9} {:>8}\n", "(B)", "(us)",
                           "(us)", "", "(GB/s)", "(GB/s)", "");
  for (const ComparedRow& r : rows)
    std::cout << fmt::format("{:>12.0f} {:>10.2f} {:>10.2f} {:>6.2f} {:>9.2f} {:>9.2f} {:>+7.1f}%  {}\n",
                             r.bytes, r.measured_time_us, r.simulated_time_us, r.time_ratio(),
                             r.measured_busbw_GBps, r.simulated_busbw_GBps, 100.0 * r.busbw_error(),
                             r.algorithm);
  std::cout << "#\n# per size band: |busbw error| median and worst, simulated/measured time range\n";
  for (const BandSummary& b : bands)
    std::cout << fmt::format("# {:<8} {:<15} {:>3} rows  median {:>5.1f}%  worst {:>+6.1f}% at {:<10}"
                             "  time x {:.2f}..{:.2f}\n",
                             b.band.name, b.band.label, b.rows, 100.0 * b.median_abs_error,
                             100.0 * b.worst_error, format_size(Bytes(b.worst_bytes)),
                             b.min_time_ratio, b.max_time_ratio);
}

void run_bench(const BenchOptions& o) {
  TopologyFile topo_file = load_topology_file(o.file, o.sets);
  std::vector<DeviceId> ps_hosts;  // --ps-hosts: the servers' CPU devices
  if (o.ps_hosts > 0) {
    if (o.algo != "ps")
      throw ConfigError(cli_mark("--ps-hosts"), "--ps-hosts places parameter servers: use --algo ps");
    if (o.ps_placement_given && o.ps_placement == "colocated")
      throw ConfigError(cli_mark("--ps-placement"),
                        "colocated servers run on the GPUs; --ps-hosts puts them on hosts of "
                        "their own (drop one of the two)");
    if (o.ps_servers_given && o.ps_servers != o.ps_hosts)
      throw ConfigError(cli_mark("--ps-servers"),
                        "with --ps-hosts each host runs one server (--ps-servers defaults to it)");
    std::optional<BytesPerSecond> nic;
    if (!o.ps_host_nic.empty()) {
      try {
        nic = parse_rate(o.ps_host_nic);
      } catch (const UnitError& e) {
        throw ConfigError(cli_mark("--ps-host-nic"), e.what());
      }
      check_host_nic_rate(*nic, cli_mark("--ps-host-nic"));
    }
    ps_hosts = add_server_hosts(topo_file.topology, o.ps_hosts, nic, cli_mark("--ps-hosts"));
  }
  const Topology& topo = topo_file.topology;
  const auto op = collective_op_from_string(o.op);
  if (!op) throw ConfigError(cli_mark("--op"), "unknown operation '" + o.op + "'");
  const Bytes min = parse_cli_size("--min", o.min);
  const Bytes max = parse_cli_size("--max", o.max);
  if (min.bytes() < 1.0 || max < min)
    throw ConfigError(cli_mark("--min/--max"), "need 1B <= --min <= --max");
  if (max.bytes() > 1e13)
    throw ConfigError(cli_mark("--max"), "sizes above 10 TB are not a message size");
  if (!(o.factor > 1.0)) throw ConfigError(cli_mark("--factor"), "--factor must be > 1");
  // Every size is a simulation: a factor that makes more rows than any nccl-tests sweep is a
  // typo (1.0000001 from 8 B to 16 GiB would be 2e8 rows), refused before anything runs.
  const double size_count = std::floor(std::log(max.bytes() / min.bytes()) / std::log(o.factor)) + 1;
  if (size_count > kMaxBenchSizes)
    throw ConfigError(cli_mark("--factor"),
                      fmt::format("--factor {} makes {:.3g} sizes from {} to {}; at most {} "
                                  "(raise --factor or narrow --min/--max)",
                                  o.factor, size_count, o.min, o.max, kMaxBenchSizes));

  std::optional<NcclTestsLog> log;
  if (!o.compare.empty()) {
    if (o.sizes_given)
      throw ConfigError(cli_mark("--compare"),
                        "--compare takes its sizes from the log: drop --min/--max/--factor");
    log = parse_nccl_tests_log(read_input_file(o.compare, "bench", "--compare"), o.compare);
    if (log->rows.empty())
      throw ConfigError(SourceMark{o.compare, 0, 0}, "no nccl-tests data rows in this log");
    if (o.gpus == 0 && log->ranks > 0 && static_cast<std::size_t>(log->ranks) > topo.gpu_count())
      throw ConfigError(cli_mark("--compare"),
                        fmt::format("the log ran {} ranks but {} has {} GPUs: raise the "
                                    "topology's nodes or pass --gpus", log->ranks, o.file,
                                    topo.gpu_count()));
  }
  const std::uint32_t n = o.gpus != 0                   ? o.gpus
                          : log && log->ranks > 0       ? static_cast<std::uint32_t>(log->ranks)
                                                        : static_cast<std::uint32_t>(topo.gpu_count());
  PlacementOptions placement;
  placement.kind = o.placement == "strided" ? PlacementKind::Strided
                   : o.placement == "random" ? PlacementKind::Random
                                             : PlacementKind::InOrder;
  placement.seed = o.seed;
  const std::vector<DeviceId> ranks = place_ranks(topo, n, placement);
  const std::uint32_t ppn = ranks_per_node(topo, ranks);

  std::vector<Algorithm> candidates;
  if (o.algo == "auto") {
    // Under NCCL's software model auto is NCCL's choice set (Ring, Tree, NVLS, NVLSTree):
    // NCCL has no 2-D hierarchical AllReduce, which stays an explicit what-if there.
    candidates = auto_candidates(*op, n, ppn, topo.software() == SoftwareModel::Nccl);
  } else {
    candidates.push_back(*algorithm_from_string(o.algo));
  }
  // NVLS: the NVSwitch of the ranks' NVLink domain plays the plan's extra rank; NVLSTree: one
  // NVSwitch per server. An explicit --algo nvls / nvlstree reports why it cannot run; auto
  // tries them only where they can (AllReduce, NVSwitches of NVLink4 or later, NCCL's software
  // model, which carries NVLS's bandwidth): NVLS in one server, NVLSTree across servers.
  std::map<Algorithm, std::vector<DeviceId>> switch_devices;
  std::vector<std::uint32_t> sharp_of_local;  // NVLS across servers: SHARP switch per local GPU
  const auto with_switches = [&](Algorithm a) {
    NvlsSharpDevices d = in_switch_devices(topo, ranks, ppn, a);
    if (a == Algorithm::Nvls) sharp_of_local = d.sharp_of_local;
    return d.devices;
  };
  for (Algorithm a : {Algorithm::Nvls, Algorithm::NvlsTree}) {
    if (o.algo == to_string(a)) {
      if (*op != CollectiveOp::AllReduce)
        throw ConfigError(cli_mark("--algo"), o.op + " has no " + o.algo + " algorithm in gradsync");
      switch_devices[a] = with_switches(a);
    } else if (o.algo == "auto" && *op == CollectiveOp::AllReduce &&
               topo.software() == SoftwareModel::Nccl && n > 1 &&
               (a == Algorithm::Nvls ? n == ppn || ppn > 1 : n != ppn)) {
      try {
        switch_devices[a] = with_switches(a);
        candidates.push_back(a);
      } catch (const ConfigError&) {
      }
    }
  }
  // Dedicated parameter servers on different machines, as a run places them, or on hosts of
  // their own after every GPU (--ps-hosts).
  std::vector<DeviceId> ps_ranks =
      o.ps_placement == "dedicated" && ps_hosts.empty()
          ? spread_dedicated_servers(topo, ranks, o.ps_servers) : ranks;
  ps_ranks.insert(ps_ranks.end(), ps_hosts.begin(), ps_hosts.end());
  auto devices_for = [&](Algorithm a) -> const std::vector<DeviceId>& {
    if (a == Algorithm::ParameterServer) return ps_ranks;
    const auto it = switch_devices.find(a);
    return it != switch_devices.end() ? it->second : ranks;
  };

  CollectiveRequest base;
  base.op = *op;
  base.ranks = n;
  base.ranks_per_node = ppn;
  base.node_sizes = node_blocks(topo, ranks);
  base.sharp_of_local = sharp_of_local;
  base.channels = o.channels > 0 ? o.channels : default_ring_channels(topo, ranks, ppn);
  base.pipeline = o.pipeline;
  base.root = o.root;
  base.ps.servers = ps_hosts.empty() ? o.ps_servers : o.ps_hosts;
  base.ps.placement = o.ps_placement == "dedicated" || !ps_hosts.empty()
                          ? ServerPlacement::Dedicated : ServerPlacement::Colocated;
  if (topo.software() == SoftwareModel::Nccl && switch_devices.count(Algorithm::NvlsTree) != 0)
    set_nvls_loops(base, nccl_topology_view(topo, ranks, ppn, Algorithm::NvlsTree));
  if (base.root >= n) throw ConfigError(cli_mark("--root"), "root must be below the rank count");

  // Plans that a request cannot make are bad input (e.g. tree ReduceScatter).
  const Fidelity fidelity = o.fidelity == "step" ? Fidelity::Step
                            : o.fidelity == "flow" ? Fidelity::Flow
                                                   : Fidelity::Auto;
  auto make_plan = [&](Algorithm a, Bytes bytes, Fidelity plan_fidelity) {
    CollectiveRequest r = base;
    r.algorithm = a;
    r.bytes = bytes;
    if (a == Algorithm::ParameterServer) r.ranks = static_cast<std::uint32_t>(ps_ranks.size());
    try {
      return plan_collective(r, plan_fidelity);
    } catch (const std::invalid_argument& e) {
      throw ConfigError(cli_mark("--algo"), e.what());
    }
  };

  std::vector<double> sizes;
  if (log)
    for (const NcclTestsRow& r : log->rows) sizes.push_back(r.bytes);
  else
    for (double s = min.bytes(); s <= max.bytes() * (1 + 1e-12); s *= o.factor)
      sizes.push_back(std::round(s));
  const std::uint32_t busbw_ranks =
      candidates[0] == Algorithm::ParameterServer
          ? ps_worker_count(static_cast<std::uint32_t>(ps_ranks.size()), base.ps) : n;
  // Under NCCL's software model `auto` runs what NCCL's tuner picks for each size
  // (nccl_tuner.hpp), as a real job does; --best also simulates every candidate and reports
  // the fastest. Otherwise auto keeps the fastest simulated candidate.
  const bool nccl_auto = o.algo == "auto" && topo.software() == SoftwareModel::Nccl;
  std::optional<NcclTopologyView> view;
  if (nccl_auto) {
    std::optional<Algorithm> in_switch;
    for (Algorithm a : {Algorithm::Nvls, Algorithm::NvlsTree})
      if (switch_devices.count(a) != 0) in_switch = a;
    view = nccl_topology_view(topo, ranks, ppn, in_switch);
  }
  std::vector<std::string> simgrid_args;
  for (const auto& c : o.cfg) simgrid_args.push_back("--cfg=" + c);
  Simulation sim(topo, simgrid_args);
  const bool progress = isatty(STDERR_FILENO) != 0 && !o.json;
  std::string progress_row;  // "[i/N] SIZE"
  if (progress)
    sim.set_progress([&](const RunProgress& r) {
      std::cerr << "\r" << (r.routing ? "" : progress_row + " ... ") << progress_text(r) << "   "
                << std::flush;
    });
  {
    std::vector<std::pair<DeviceId, DeviceId>> pairs;
    // Under NCCL's auto without --best only NCCL's choices run: route only their connections
    // (a 16,384-GPU cluster has ~100k per algorithm).
    std::vector<Algorithm> routed = candidates;
    if (nccl_auto && !o.best) {
      routed.clear();
      for (double bytes : sizes) {
        const Algorithm a = nccl_tune(*view, *op, Bytes(bytes)).algorithm;
        if (std::find(routed.begin(), routed.end(), a) == routed.end()) routed.push_back(a);
      }
    }
    for (Algorithm a : routed) {
      // The connections a plan uses are those of its flows-only form.
      const auto p = device_pairs(make_plan(a, min, Fidelity::Flow), devices_for(a));
      pairs.insert(pairs.end(), p.begin(), p.end());
    }
    sim.build(pairs);
  }

  auto simulate = [&](Algorithm a, double bytes, Row& into) {
    const PlanTiming t =
        sim.run_plan(make_plan(a, Bytes(bytes), fidelity), devices_for(a), fidelity);
    into.time_us = t.time.seconds() * 1e6;
    into.algorithm = std::string(to_string(a));
    into.protocol = t.protocol ? std::string(to_string(*t.protocol)) : std::string();
    into.channels = t.nccl_channels;
    into.fidelity = std::string(to_string(t.fidelity));
    into.flows = t.flows;
  };
  std::vector<Row> rows;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    progress_row = fmt::format("[{}/{}] {}", i + 1, sizes.size(), format_size(Bytes(sizes[i])));
    if (progress) std::cerr << "\r" << progress_row << " ..." << std::string(40, ' ') << std::flush;
    Row row{};
    if (nccl_auto) simulate(nccl_tune(*view, *op, Bytes(sizes[i])).algorithm, sizes[i], row);
    if (!nccl_auto || o.best) {
      Row fastest{};
      for (Algorithm a : candidates) {
        Row r{};
        simulate(a, sizes[i], r);
        if (fastest.time_us < 0 || r.time_us < fastest.time_us) fastest = r;
      }
      if (!nccl_auto) row = fastest;
      row.best_algorithm = fastest.label();
      row.best_time_us = fastest.time_us;
    }
    row.bytes = sizes[i];
    const double factor = busbw_factor(*op, busbw_ranks);
    row.algbw = row.time_us > 0 ? sizes[i] / (row.time_us * 1e-6) / 1e9 : 0.0;
    row.busbw = row.algbw * factor;
    row.best_busbw = row.best_time_us > 0 ? sizes[i] / (row.best_time_us * 1e-6) / 1e9 * factor : 0.0;
    rows.push_back(row);
  }
  if (progress) std::cerr << "\r" << std::string(80, ' ') << "\r";

  if (log) {
    print_comparison(o, topo, *log, rows, n, ppn);
    return;
  }
  const bool rooted = *op == CollectiveOp::Broadcast || *op == CollectiveOp::Reduce;
  const std::string redop = (*op == CollectiveOp::AllGather || *op == CollectiveOp::Broadcast)
                                ? "none" : "sum";
  if (o.json) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const Row& r : rows)
      out.push_back({{"bytes", r.bytes},
                     {"count", static_cast<long long>(r.bytes / kFloatBytes)},
                     {"type", "float"},
                     {"redop", redop},
                     {"root", rooted ? static_cast<int>(o.root) : -1},
                     {"time_us", r.time_us},
                     {"algbw_GBps", r.algbw},
                     {"busbw_GBps", r.busbw},
                     {"op", o.op},
                     {"algorithm", r.algorithm},
                     {"protocol", r.protocol.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(r.protocol)},
                     {"channels", r.channels},
                     {"fidelity", r.fidelity},
                     {"flows", r.flows},
                     {"ranks", n}});
    if (o.best)
      for (std::size_t i = 0; i < rows.size(); ++i) {
        out[i]["best_algorithm"] = rows[i].best_algorithm;
        out[i]["best_time_us"] = rows[i].best_time_us;
        out[i]["best_busbw_GBps"] = rows[i].best_busbw;
      }
    std::cout << out.dump(2) << '\n';
    return;
  }
  std::cout << fmt::format("# gradsync bench: {} on {} ({} ranks, {} per node), algorithm {}\n",
                           o.op, topo.name(), n, ppn, o.algo);
  std::cout << fmt::format("# software model: {}; fidelity: {}; channels: {}; out-of-place; "
                           "GB = 1e9 B\n#\n",
                           to_string(topo.software()), o.fidelity, base.channels);
  const bool show_channels = topo.software() == SoftwareModel::Nccl;
  std::cout << fmt::format("#{:>11} {:>12} {:>8} {:>6} {:>6} {:>10} {:>8} {:>8}  {:<16}{}{}\n",
                           "size", "count", "type", "redop", "root", "time", "algbw", "busbw",
                           "algo", show_channels ? " ch" : "",
                           o.best ? "   best: algo        time    busbw" : "");
  std::cout << fmt::format("#{:>11} {:>12} {:>8} {:>6} {:>6} {:>10} {:>8} {:>8}\n", "(B)",
                           "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)");
  for (const Row& r : rows)
    std::cout << fmt::format("{:>12.0f} {:>12} {:>8} {:>6} {:>6} {:>10.2f} {:>8.2f} {:>8.2f}  {:<16}{}{}\n",
                             r.bytes, static_cast<long long>(r.bytes / kFloatBytes), "float",
                             redop, rooted ? static_cast<int>(o.root) : -1, r.time_us, r.algbw,
                             r.busbw, r.label(),
                             show_channels ? fmt::format(" {:>2}", r.channels) : "",
                             o.best ? fmt::format("   {:<14} {:>8.2f} {:>8.2f}", r.best_algorithm,
                                                  r.best_time_us, r.best_busbw)
                                    : "");
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto opts = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand("bench", "simulate a collective over message sizes, "
                                              "printing nccl-tests' table");
  cmd->add_option("topology", opts->file, "topology YAML file")->required();
  cmd->add_option("--set", opts->sets,
                  "override a topology key before it is read, as a scenario's topology_overrides "
                  "(--set nodes=8, --set node.nic_bandwidth=400Gbps, --set network.fabric=roce)");
  cmd->add_option("--op", opts->op, "allreduce | reducescatter | allgather | broadcast | reduce")
      ->check(CLI::IsMember({"allreduce", "reducescatter", "allgather", "broadcast", "reduce"}));
  CLI::Option* algo = cmd->add_option("--algo", opts->algo,
                  fmt::format("{} (nvls: NVLink SHARP in one NVSwitch domain, or in each "
                              "server with InfiniBand SHARP between them (network.sharp); "
                              "nvlstree: NVLS in each server, trees across servers; auto "
                              "includes them where available; default ring, auto with --compare)",
                              fmt::join(bench_algorithm_choices(), " | ")))
      ->check(CLI::IsMember(bench_algorithm_choices()));
  CLI::Option* min = cmd->add_option("--min,-b", opts->min, "smallest message size (default 8B)");
  CLI::Option* max = cmd->add_option("--max,-e", opts->max, "largest message size (default 1GiB)");
  CLI::Option* factor =
      cmd->add_option("--factor,-f", opts->factor, "size multiplier between rows (default 2)");
  cmd->add_option("--compare", opts->compare,
                  "a real nccl-tests log (all_reduce_perf output): simulate its sizes with its "
                  "rank count and print measured beside simulated, with the busbw error per row "
                  "and per size band");
  cmd->add_option("--gpus,-g", opts->gpus, "ranks (default: every GPU of the topology)")
      ->check(CLI::Range(1u, 262144u));
  cmd->add_option("--fidelity", opts->fidelity, "auto | step | flow")
      ->check(CLI::IsMember({"auto", "step", "flow"}));
  cmd->add_option("--placement", opts->placement, "in-order | strided | random")
      ->check(CLI::IsMember({"in-order", "strided", "random"}));
  cmd->add_option("--seed", opts->seed, "seed for --placement random");
  cmd->add_option("--channels", opts->channels,
                  "ring channels (default: NICs per server across servers, else 1)")
      ->check(CLI::Range(1u, 64u));
  cmd->add_option("--pipeline", opts->pipeline, "chunks per step/tree (default automatic)")
      ->check(CLI::Range(0u, 1024u));
  CLI::Option* ps_servers =
      cmd->add_option("--ps-servers", opts->ps_servers, "parameter servers (default 1)")
          ->check(CLI::Range(1u, 256u));
  CLI::Option* ps_placement =
      cmd->add_option("--ps-placement", opts->ps_placement, "colocated | dedicated")
          ->check(CLI::IsMember({"colocated", "dedicated"}));
  cmd->add_option("--ps-hosts", opts->ps_hosts,
                  "parameter servers on K CPU hosts of their own, each with one NIC cabled "
                  "beside the GPU servers' NICs (every GPU trains; --algo ps)")
      ->check(CLI::Range(1u, 256u));
  cmd->add_option("--ps-host-nic", opts->ps_host_nic,
                  "the --ps-hosts NIC rate (default: the GPU servers' NIC rate)");
  cmd->add_option("--root", opts->root, "root rank for broadcast / reduce");
  cmd->add_flag("--json", opts->json, "print the rows as one JSON array");
  cmd->add_flag("--best", opts->best,
                "with --algo auto under software: nccl, also simulate every applicable "
                "algorithm and show the fastest beside NCCL's choice (\"best possible\")");
  cmd->add_option("--cfg", opts->cfg, "SimGrid option, e.g. contexts/factory:thread");
  cmd->callback([opts, min, max, factor, algo, ps_servers, ps_placement] {
    opts->sizes_given = min->count() + max->count() + factor->count() > 0;
    opts->ps_servers_given = ps_servers->count() > 0;
    opts->ps_placement_given = ps_placement->count() > 0;
    // A log is compared with what NCCL would run unless --algo says otherwise.
    if (!opts->compare.empty() && algo->count() == 0) opts->algo = "auto";
    run_bench(*opts);
  });
}

}  // namespace gradsync::cli
