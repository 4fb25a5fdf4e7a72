// Reading nccl-tests output and editing topology YAML text (calibrate.hpp), model layer only.
// The log below is the MLE-A100x8 run of test/data/nccl-tests/published.csv (rows
// MLE-A100x8-32768 ... MLE-A100x8-1073741824: size, time, algbw, busbw as published) written the
// way all_reduce_perf prints it, with rank lines and in-place columns.
#include <doctest/doctest.h>

#include <string>

#include "gradsync/calibrate/calibrate.hpp"
#include "gradsync/units/config_error.hpp"

using namespace gradsync;

namespace {

const char* const kHeader =
    "# nThread 1 nGpus 8 minBytes 32768 maxBytes 1073741824 step: 2(factor) warmup iters: 5 "
    "iters: 50 agg iters: 1 validation: 1 graph: 0\n"
    "#\n"
    "# Using devices\n"
    "#  Rank  0 Group  0 Pid  81234 on gpu-node-17 device  0 [0x07] NVIDIA A100-SXM4-80GB\n"
    "#  Rank  1 Group  0 Pid  81234 on gpu-node-17 device  1 [0x0b] NVIDIA A100-SXM4-80GB\n"
    "#  Rank  2 Group  0 Pid  81234 on gpu-node-17 device  2 [0x48] NVIDIA A100-SXM4-80GB\n"
    "#  Rank  3 Group  0 Pid  81234 on gpu-node-17 device  3 [0x4c] NVIDIA A100-SXM4-80GB\n"
    "#  Rank  4 Group  0 Pid  81234 on gpu-node-17 device  4 [0x88] NVIDIA A100-SXM4-80GB\n"
    "#  Rank  5 Group  0 Pid  81234 on gpu-node-17 device  5 [0x8b] NVIDIA A100-SXM4-80GB\n"
    "#  Rank  6 Group  0 Pid  81234 on gpu-node-17 device  6 [0xc8] NVIDIA A100-SXM4-80GB\n"
    "#  Rank  7 Group  0 Pid  81234 on gpu-node-17 device  7 [0xcb] NVIDIA A100-SXM4-80GB\n"
    "#\n"
    "#                                                              out-of-place                 "
    "      in-place          \n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
    "time   algbw   busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            "
    "(us)  (GB/s)  (GB/s)       \n";

// MLE-A100x8-*: out-of-place as published; in-place invented (slightly different) so the test
// sees which columns are read.
const char* const kRows =
    "       32768          8192     float     sum      -1    43.83    0.75    1.31      0    "
    "43.01    0.76    1.33      0\n"
    "       65536         16384     float     sum      -1    46.80    1.40    2.45      0    "
    "46.12    1.42    2.49      0\n"
    "     1048576        262144     float     sum      -1    101.9   10.29   18.00      0    "
    "100.3   10.45   18.29      0\n"
    "    67108864      16777216     float     sum      -1    684.6   98.02  171.54      0    "
    "680.0   98.69  172.70      0\n"
    "  1073741824     268435456     float     sum      -1   8203.9  130.88  229.04      0   "
    "8190.0  131.10  229.43      0\n"
    "# Out of bounds values : 0 OK\n"
    "# Avg bus bandwidth    : 84.468 \n"
    "#\n";

std::string log_error_of(const std::string& text) {
  try {
    (void)parse_nccl_tests_log(text, "run.log");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("all_reduce_perf output: ranks, hosts, device, out-of-place rows, trailer") {
  const NcclTestsLog log = parse_nccl_tests_log(std::string(kHeader) + kRows, "run.log");
  CHECK(log.ranks == 8);
  CHECK(log.gpus_per_thread == 8);  // "# nThread 1 nGpus 8 ...": one thread drives 8 GPUs (-g 8)
  CHECK(log.nodes() == 1);
  CHECK(log.hosts.at(0) == "gpu-node-17");
  CHECK(log.device == "NVIDIA A100-SXM4-80GB");
  CHECK(log.runs == 1);
  REQUIRE(log.rows.size() == 5);
  CHECK(log.rows[0].bytes == 32768);
  CHECK(log.rows[0].count == 8192);
  CHECK(log.rows[0].type == "float");
  CHECK(log.rows[0].redop == "sum");
  CHECK(log.rows[0].root == -1);
  CHECK(log.rows[0].time_us == doctest::Approx(43.83));
  CHECK(log.rows[0].busbw_GBps == doctest::Approx(1.31));
  CHECK(log.rows[0].in_place_time_us == doctest::Approx(43.01));
  CHECK(log.rows[4].bytes == 1073741824.0);
  CHECK(log.rows[4].time_us == doctest::Approx(8203.9));
  CHECK(log.rows[4].algbw_GBps == doctest::Approx(130.88));
  CHECK(log.rows[4].busbw_GBps == doctest::Approx(229.04));
  CHECK(log.rows[4].line == 20);
  REQUIRE(log.avg_busbw_GBps);
  CHECK(*log.avg_busbw_GBps == doctest::Approx(84.468));
}

TEST_CASE("nGpus: the GPUs each thread drives, 0 when the header is not there") {
  CHECK(parse_nccl_tests_log(kRows, "rows.log").gpus_per_thread == 0);
  CHECK(parse_nccl_tests_log(std::string("# nThread 8 nGpus 1 minBytes 8\n") + kRows, "t.log")
            .gpus_per_thread == 1);
  try {
    (void)parse_nccl_tests_log(std::string("# nThread 1 nGpus eight minBytes 8\n") + kRows,
                               "bad.log");
    FAIL("expected a ConfigError");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()).find("bad.log:1:") == 0);
    CHECK(std::string(e.what()).find("nGpus needs a GPU count") != std::string::npos);
  }
}

TEST_CASE("a fit matches each row's faster time of out-of-place and in-place") {
  NcclTestsRow spike;  // NVIDIA/nccl-tests#309, 2 x 8 H100, 256 B: 94.40 us out, 25.90 in place
  spike.bytes = 256;
  spike.time_us = 94.40;
  spike.busbw_GBps = 0.01;
  spike.in_place_time_us = 25.90;
  CHECK(fit_time_us(spike) == doctest::Approx(25.90));
  CHECK(fit_busbw_GBps(spike) == doctest::Approx(0.01 * 94.40 / 25.90));
  NcclTestsRow slower_in_place = spike;
  slower_in_place.in_place_time_us = 100.0;
  CHECK(fit_time_us(slower_in_place) == doctest::Approx(94.40));
  CHECK(fit_busbw_GBps(slower_in_place) == doctest::Approx(0.01));
  NcclTestsRow out_only = spike;  // a log without the in-place columns
  out_only.in_place_time_us = 0;
  CHECK(fit_time_us(out_only) == doctest::Approx(94.40));
}

TEST_CASE("several runs concatenated are averaged per size, NCCL INFO lines are skipped") {
  std::string second = std::string(kHeader) + kRows;
  // Second run: the 1 GiB row 10 % slower.
  const std::string from = "  1073741824     268435456     float     sum      -1   8203.9  130.88  229.04";
  const std::string to = "  1073741824     268435456     float     sum      -1   9024.3  118.98  208.22";
  second.replace(second.find(from), from.size(), to);
  const std::string text = std::string(kHeader) +
                           "gpu-node-17:81234:81234 [0] NCCL INFO NCCL version 2.18.3+cuda12.2\n" +
                           kRows + second;
  const NcclTestsLog log = parse_nccl_tests_log(text, "run.log");
  CHECK(log.runs == 2);
  CHECK(log.ranks == 8);
  REQUIRE(log.rows.size() == 5);
  CHECK(log.rows[4].samples == 2);
  CHECK(log.rows[4].time_us == doctest::Approx((8203.9 + 9024.3) / 2));
  CHECK(log.rows[4].busbw_GBps == doctest::Approx((229.04 + 208.22) / 2));
  CHECK(log.rows[0].time_us == doctest::Approx(43.83));
}

TEST_CASE("nodes come from the distinct hosts, extra spaces and older rows without root") {
  const std::string text =
      "#   Rank  0 Pid  1 on   host-a device  0 [0x18] NVIDIA H100 80GB HBM3\n"
      "#   Rank  1 Pid  1 on   host-a device  1 [0x2a] NVIDIA H100 80GB HBM3\n"
      "#   Rank  2 Pid  2 on   host-b device  0 [0x18] NVIDIA H100 80GB HBM3\n"
      "#   Rank  3 Pid  2 on   host-b device  1 [0x2a] NVIDIA H100 80GB HBM3\n"
      "#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"
      "\t  8388608   2097152   float  sum    133.5   62.82   94.23  0e+00    133.0   63.07   94.61  0e+00  \r\n";
  const NcclTestsLog log = parse_nccl_tests_log(text, "old.log");
  CHECK(log.ranks == 4);
  CHECK(log.nodes() == 2);
  REQUIRE(log.rows.size() == 1);
  CHECK(log.rows[0].time_us == doctest::Approx(133.5));
  CHECK(log.rows[0].busbw_GBps == doctest::Approx(94.23));
}

TEST_CASE("srun --label prefixes (\"0: \") are dropped; errors keep the real column") {
  const std::string text =
      "0: #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "0:      1048576        262144     float     sum      -1    123.2    8.51   15.95      0    121.3    8.64   16.21      0\n"
      "12:     2097152        524288     float     sum      -1    147.2   14.24   26.70      0    147.1   14.25   26.72      0\n";
  const NcclTestsLog log = parse_nccl_tests_log(text, "srun.log");
  REQUIRE(log.rows.size() == 2);
  CHECK(log.rows[0].bytes == doctest::Approx(1048576));
  CHECK(log.rows[0].time_us == doctest::Approx(123.2));
  CHECK(log.rows[1].busbw_GBps == doctest::Approx(26.70));
  CHECK(log_error_of("0: #       size count type redop root time algbw busbw #wrong\n"
                 "0:      1024    256 float  sum   -1 1x.0  0.10  0.18      0\n")
            .rfind("run.log:2:37: error: '1x.0' is not a time", 0) == 0);
}

TEST_CASE("garbage is an error at its line and column") {
  const std::string head(kHeader);  // 15 lines
  CHECK(log_error_of(head + "       32768          8192     float     sum      -1    4x.83    0.75"
                        "    1.31      0    43.01    0.76    1.33      0\n") ==
        "run.log:16:57: error: '4x.83' is not a time in us (a number >= 0)");
  CHECK(log_error_of(head + "Segmentation fault (core dumped)\n") ==
        "run.log:16:1: error: expected a '#' comment or a data row starting with the size in "
        "bytes, found 'Segmentation'");
  CHECK(log_error_of(head + "       32768          8192     float     sum      -1    43.83\n")
            .rfind("run.log:16:", 0) == 0);
  CHECK(log_error_of("# nothing here\n") ==
        "run.log:1:1: error: no data rows (size count type redop root time algbw busbw ...): is "
        "this nccl-tests output?");
  CHECK(log_error_of(head + "      -32768          8192     float     sum      -1    43.83    0.75"
                        "    1.31      0    43.01    0.76    1.33      0\n")
            .rfind("run.log:16:7: error: '-32768' is not a size in bytes", 0) == 0);
}

TEST_CASE("set_yaml_key edits block and flow mappings and keeps comments elsewhere") {
  const std::string yaml =
      "name: x   # a comment\n"
      "nodes: 4\n"
      "node:\n"
      "  gpus: 8\n"
      "  intra: {fabric: nvlink, switch: true, bandwidth: 450GB/s, latency: 1us}\n"
      "  pcie:\n"
      "    bandwidth: 64GB/s   # cited\n"
      "network:\n"
      "  fabric: infiniband\n"
      "  link_latency: 750ns   # assumed\n"
      "\n"
      "cost:\n"
      "  gpu: 1\n";
  auto t = set_yaml_key(yaml, {"network", "efficiency"}, "0.8", "fitted");
  REQUIRE(t);
  CHECK(t->find("  link_latency: 750ns   # assumed\n  efficiency: 0.8  # fitted\n\ncost:") !=
        std::string::npos);
  t = set_yaml_key(*t, {"network", "link_latency"}, "3000ns");
  REQUIRE(t);
  CHECK(t->find("  link_latency: 3000ns\n") != std::string::npos);
  t = set_yaml_key(*t, {"node", "intra", "efficiency"}, "0.7");
  REQUIRE(t);
  CHECK(t->find("  intra: {fabric: nvlink, switch: true, bandwidth: 450GB/s, latency: 1us, "
                "efficiency: 0.7}\n") != std::string::npos);
  t = set_yaml_key(*t, {"node", "intra", "latency"}, "500ns");
  REQUIRE(t);
  CHECK(t->find("bandwidth: 450GB/s, latency: 500ns, efficiency: 0.7}") != std::string::npos);
  t = set_yaml_key(*t, {"node", "pcie", "efficiency"}, "0.75");
  REQUIRE(t);
  CHECK(t->find("    bandwidth: 64GB/s   # cited\n    efficiency: 0.75\nnetwork:") !=
        std::string::npos);
  t = set_yaml_key(*t, {"nodes"}, "2");
  REQUIRE(t);
  CHECK(t->find("\nnodes: 2\n") != std::string::npos);
  CHECK(t->find("name: x   # a comment\n") == 0);
  CHECK_FALSE(set_yaml_key(yaml, {"nosuch", "efficiency"}, "1"));
}
