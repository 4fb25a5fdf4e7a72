// Measured vs simulated nccl-tests rows (see nccl_tests_compare.hpp).
#include "gradsync/calibrate/nccl_tests_compare.hpp"

#include <algorithm>
#include <cmath>

namespace gradsync {

bool in_band(const SizeBand& b, double bytes) {
  if (b.name == kNcclTestsBands[0].name) return bytes <= b.hi_bytes;
  return bytes >= b.lo_bytes && bytes < b.hi_bytes;
}

double ComparedRow::time_ratio() const {
  return measured_time_us > 0 ? simulated_time_us / measured_time_us : 0.0;
}

double ComparedRow::busbw_error() const {
  return simulated_time_us > 0 ? measured_time_us / simulated_time_us - 1.0 : 0.0;
}

std::vector<BandSummary> summarize_bands(const std::vector<ComparedRow>& rows) {
  std::vector<BandSummary> out;
  for (const SizeBand& band : kNcclTestsBands) {
    std::vector<double> errors;
    BandSummary s{band};
    for (const ComparedRow& r : rows) {
      if (!in_band(band, r.bytes) || !(r.measured_time_us > 0) || !(r.simulated_time_us > 0))
        continue;
      const double e = r.busbw_error();
      errors.push_back(std::abs(e));
      if (s.rows == 0 || std::abs(e) > s.worst_abs_error) {
        s.worst_abs_error = std::abs(e);
        s.worst_error = e;
        s.worst_bytes = r.bytes;
      }
      const double t = r.time_ratio();
      s.min_time_ratio = s.rows == 0 ? t : std::min(s.min_time_ratio, t);
      s.max_time_ratio = s.rows == 0 ? t : std::max(s.max_time_ratio, t);
      ++s.rows;
    }
    if (errors.empty()) continue;
    std::sort(errors.begin(), errors.end());
    const std::size_t m = errors.size() / 2;
    s.median_abs_error = errors.size() % 2 ? errors[m] : (errors[m - 1] + errors[m]) / 2.0;
    out.push_back(s);
  }
  return out;
}

}  // namespace gradsync
