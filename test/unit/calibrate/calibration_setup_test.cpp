// What `gradsync calibrate` sets up around the fit (calibration_setup.hpp), on a hand-built
// two-server template and hand-written logs: the job size, the parameters and their ranges,
// --bands, the rows fitted, the candidate and calibrated YAML text, and the `gradsync bench`
// runs that simulate a candidate.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "gradsync/calibrate/calibration_setup.hpp"
#include "gradsync/units/config_error.hpp"
#include "gradsync/fabric/fabric_defaults.hpp"
#include "gradsync/units/units.hpp"

using namespace gradsync;

namespace {

// Two servers of 8 NVLink GPUs on InfiniBand: network efficiency 0.8 and 3 us per hop,
// nccl.latency_scale 1.2.
ClusterSpec two_server_cluster() {
  ClusterSpec s;
  s.name = "test-2node";
  s.software = SoftwareModel::Nccl;
  s.nodes = 2;
  s.node.gpus = 8;
  s.node.intra.fabric = Fabric::NvLink;
  s.node.intra.latency = Seconds(0.25e-6);
  NetworkSpec n;
  n.fabric = Fabric::InfiniBand;
  n.link_latency = Seconds(3e-6);
  n.efficiency = 0.8;
  s.network = n;
  s.nccl.latency_scale = 1.2;
  return s;
}

const std::string kTemplate =
    "name: test-2node\n"
    "nodes: 2\n"
    "node:\n"
    "  gpus: 8\n"
    "network:\n"
    "  fabric: infiniband\n"
    "  efficiency: 0.8\n"
    "  link_latency: 3us\n";

NcclTestsLog log_of(int ranks, std::vector<std::string> hosts) {
  NcclTestsLog log;
  log.file = "all_reduce.log";
  log.ranks = ranks;
  log.hosts = std::move(hosts);
  log.runs = 1;
  return log;
}

NcclTestsRow row(double bytes, double time_us, double in_place_us, int line) {
  NcclTestsRow r;
  r.bytes = bytes;
  r.time_us = time_us;
  r.busbw_GBps = 10.0;
  r.in_place_time_us = in_place_us;
  r.in_place_busbw_GBps = 10.0 * time_us / in_place_us;
  r.samples = 1;
  r.line = line;
  return r;
}

std::string setup_error_of(const auto& call) {
  try {
    call();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no ConfigError)";
}

}  // namespace

TEST_CASE("calibration_job: the log's ranks and servers on the template") {
  const ClusterSpec spec = two_server_cluster();
  // 16 ranks on the template's 2 servers: the network is the bottleneck, the text unchanged.
  CalibrationJob job = calibration_job(spec, log_of(16, {"a", "b"}), kTemplate, "t.yaml",
                                       "logs/all_reduce.log");
  CHECK(job.nodes == 2);
  CHECK(job.ranks == 16);
  CHECK(job.multi);
  CHECK(job.group == "network");
  CHECK(job.base_text == kTemplate);
  // No rank lines: every GPU of the template.
  job = calibration_job(spec, log_of(0, {}), kTemplate, "t.yaml", "all_reduce.log");
  CHECK(job.ranks == 16);
  CHECK(job.multi);
  // 8 ranks on one host: one server, NVLink is the bottleneck; `nodes:` set to the log's.
  job = calibration_job(spec, log_of(8, {"a"}), kTemplate, "t.yaml", "logs/all_reduce.log");
  CHECK(job.nodes == 1);
  CHECK(job.ranks == 8);
  CHECK_FALSE(job.multi);
  CHECK(job.group == "node.intra");
  CHECK(job.base_text.find("\nnodes: 1  # the servers of all_reduce.log (was 2)\n") !=
        std::string::npos);
  // 32 ranks on 4 hosts: 4 servers, 32 GPUs.
  job = calibration_job(spec, log_of(32, {"a", "b", "c", "d"}), kTemplate, "t.yaml", "x.log");
  CHECK(job.nodes == 4);
  CHECK(job.multi);

  CHECK(setup_error_of([&] {
          (void)calibration_job(spec, log_of(32, {"a", "b"}), kTemplate, "t.yaml", "x.log");
        }) == "x.log:1:1: error: the log has 32 ranks, the topology test-2node only 16 GPUs on "
              "2 servers");
  ClusterSpec no_network = spec;
  no_network.network.reset();
  CHECK(setup_error_of([&] {
          (void)calibration_job(no_network, log_of(16, {"a", "b"}), kTemplate, "t.yaml", "x.log");
        }) == "t.yaml:1:1: error: a multi-node log needs a network: group");
}

