// `gradsync bench TOPOLOGY --op OP --algo ALGO [--min 8B --max 1GiB --factor 2] [--gpus N]`:
// a virtual nccl-tests. This file registers the options and prints; bench_setup.hpp turns them
// into a request (bad input: ConfigError, exit 2); the bench runner (bench_runner.hpp) places
// the ranks, picks the algorithms (auto: NCCL's tuner, or the fastest simulated) and simulates
// each size; the writers
// (bench_report.hpp) make nccl-tests' table, the `--json` rows and, with `--compare LOG` (the
// sizes and rank count of a real nccl-tests log), measured beside simulated.
#include <unistd.h>

#include <iostream>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "commands.hpp"
#include "gradsync/io/command_files.hpp"
#include "gradsync/report/bench_report.hpp"
#include "gradsync/scenario/bench_runner.hpp"
#include "gradsync/scenario/bench_setup.hpp"
#include "gradsync/calibrate/calibrate.hpp"
#include "gradsync/collective/collective.hpp"
#include "gradsync/collective/rank_placement.hpp"
#include "gradsync/config/topology_loader.hpp"
#include "gradsync/config/scenario_loader.hpp"

namespace gradsync::cli {
namespace {

struct BenchOptions {
  std::string file;
  std::vector<std::string> sets;  // topology overrides, as a scenario's topology_overrides
  bool json = false;
  BenchArguments args;
};

// --algo's choices: every algorithm of the registry (collective.hpp), and auto.
std::vector<std::string> bench_algorithm_choices() {
  std::vector<std::string> choices = algorithm_names();
  choices.emplace_back("auto");
  return choices;
}

void run_bench_command(const BenchOptions& o) {
  TopologyFile topo_file = load_topology_file(o.file, o.sets);
  BenchRequest request = bench_request(o.args, topo_file.topology);
  const Topology& topo = topo_file.topology;
  std::optional<NcclTestsLog> log;
  if (!o.args.compare.empty()) {
    log = parse_nccl_tests_log(read_input_file(o.args.compare, "bench", "--compare"),
                               o.args.compare);
    bench_log_sizes(request, o.args, *log, topo, o.file);
  }
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
  cmd->add_option("--op", opts->args.op, fmt::format("{}", fmt::join(collective_op_names(), " | ")))
      ->check(CLI::IsMember(collective_op_names()));
  CLI::Option* algo = cmd->add_option("--algo", opts->args.algo,
                  fmt::format("{} (nvls: NVLink SHARP in one NVSwitch domain, or in each "
                              "server with InfiniBand SHARP between them (network.sharp); "
                              "nvlstree: NVLS in each server, trees across servers; "
                              "collnetchain / collnetdirect: NCCL's CollNet, the InfiniBand "
                              "SHARP switches reduce between servers (network.sharp); auto "
                              "includes them where available; default ring, auto with --compare)",
                              fmt::join(bench_algorithm_choices(), " | ")))
      ->check(CLI::IsMember(bench_algorithm_choices()));
  CLI::Option* min =
      cmd->add_option("--min,-b", opts->args.min, "smallest message size: 8B, 25MiB, 1GB, or nccl-tests' 8, 512K, 64M, 8G (K/M/G are 1024-based) (default 8B)");
  CLI::Option* max =
      cmd->add_option("--max,-e", opts->args.max, "largest message size, spelled as --min (default 1GiB)");
  CLI::Option* factor = cmd->add_option("--factor,-f", opts->args.factor,
                                         "size multiplier between rows (default 2)");
  cmd->add_option("--compare", opts->args.compare,
                  "a real nccl-tests log (all_reduce_perf output): simulate its sizes with its "
                  "rank count and print measured beside simulated, with the busbw error per row "
                  "and per size band");
  cmd->add_option("--gpus,-g", opts->args.gpus, "ranks (default: every GPU of the topology)")
      ->check(CLI::Range(1u, 262144u));
  cmd->add_option("--gpus-per-thread", opts->args.gpus_per_thread,
                  "nccl-tests' -g: host launches per iteration (default 1, or --compare's nGpus)")
      ->check(CLI::Range(1u, 1024u));
  cmd->add_option("--fidelity", opts->args.fidelity,
                  fmt::format("{}", fmt::join(fidelity_names(), " | ")))
      ->check(CLI::IsMember(fidelity_names()));
  cmd->add_option("--placement", opts->args.placement,
                  fmt::format("{}", fmt::join(placement_kind_names(), " | ")))
      ->check(CLI::IsMember(placement_kind_names()));
  cmd->add_option("--seed", opts->args.seed, "seed for --placement random");
  cmd->add_option("--channels", opts->args.channels,
                  "rings the plan runs side by side, each on its own NIC (default: NICs per "
                  "server across servers, else 1); not NCCL_MIN/MAX_NCHANNELS: under NCCL's "
                  "model the ch column stays the channels NCCL runs")
      ->check(CLI::Range(1u, 64u));
  cmd->add_option("--pipeline", opts->args.pipeline, "chunks per step/tree (default automatic)")
      ->check(CLI::Range(0u, 1024u));
  CLI::Option* ps_servers =
      cmd->add_option("--ps-servers", opts->args.ps_servers, "parameter servers (default 1)")
          ->check(CLI::Range(1u, 256u));
  CLI::Option* ps_placement =
      cmd->add_option("--ps-placement", opts->args.ps_placement,
                      fmt::format("{}", fmt::join(server_placement_names(), " | ")))
          ->check(CLI::IsMember(server_placement_names()));
  cmd->add_option("--ps-hosts", opts->args.ps_hosts,
                  "parameter servers on K CPU hosts of their own, each with one NIC cabled "
                  "beside the GPU servers' NICs (every GPU trains; --algo ps)")
      ->check(CLI::Range(1u, 256u));
  cmd->add_option("--ps-host-nic", opts->args.ps_host_nic,
                  "the --ps-hosts NIC rate (default: the GPU servers' NIC rate)");
  cmd->add_option("--root", opts->args.root, "root rank for broadcast / reduce");
  cmd->add_flag("--json", opts->json, "print the rows as one JSON array");
  cmd->add_flag("--best", opts->args.best,
                "with --algo auto under software: nccl, also simulate every applicable "
                "algorithm and show the fastest beside NCCL's choice (\"best possible\")");
  cmd->add_option("--cfg", opts->args.cfg, "SimGrid option, e.g. contexts/factory:thread");
  cmd->callback([opts, min, max, factor, algo, ps_servers, ps_placement] {
    opts->args.sizes_given = min->count() + max->count() + factor->count() > 0;
    opts->args.ps_servers_given = ps_servers->count() > 0;
    opts->args.ps_placement_given = ps_placement->count() > 0;
    // A log is compared with what NCCL would run unless --algo says otherwise.
    if (!opts->args.compare.empty() && algo->count() == 0) opts->args.algo = "auto";
    run_bench_command(*opts);
  });
}

}  // namespace gradsync::cli
