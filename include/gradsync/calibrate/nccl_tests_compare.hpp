// Measured vs simulated nccl-tests rows (`gradsync bench --compare LOG`, `gradsync calibrate`):
// per-row errors and a summary per message-size band. Model layer: pure C++.
//
// The bands are the ones V2 (test/validation/nccl_tests/compare_nccl_tests.py) checks, chosen by
// what moves there in training: latency (≤ 64 KiB: launch and per-step overheads; compared by
// time), A (64 KiB – 1 MiB: small buckets, LL/LL128), B (1 – 64 MiB: DDP's 1 MiB and 25 MiB
// buckets, FSDP shards), C (≥ 64 MiB: the bandwidth plateau). A 64 KiB row is in the latency
// band and in band A.
//
// busbw error = simulated busbw / measured busbw − 1 = measured time / simulated time − 1 (the
// same bytes and ranks on both sides): positive means gradsync is optimistic.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace gradsync {

struct SizeBand {
  std::string_view name;
  std::string_view label;
  double lo_bytes;  // included
  double hi_bytes;  // excluded (latency band: included)
};
inline constexpr double kLatencyBandMaxBytes = 64.0 * 1024;
inline constexpr std::array<SizeBand, 4> kNcclTestsBands{{
    {"latency", "<= 64 KiB", 0.0, kLatencyBandMaxBytes},
    {"A", "64 KiB - 1 MiB", 64.0 * 1024, 1024.0 * 1024},
    {"B", "1 - 64 MiB", 1024.0 * 1024, 64.0 * 1024 * 1024},
    {"C", ">= 64 MiB", 64.0 * 1024 * 1024, 1e300},
}};
// Whether `bytes` belongs to band `b` (the latency band includes its upper end).
[[nodiscard]] bool in_band(const SizeBand& b, double bytes);

struct ComparedRow {
  double bytes = 0;
  double measured_time_us = 0;
  double simulated_time_us = 0;
  double measured_busbw_GBps = 0;
  double simulated_busbw_GBps = 0;
  std::string algorithm;  // what gradsync ran ("ring", "nvls/Simple", ...)
  int line = 0;           // where the measured row was read (0: unknown)

  [[nodiscard]] double time_ratio() const;    // simulated / measured time
  [[nodiscard]] double busbw_error() const;   // simulated / measured busbw − 1
};

struct BandSummary {
  SizeBand band;
  std::size_t rows = 0;
  double median_abs_error = 0;   // |busbw error|
  double worst_abs_error = 0;
  double worst_bytes = 0;        // the row with the worst error
  double worst_error = 0;        // its signed error
  double min_time_ratio = 0;     // simulated / measured time, over the band
  double max_time_ratio = 0;
};

// One summary per band that has rows (kNcclTestsBands order).
[[nodiscard]] std::vector<BandSummary> summarize_bands(const std::vector<ComparedRow>& rows);

}  // namespace gradsync
