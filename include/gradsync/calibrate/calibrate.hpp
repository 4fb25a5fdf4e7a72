// Calibration inputs of `gradsync calibrate` (README.md, Commands): reading nccl-tests output and
// editing a topology template's YAML text. Model layer: pure C++, no YAML library, no SimGrid.
//
// parse_nccl_tests_log() reads what `all_reduce_perf` (or any nccl-tests *_perf binary) prints:
//   # nThread 1 nGpus 8 minBytes 8 maxBytes ... (comment lines)
//   #  Rank  0 Group  0 Pid 1234 on  host-a device  0 [0x18] NVIDIA H100 80GB HBM3
//   #       size   count   type  redop  root   time  algbw  busbw #wrong   time  algbw  busbw #wrong
//    1048576  262144  float   sum    -1   30.1  34.8  65.3      0   29.9  35.0  65.7      0
//   # Avg bus bandwidth    : 91.7
// Ranks are counted from the rank lines, nodes from their distinct hosts (`on HOST`). Data rows
// give the out-of-place columns (the in-place ones are read and kept); older nccl-tests rows
// without the `root` column are accepted. Several runs concatenated in one file are averaged
// per size. A leading `srun --label` task number ("0: ") is dropped. NCCL_DEBUG lines
// ("... NCCL INFO ...") are skipped. Anything else is an error ConfigError
// "LOG:line:col: error: ...".
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gradsync {

struct NcclTestsRow {
  double bytes = 0;
  long long count = 0;
  std::string type;
  std::string redop;
  int root = -1;
  double time_us = 0;      // out-of-place, averaged over the runs that measured this size
  double algbw_GBps = 0;
  double busbw_GBps = 0;
  double in_place_time_us = 0;
  double in_place_busbw_GBps = 0;
  int samples = 0;         // how many runs had this size
  int line = 0;            // first line it was read from
};

// The time a fit should match for a row: the faster of its out-of-place and in-place times
// (the out-of-place one where the log has no in-place column). Both measure the same
// collective at the same size; noise only ever adds time (a first-row warm-up, an interrupt:
// 94.4 us out of place against 25.9 in place at 256 B in NVIDIA/nccl-tests#309), so the lower
// is the better estimate of what the fabric does; and the all-reduces gradsync predicts are
// in place (DDP reduces each bucket's tensor in place). busbw scales with it.
[[nodiscard]] double fit_time_us(const NcclTestsRow& row);
[[nodiscard]] double fit_busbw_GBps(const NcclTestsRow& row);

struct NcclTestsLog {
  std::string file;
  int ranks = 0;                   // rank lines of one run (0: the log has none)
  std::vector<std::string> hosts;  // distinct hosts of the rank lines, in order of appearance
  std::string device;              // the device name of rank 0 ("NVIDIA H100 80GB HBM3")
  int runs = 0;                    // tables found (header lines followed by data)
  std::vector<NcclTestsRow> rows;  // one per size, ascending
  std::optional<double> avg_busbw_GBps;  // the last "Avg bus bandwidth" trailer
  // GPUs each thread drives (nccl-tests' -g, the header's "nGpus N"); 0: the log does not say.
  int gpus_per_thread = 0;

  [[nodiscard]] int nodes() const { return static_cast<int>(hosts.size()); }
};

// Throws ConfigError (file = `display_name`) on garbage, with the 1-based line and column.
[[nodiscard]] NcclTestsLog parse_nccl_tests_log(const std::string& text,
                                                const std::string& display_name);

// Sets `path` (e.g. {"network", "efficiency"}) in block-style YAML text to `value`, keeping
// everything else as written. An existing key has its value (and trailing comment) replaced;
// a missing key is added as the last entry of its parent mapping, which may be a block or a
// one-line flow mapping ({a: 1, b: 2}). `comment` (without '#') is appended to the written
// line when not empty (block form only). Returns std::nullopt when a parent is missing or the
// text has a shape this editor does not handle (the caller reports it).
[[nodiscard]] std::optional<std::string> set_yaml_key(const std::string& text,
                                                      const std::vector<std::string>& path,
                                                      const std::string& value,
                                                      const std::string& comment = "");

}  // namespace gradsync
