// `gradsync bench`'s options as the user gave them, turned into a BenchRequest (bench_runner.hpp):
// the operation and algorithm, the sizes (--min/--max/--factor checked, and refused beyond
// kMaxBenchSizes rows), the placement, fidelity and parameter-server choices, parameter servers
// on hosts of their own added to the topology (--ps-hosts, server_hosts.hpp), and with
// --compare the sizes and rank count of a real nccl-tests log. Bad input is ConfigError at
// "gradsync bench OPTION".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gradsync/scenario/bench_runner.hpp"
#include "gradsync/calibrate/calibrate.hpp"
#include "gradsync/topology/topology.hpp"

namespace gradsync {

// The most sizes one bench run simulates (nccl-tests -f 2 from 8 B to 16 GiB is 32).
inline constexpr double kMaxBenchSizes = 10000;

// The command line's values, with its defaults.
struct BenchArguments {
  std::string op = "allreduce";  // allreduce | reducescatter | allgather | broadcast | reduce
  std::string algo = "ring";     // an algorithm_names() name, or auto
  std::string min = "8B";
  std::string max = "1GiB";
  double factor = 2.0;
  bool sizes_given = false;      // --min, --max or --factor on the command line
  std::uint32_t gpus = 0;        // 0: every GPU (or the log's ranks)
  std::uint32_t gpus_per_thread = 0;  // nccl-tests' -g; 0: the --compare log's nGpus, else 1
  std::string fidelity = "auto";         // auto | step | flow
  std::string placement = "in-order";    // in-order | strided | random
  std::uint64_t seed = 1;
  std::uint32_t channels = 0;  // 0 = NICs per node across nodes (like NCCL), else 1
  std::uint32_t pipeline = 0;
  std::uint32_t ps_servers = 1;
  std::string ps_placement = "colocated";  // colocated | dedicated
  bool ps_servers_given = false;
  bool ps_placement_given = false;
  std::uint32_t ps_hosts = 0;  // servers on hosts of their own (server_hosts.hpp); 0 = on GPUs
  std::string ps_host_nic;     // their NIC rate; "" = the GPU servers' NIC rate
  std::uint32_t root = 0;
  std::string compare;         // nccl-tests log: its sizes and ranks, measured beside simulated
  bool best = false;           // also the fastest simulated algorithm (auto under NCCL)
  std::vector<std::string> cfg;  // SimGrid options, each passed as --cfg=
};

// The request of `arguments` on `topology`, to which the --ps-hosts hosts are added. Its sizes
// are the --min/--max/--factor sweep, or none with --compare (bench_log_sizes() gives them).
// Checks, in order: --ps-hosts with its companions, the operation, the sizes, --compare with
// explicit sizes.
[[nodiscard]] BenchRequest bench_request(const BenchArguments& arguments, Topology& topology);

// --compare: the log's sizes, and its rank count unless --gpus was given. ConfigError when the
// log has no data rows (at the log) or more ranks than `topology` (named `topology_file`) has
// GPUs.
void bench_log_sizes(BenchRequest& request, const BenchArguments& arguments,
                     const NcclTestsLog& log, const Topology& topology,
                     const std::string& topology_file);

}  // namespace gradsync