TEST_CASE("calibration_params: the bottleneck group's two, then NCCL's three in stage 2") {
  const ClusterSpec spec = two_server_cluster();
  const std::vector<FitParam> multi = calibration_params(spec, true);
  REQUIRE(multi.size() == 5);
  CHECK(multi[0].label == "network.efficiency");
  CHECK(multi[0].path == std::vector<std::string>{"network", "efficiency"});
  CHECK(multi[0].initial == 0.8);
  CHECK(multi[0].log_scale);
  CHECK(multi[0].lo == 1e-3);
  CHECK(multi[0].hi == 1.0);
  CHECK(multi[0].stage == 1);
  CHECK(multi[1].label == "network.link_latency");
  CHECK(multi[1].path == std::vector<std::string>{"network", "link_latency"});
  CHECK(multi[1].initial == 3e-6);
  CHECK_FALSE(multi[1].log_scale);
  CHECK(multi[1].is_time);
  CHECK(multi[1].unit == 1e-6);
  CHECK(multi[1].probe == doctest::Approx(3.0));  // the initial value in µs
  CHECK(multi[1].hi == 1e-3);
  CHECK(multi[2].label == "nccl.latency_scale");
  CHECK(multi[2].initial == 1.2);
  CHECK(multi[2].nccl);
  CHECK(multi[2].stage == 2);
  CHECK(multi[3].path == std::vector<std::string>{"nccl", "channel_scale"});
  CHECK(multi[3].lo == 0.01);
  CHECK(multi[3].hi == 100.0);
  CHECK(multi[4].label == "nccl.nvls_chunk_overhead");
  CHECK(multi[4].initial == doctest::Approx(1.3e-6));  // NCCL's default ramp, kNvlsChunkOverheadUs
  CHECK(multi[4].is_time);

  ClusterSpec plain = spec;
  plain.software = SoftwareModel::None;
  const std::vector<FitParam> single = calibration_params(plain, false);
  REQUIRE(single.size() == 2);
  CHECK(single[0].label == "node.intra.efficiency");
  CHECK(single[0].path == std::vector<std::string>{"node", "intra", "efficiency"});
  CHECK(single[0].initial == default_efficiency(Fabric::NvLink));  // unset: the fabric's
  CHECK(single[1].label == "node.intra.latency");
  CHECK(single[1].initial == 0.25e-6);
  CHECK(single[1].probe == 0.5);  // at least half a µs

  // GPUs staged through host memory: the DRAM's efficiency is fitted, not the PCIe links'.
  ClusterSpec staged = plain;
  staged.node.intra.fabric = Fabric::Pcie;
  staged.node.intra_shape = IntraShape::RootComplex;
  staged.node.pcie_p2p = false;
  LinkGroupSpec dram;
  dram.fabric = Fabric::Memory;
  dram.bandwidth = BytesPerSecond(307.2e9);
  staged.node.host_memory = dram;
  const std::vector<FitParam> mem = calibration_params(staged, false);
  REQUIRE(mem.size() == 2);
  CHECK(mem[0].label == "node.host_memory.efficiency");
  CHECK(mem[0].path == std::vector<std::string>{"node", "host_memory", "efficiency"});
  CHECK(mem[0].initial == default_efficiency(Fabric::Memory));
  CHECK(mem[1].label == "node.intra.latency");
}

TEST_CASE("calibration_fit_options: --bands by name") {
  CHECK(calibration_fit_options(5, {}).asked == std::array<bool, 4>{true, true, true, true});
  CHECK(calibration_fit_options(5, {}).iterations == 5);
  CHECK(calibration_fit_options(8, {"B", "C"}).asked ==
        std::array<bool, 4>{false, false, true, true});
  CHECK(calibration_fit_options(8, {"latency"}).asked ==
        std::array<bool, 4>{true, false, false, false});
  CHECK(setup_error_of([] { (void)calibration_fit_options(8, {"A", "D"}); }) ==
        "gradsync calibrate --bands: error: unknown band 'D' (expected latency, A, B or C)");
}

TEST_CASE("calibration_rows: rows with a size and a time, at their faster time") {
  NcclTestsLog log = log_of(16, {"a", "b"});
  log.rows = {row(0, 5.0, 5.0, 10), row(1024, 0.0, 0.0, 11), row(1048576, 100.0, 90.0, 12),
              row(128.0 * 1048576, 5000.0, 5100.0, 13)};
  const std::vector<FitRow> rows = calibration_rows(log, FitOptions{}, "x.log");
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].bytes == 1048576);
  CHECK(rows[0].measured_time_us == 90.0);  // in place was faster
  CHECK(rows[0].measured_busbw_GBps == doctest::Approx(10.0 * 100.0 / 90.0));
  CHECK(rows[0].line == 12);
  CHECK(rows[1].measured_time_us == 5000.0);
  CHECK(rows[1].line == 13);

  const FitOptions only_a = calibration_fit_options(8, {"A"});
  CHECK(setup_error_of([&] { (void)calibration_rows(log, only_a, "x.log"); }) ==
        "gradsync calibrate --bands: error: the log has no row in the bands asked for");
  log.rows.resize(2);
  CHECK(setup_error_of([&] { (void)calibration_rows(log, FitOptions{}, "x.log"); }) ==
        "x.log:1:1: error: no rows with a size and a time");
}

TEST_CASE("fit_param_yaml and fit_param_text: numbers plain, times with a unit") {
  FitParam eff;
  eff.value = 0.84;
  CHECK(fit_param_yaml(eff) == "0.84");
  CHECK(fit_param_text(eff, 0.84) == "0.8400");
  FitParam lat;
  lat.is_time = true;
  lat.value = 13e-6;
  CHECK(fit_param_yaml(lat) == "13000ns");
  CHECK(fit_param_text(lat, 13e-6) == format_time(Seconds(13e-6)));
}

