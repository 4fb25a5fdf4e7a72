// libFuzzer harness: the nccl-tests log parser (parse_nccl_tests_log, calibrate.hpp) that
// `gradsync calibrate` reads all_reduce_perf output with. Bad input must be a ConfigError
// with a one-line "file:line:col: error: ..." message.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz_contract.hpp"
#include "gradsync/calibrate/calibrate.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > gradsync::fuzz::kMaxInput) return 0;
  const std::string text = gradsync::fuzz::text_of(data, size);
  try {
    const gradsync::NcclTestsLog log = gradsync::parse_nccl_tests_log(text, "fuzz.log");
    // Averages over runs must stay finite (nccl-tests values are capped at 1e12).
    for (const auto& row : log.rows) {
      if (!std::isfinite(row.bytes) || !std::isfinite(row.time_us) ||
          !std::isfinite(row.algbw_GBps) || !std::isfinite(row.busbw_GBps) ||
          !std::isfinite(row.in_place_time_us) || !std::isfinite(row.in_place_busbw_GBps)) {
        std::fprintf(stderr, "\n==gradsync-fuzz== a row of line %d is not finite\n", row.line);
        std::abort();
      }
    }
  } catch (const gradsync::ConfigError& e) {
    gradsync::fuzz::check(e);
  }
  return 0;
}
