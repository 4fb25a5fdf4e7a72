// `gradsync bench TOPOLOGY --op OP --algo ALGO [--min 8B --max 1GiB --factor 2] [--gpus N]`:
// a virtual nccl-tests. This file parses the options, rejects bad input as ConfigError (exit 2)
// and prints: the bench runner (bench_runner.hpp) places the ranks, picks the algorithms (auto:
// NCCL's tuner, or the fastest simulated) and simulates each size; the writers
// (bench_report.hpp) make nccl-tests' table, the `--json` rows and, with `--compare LOG` (the
// sizes and rank count of a real nccl-tests log), measured beside simulated.
#include <unistd.h>

#include <cmath>
#include <iostream>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "commands.hpp"
#include "gradsync/bench_report.hpp"
#include "gradsync/bench_runner.hpp"
#include "gradsync/calibrate.hpp"
#include "gradsync/collective.hpp"
#include "gradsync/config.hpp"
#include "gradsync/config_error.hpp"
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

// --ps-hosts: K CPU hosts of their own added to the topology for the servers; their devices.
std::vector<DeviceId> add_ps_hosts(const BenchOptions& o, Topology& topology) {
  if (o.ps_hosts == 0) return {};
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
  return add_server_hosts(topology, o.ps_hosts, nic, cli_mark("--ps-hosts"));
}

void run_bench_command(const BenchOptions& o) {
  TopologyFile topo_file = load_topology_file(o.file, o.sets);
  BenchRequest request;
  request.ps_hosts = add_ps_hosts(o, topo_file.topology);
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
    for (const NcclTestsRow& r : log->rows) request.sizes.push_back(r.bytes);
  } else {
    request.sizes = bench_sizes(min, max, o.factor);
  }
  request.op = *op;
  if (o.algo != "auto") request.algorithm = algorithm_from_string(o.algo);
  else request.algorithm.reset();
  request.gpus = o.gpus != 0 || !log || log->ranks <= 0 ? o.gpus
                                                        : static_cast<std::uint32_t>(log->ranks);
  request.placement.kind = o.placement == "strided" ? PlacementKind::Strided
                           : o.placement == "random" ? PlacementKind::Random
                                                     : PlacementKind::InOrder;
  request.placement.seed = o.seed;
  request.fidelity = o.fidelity == "step" ? Fidelity::Step
                     : o.fidelity == "flow" ? Fidelity::Flow
                                            : Fidelity::Auto;
  request.channels = o.channels;
  request.pipeline = o.pipeline;
  request.root = o.root;
  request.ps_servers = o.ps_servers;
  request.ps_placement =
      o.ps_placement == "dedicated" ? ServerPlacement::Dedicated : ServerPlacement::Colocated;
  request.best = o.best;
  for (const auto& c : o.cfg) request.simgrid_args.push_back("--cfg=" + c);
  // On a terminal: which size runs, and how far a long collective has got.
  const bool progress = isatty(STDERR_FILENO) != 0 && !o.json;
  std::string progress_row;  // "[i/N] SIZE"
  if (progress) {
    request.on_size = [&](std::size_t i, std::size_t count, Bytes size) {
      progress_row = fmt::format("[{}/{}] {}", i + 1, count, format_size(size));
      std::cerr << "\r" << progress_row << " ..." << std::string(40, ' ') << std::flush;
    };
    request.progress = [&](const RunProgress& r) {
      std::cerr << "\r" << (r.routing ? "" : progress_row + " ... ") << progress_text(r) << "   "
                << std::flush;
    };
  }
  const BenchResult result = run_bench(topo, request);
  if (progress) std::cerr << "\r" << std::string(80, ' ') << "\r";

  if (log && o.json) std::cout << bench_comparison_json(request, result, *log).dump(2) << '\n';
  else if (log) std::cout << bench_comparison_text(request, result, *log);
  else if (o.json) std::cout << bench_rows_json(request, result).dump(2) << '\n';
  else std::cout << bench_table_text(request, result);
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
    run_bench_command(*opts);
  });
}

}  // namespace gradsync::cli