TEST_CASE("candidate and calibrated text: the template's keys set, nccl: appended or edited") {
  std::vector<FitParam> params = calibration_params(two_server_cluster(), true);
  params[0].value = 0.9;
  params[1].value = 5e-6;
  params[2].value = 1.5;
  params[3].value = 1.0;
  params[4].value = 2e-6;
  // Stage 1: the link group's keys only.
  std::string t = calibration_candidate_text(kTemplate, params, 1, "t.yaml");
  CHECK(t.find("  efficiency: 0.9\n") != std::string::npos);
  CHECK(t.find("  link_latency: 5000ns\n") != std::string::npos);
  CHECK(t.find("nccl") == std::string::npos);
  CHECK(t.find("#") == std::string::npos);
  // Stage 2: an nccl: block appended (the template has none).
  t = calibration_candidate_text(kTemplate, params, 2, "t.yaml");
  CHECK(t.ends_with("\nnccl:\n  latency_scale: 1.5\n  channel_scale: 1\n"
                    "  nvls_chunk_overhead: 2000ns\n"));
  // A template with nccl: has its keys edited in place.
  t = calibration_candidate_text(kTemplate + "nccl:\n  latency_scale: 1.2\n", params, 2, "t.yaml");
  CHECK(t.find("nccl:\n  latency_scale: 1.5\n") != std::string::npos);
  CHECK(t.find("nccl:") == t.rfind("nccl:"));

  // The written file: only the fitted parameters, each with where it came from.
  params[0].fitted = true;
  params[2].fitted = true;
  t = calibrated_topology_text(kTemplate, params, "logs/all_reduce.log", "t.yaml");
  CHECK(t.find("  efficiency: 0.9  # calibrated from nccl-tests log all_reduce.log (gradsync "
               "calibrate)\n") != std::string::npos);
  CHECK(t.find("  link_latency: 3us\n") != std::string::npos);  // not fitted: as written
  CHECK(t.ends_with("\nnccl:  # calibrated from nccl-tests log all_reduce.log (gradsync "
                    "calibrate)\n  latency_scale: 1.5\n"));

  // A group missing from the text is an error naming the file.
  CHECK(setup_error_of([&] {
          (void)calibration_candidate_text("name: x\nnodes: 2\n", params, 1, "t.yaml");
        }) == "gradsync calibrate TOPOLOGY: error: cannot edit network.efficiency in t.yaml: "
              "write its group as a block mapping");
}

TEST_CASE("candidate_error_text: the deleted candidate file named after the template") {
  CHECK(candidate_error_text("/tmp/g/candidate-3.yaml:7:3: error: efficiency out of range "
                             "(in /tmp/g/candidate-3.yaml)",
                             "/tmp/g/candidate-3.yaml", "t.yaml", 3) ==
        "t.yaml (candidate 3 of the fit):7:3: error: efficiency out of range (in t.yaml "
        "(candidate 3 of the fit))");
  CHECK(candidate_error_text("killed", "/tmp/g/candidate-1.yaml", "t.yaml", 1) == "killed");
}

TEST_CASE("bench_size_runs: geometric runs of sizes, odd sizes alone") {
  using Runs = std::vector<std::vector<double>>;
  CHECK(bench_size_runs({8, 16, 32, 64, 100, 1000, 3000, 9000}) ==
        Runs{{8, 16, 32, 64}, {100, 1000}, {3000, 9000}});
  CHECK(bench_size_runs({5}) == Runs{{5}});
  CHECK(bench_size_runs({}).empty());
  CHECK(bench_size_runs({16, 64, 256, 1024, 4096}) == Runs{{16, 64, 256, 1024, 4096}});
  CHECK(bench_size_runs({16, 64, 256, 1000}) == Runs{{16, 64, 256}, {1000}});
}

TEST_CASE("calibration_bench_args: one bench --json run per run of sizes") {
  CHECK(calibration_bench_args("/tmp/c-1.yaml", "auto", 16, {8, 16, 32}, {"network/model:CM02"}) ==
        std::vector<std::string>{"bench", "/tmp/c-1.yaml", "--json", "--algo", "auto", "--gpus",
                                 "16", "--min", "8B", "--max", "32B", "--factor", "2",
                                 "--cfg=network/model:CM02"});
  CHECK(calibration_bench_args("c.yaml", "ring", 8, {1048576}, {}) ==
        std::vector<std::string>{"bench", "c.yaml", "--json", "--algo", "ring", "--gpus", "8",
                                 "--min", "1048576B", "--max", "1048576B"});
  // A log of one thread driving 8 GPUs (nccl-tests -g 8): the candidates run its harness.
  CHECK(calibration_bench_args("c.yaml", "ring", 8, {1048576}, {}, 8) ==
        std::vector<std::string>{"bench", "c.yaml", "--json", "--algo", "ring", "--gpus", "8",
                                 "--min", "1048576B", "--max", "1048576B",
                                 "--gpus-per-thread", "8"});
}
