// `gradsync estimate`'s option text -> EstimateRequest (estimate_request.hpp).
#include "gradsync/report/estimate_request.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <system_error>

#include <fmt/format.h>

#include "gradsync/units/config_error.hpp"
#include "gradsync/units/units.hpp"

namespace gradsync {
namespace {

SourceMark cli_mark(const std::string& option) {
  return SourceMark{"gradsync estimate " + option, 0, 0};
}

[[noreturn]] void bad(const std::string& option, const std::string& what) {
  throw ConfigError(cli_mark(option), what);
}

template <typename Parse>
auto with_unit(const std::string& option, const std::string& text, Parse parse) {
  try {
    return parse(text);
  } catch (const UnitError& e) {
    bad(option, e.what());
  }
}

// A plain number (locale-independent), e.g. "0.6" or "1e3".
double parse_number(const std::string& option, const std::string& text) {
  double value = 0.0;
  const char* const last = text.data() + text.size();
  const auto [end, ec] = std::from_chars(text.data(), last, value, std::chars_format::general);
  if (ec != std::errc() || end != last || !std::isfinite(value))
    bad(option, fmt::format("\"{}\" is not a number", text));
  return value;
}

// A whole count in [lo, hi].
std::uint32_t parse_count(const std::string& option, const std::string& text, double lo,
                          double hi) {
  const double value = parse_number(option, text);
  if (value != std::floor(value) || value < lo || value > hi)
    bad(option, fmt::format("\"{}\" must be a whole number from {:.0f} to {:.0f}", text, lo, hi));
  return static_cast<std::uint32_t>(value);
}

}  // namespace

EstimateRequest estimate_request(const EstimateArguments& o) {
  EstimateRequest r;
  r.params = with_unit("--params", o.params, parse_param_count);
  if (!(r.params > 0.0) || r.params > kMaxEstimateParams)
    bad("--params", fmt::format("{} parameters is outside (0, 1e14]", o.params));
  const auto dtype = grad_dtype_from_string(o.dtype);
  if (!dtype) bad("--dtype", fmt::format("unknown dtype \"{}\" (fp32, fp16, bf16 or fp8)", o.dtype));
  r.dtype = *dtype;
  r.bandwidth = with_unit("--bandwidth", o.bandwidth, parse_rate);
  if (!(r.bandwidth.bytes_per_second() > 0.0)) bad("--bandwidth", "bandwidth must be positive");
  r.latency = with_unit("--latency", o.latency, parse_time);
  r.gpus = parse_count("--gpus", o.gpus, 1, kMaxEstimateGpus);
  if (!o.efficiency.empty()) {
    r.efficiency = parse_number("--efficiency", o.efficiency);
    if (!(r.efficiency > 0.0) || r.efficiency > 1.0)
      bad("--efficiency", fmt::format("{} is outside (0, 1] (a share of line rate, e.g. 0.6)",
                                      o.efficiency));
  }
  if (!o.accumulation.empty())
    r.accumulation = parse_count("--accumulation", o.accumulation, 1, 1e6);
  if (!o.ps_servers.empty()) r.ps_servers = parse_count("--ps-servers", o.ps_servers, 1, 256);
  if (!o.gpus_per_node.empty()) {
    r.gpus_per_node = parse_count("--gpus-per-node", o.gpus_per_node, 1, 1024);
    if (r.gpus % *r.gpus_per_node != 0)
      bad("--gpus-per-node", fmt::format("{} GPUs per node does not divide --gpus {}",
                                         *r.gpus_per_node, r.gpus));
  }
  if (!o.intra_bandwidth.empty()) {
    r.intra_bandwidth = with_unit("--intra-bandwidth", o.intra_bandwidth, parse_rate);
    if (!(r.intra_bandwidth->bytes_per_second() > 0.0))
      bad("--intra-bandwidth", "bandwidth must be positive");
  }
  if (!o.compute.empty()) r.compute = with_unit("--compute", o.compute, parse_time);
  return r;
}

}  // namespace gradsync
