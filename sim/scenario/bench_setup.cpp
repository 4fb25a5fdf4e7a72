// `gradsync bench`'s options -> BenchRequest (bench_setup.hpp).
#include "gradsync/scenario/bench_setup.hpp"

#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "gradsync/units/config_error.hpp"
#include "gradsync/topology/server_hosts.hpp"

namespace gradsync {
namespace {

SourceMark cli_mark(const std::string& option) { return SourceMark{"gradsync bench " + option, 0, 0}; }

// nccl-tests' own spelling of -b/-e (common.cu parsesize): a byte count with an optional
// K, M or G suffix in powers of 1024 (`-b 8 -e 8G` is 8 B to 8 GiB). Anything else goes to the
// unit parser (8B, 25MiB, 1GB).
std::optional<Bytes> nccl_tests_size(const std::string& text) {
  if (text.empty() || text.size() > 32) return std::nullopt;
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0 || text.size() - digits > 1) return std::nullopt;
  double scale = 1.0;
  if (digits < text.size()) {
    switch (text.back()) {
      case 'K': case 'k': scale = 1024.0; break;
      case 'M': case 'm': scale = 1024.0 * 1024.0; break;
      case 'G': case 'g': scale = 1024.0 * 1024.0 * 1024.0; break;
      default: return std::nullopt;
    }
  }
  return Bytes(std::stod(text.substr(0, digits)) * scale);
}

Bytes parse_cli_size(const std::string& option, const std::string& text) {
  if (const std::optional<Bytes> b = nccl_tests_size(text)) return *b;
  try {
    return parse_size(text);
  } catch (const UnitError& e) {
    throw ConfigError(cli_mark(option), e.what());
  }
}

// --ps-hosts: K CPU hosts of their own added to the topology for the servers; their devices.
std::vector<DeviceId> add_ps_hosts(const BenchArguments& o, Topology& topology) {
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

}  // namespace

BenchRequest bench_request(const BenchArguments& o, Topology& topology) {
  BenchRequest request;
  request.ps_hosts = add_ps_hosts(o, topology);
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
  if (!o.compare.empty()) {
    if (o.sizes_given)
      throw ConfigError(cli_mark("--compare"),
                        "--compare takes its sizes from the log: drop --min/--max/--factor");
  } else {
    request.sizes = bench_sizes(min, max, o.factor);
  }
  request.op = *op;
  if (o.algo != "auto") request.algorithm = algorithm_from_string(o.algo);
  else request.algorithm.reset();
  request.gpus = o.gpus;
  request.placement.kind = placement_kind_from_string(o.placement).value_or(PlacementKind::InOrder);
  request.placement.seed = o.seed;
  request.fidelity = fidelity_from_string(o.fidelity).value_or(Fidelity::Auto);
  request.gpus_per_thread = o.gpus_per_thread > 0 ? o.gpus_per_thread : 1;
  request.channels = o.channels;
  request.pipeline = o.pipeline;
  request.root = o.root;
  request.ps_servers = o.ps_servers;
  request.ps_placement =
      server_placement_from_string(o.ps_placement).value_or(ServerPlacement::Colocated);
  request.best = o.best;
  for (const auto& c : o.cfg) request.simgrid_args.push_back("--cfg=" + c);
  return request;
}

void bench_log_sizes(BenchRequest& request, const BenchArguments& o, const NcclTestsLog& log,
                     const Topology& topology, const std::string& topology_file) {
  if (log.rows.empty())
    throw ConfigError(SourceMark{o.compare, 0, 0}, "no nccl-tests data rows in this log");
  if (o.gpus == 0 && log.ranks > 0 && static_cast<std::size_t>(log.ranks) > topology.gpu_count())
    throw ConfigError(cli_mark("--compare"),
                      fmt::format("the log ran {} ranks but {} has {} GPUs: raise the "
                                  "topology's nodes or pass --gpus", log.ranks, topology_file,
                                  topology.gpu_count()));
  request.sizes.clear();
  for (const NcclTestsRow& r : log.rows) request.sizes.push_back(r.bytes);
  if (o.gpus == 0 && log.ranks > 0) request.gpus = static_cast<std::uint32_t>(log.ranks);
  // The harness the log ran (its header's nGpus), unless --gpus-per-thread says otherwise.
  if (o.gpus_per_thread == 0 && log.gpus_per_thread > 0)
    request.gpus_per_thread = static_cast<std::uint32_t>(log.gpus_per_thread);
}

}  // namespace gradsync
