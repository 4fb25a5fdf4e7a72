// `gradsync bench`'s options -> BenchRequest (include/gradsync/scenario/bench_setup.hpp), without
// simulating: the choices mapped to the request, the size sweep, each refused option at its
// name, and --compare's sizes and ranks from a log.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "gradsync/scenario/bench_setup.hpp"
#include "gradsync/units/config_error.hpp"
#include "sim_check.hpp"

using namespace gradsync;

namespace {

Topology star(std::uint32_t n) { return sim_check::ideal_star(n, 25e9, 1e-6); }

// The message of the ConfigError that bench_request raises ("" when none).
std::string error_of(const BenchArguments& a) {
  Topology t = star(4);
  try {
    (void)bench_request(a, t);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

NcclTestsLog log_of(int ranks, std::vector<double> sizes) {
  NcclTestsLog log;
  log.ranks = ranks;
  for (double b : sizes) {
    NcclTestsRow r;
    r.bytes = b;
    log.rows.push_back(r);
  }
  return log;
}

}  // namespace

TEST_CASE("bench request: defaults, the sweep of sizes and the choices") {
  Topology t = star(4);
  BenchRequest r = bench_request(BenchArguments{}, t);
  CHECK(r.op == CollectiveOp::AllReduce);
  REQUIRE(r.algorithm);
  CHECK(*r.algorithm == Algorithm::Ring);
  CHECK(r.sizes.size() == 28);  // 8 B to 1 GiB by 2
  CHECK(r.sizes.front() == 8);
  CHECK(r.sizes.back() == 1073741824.0);
  CHECK(r.gpus == 0);
  CHECK(r.placement.kind == PlacementKind::InOrder);
  CHECK(r.fidelity == Fidelity::Auto);
  CHECK(r.ps_placement == ServerPlacement::Colocated);
  CHECK(r.ps_hosts.empty());
  CHECK(r.simgrid_args.empty());

  BenchArguments a;
  a.op = "broadcast";
  a.algo = "auto";
  a.min = "1KiB";
  a.max = "4KiB";
  a.gpus = 2;
  a.placement = "strided";
  a.fidelity = "flow";
  a.ps_placement = "dedicated";
  a.root = 1;
  a.cfg = {"network/model:CM02"};
  r = bench_request(a, t);
  CHECK(r.op == CollectiveOp::Broadcast);
  CHECK_FALSE(r.algorithm);
  CHECK(r.sizes == std::vector<double>{1024, 2048, 4096});
  CHECK(r.gpus == 2);
  CHECK(r.placement.kind == PlacementKind::Strided);
  CHECK(r.fidelity == Fidelity::Flow);
  CHECK(r.ps_placement == ServerPlacement::Dedicated);
  CHECK(r.root == 1);
  CHECK(r.simgrid_args == std::vector<std::string>{"--cfg=network/model:CM02"});
}

TEST_CASE("bench request: nccl-tests' own size spelling (-b 8 -e 8G, K/M/G in powers of 1024)") {
  Topology t = star(4);
  BenchArguments a;
  a.min = "8";
  a.max = "32";
  CHECK(bench_request(a, t).sizes == std::vector<double>{8, 16, 32});
  a.min = "512M";
  a.max = "1G";
  CHECK(bench_request(a, t).sizes == std::vector<double>{536870912.0, 1073741824.0});
  a.min = "1k";
  a.max = "2K";
  CHECK(bench_request(a, t).sizes == std::vector<double>{1024, 2048});
  a.min = "1KB";  // the unit parser's spelling keeps its meaning: 1000 B
  a.max = "1KB";
  CHECK(bench_request(a, t).sizes == std::vector<double>{1000});
  a = {};
  a.min = "8X";
  CHECK(error_of(a).rfind("gradsync bench --min: error: ", 0) == 0);
  a.min = "-8";
  CHECK(error_of(a).rfind("gradsync bench --min: error: ", 0) == 0);
  a = {};
  a.max = "99999G";
  CHECK(error_of(a) == "gradsync bench --max: error: sizes above 10 TB are not a message size");
}

TEST_CASE("bench request: each refused option at its name") {
  BenchArguments a;
  a.min = "eight";
  CHECK(error_of(a).rfind("gradsync bench --min: error: ", 0) == 0);
  a = {};
  a.min = "2KiB";
  a.max = "1KiB";
  CHECK(error_of(a) == "gradsync bench --min/--max: error: need 1B <= --min <= --max");
  a = {};
  a.max = "20TB";
  CHECK(error_of(a) == "gradsync bench --max: error: sizes above 10 TB are not a message size");
  a = {};
  a.factor = 1.0;
  CHECK(error_of(a) == "gradsync bench --factor: error: --factor must be > 1");
  a = {};
  a.factor = 1.0000001;
  CHECK(error_of(a).find("at most 10000 (raise --factor or narrow --min/--max)") !=
        std::string::npos);
  a = {};
  a.compare = "nccl.log";
  a.sizes_given = true;
  CHECK(error_of(a) == "gradsync bench --compare: error: --compare takes its sizes from the "
                       "log: drop --min/--max/--factor");
  a = {};
  a.ps_hosts = 2;
  CHECK(error_of(a) ==
        "gradsync bench --ps-hosts: error: --ps-hosts places parameter servers: use --algo ps");
  a.algo = "ps";
  a.ps_servers_given = true;
  a.ps_servers = 3;
  CHECK(error_of(a).rfind("gradsync bench --ps-servers: error: with --ps-hosts", 0) == 0);
}

TEST_CASE("bench request: --compare takes the log's sizes and ranks") {
  Topology t = star(8);
  BenchArguments a;
  a.compare = "nccl.log";
  BenchRequest r = bench_request(a, t);
  CHECK(r.sizes.empty());
  bench_log_sizes(r, a, log_of(4, {1024, 4096}), t, "star.yaml");
  CHECK(r.sizes == std::vector<double>{1024, 4096});
  CHECK(r.gpus == 4);

  a.gpus = 2;  // --gpus wins
  r = bench_request(a, t);
  bench_log_sizes(r, a, log_of(4, {1024}), t, "star.yaml");
  CHECK(r.gpus == 2);

  a.gpus = 0;
  CHECK_THROWS_WITH_AS(bench_log_sizes(r, a, log_of(4, {}), t, "star.yaml"),
                       "nccl.log: error: no nccl-tests data rows in this log", ConfigError);
  CHECK_THROWS_WITH_AS(bench_log_sizes(r, a, log_of(16, {1024}), t, "star.yaml"),
                       "gradsync bench --compare: error: the log ran 16 ranks but star.yaml has "
                       "8 GPUs: raise the topology's nodes or pass --gpus",
                       ConfigError);
}
