// `gradsync estimate --params 7e9 --dtype fp16 --bandwidth 10Gbps --latency 50us --gpus 8
// [--efficiency 0.6]` (README.md, Commands): the back-of-the-envelope estimate, instant, no
// simulation. Gradient bytes per sync, the naive `S / (B·e) + α` over the typical 50–70 %
// efficiency, and beside it the closed forms of ring, tree, parameter server and (with
// --gpus-per-node and --intra-bandwidth) hierarchical AllReduce, with their algbw/busbw, the
// cost amortized over --accumulation, and with --compute the share of the step the sync takes
// with no overlap. The numbers come from the model (include/gradsync/estimate.hpp); this file
// parses options, rejects bad input as ConfigError (exit 2) and prints what the writers return
// (format_estimate; estimate_json in estimate_report.hpp).
#include <charconv>
#include <cmath>
#include <iostream>
#include <memory>
#include <string>
#include <system_error>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.hpp"
#include "gradsync/config_error.hpp"
#include "gradsync/estimate.hpp"
#include "gradsync/estimate_report.hpp"

namespace gradsync::cli {
namespace {

struct EstimateOptions {
  std::string params;
  std::string dtype;
  std::string bandwidth;
  std::string latency;
  std::string gpus;
  std::string efficiency;  // default kDefaultEstimateEfficiency
  std::string accumulation;
  std::string ps_servers;
  std::string gpus_per_node;
  std::string intra_bandwidth;
  std::string compute;
  bool json = false;
};

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

EstimateRequest make_request(const EstimateOptions& o) {
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

void run_estimate(const EstimateOptions& o) {
  const SyncEstimate e = estimate_sync(make_request(o));
  if (o.json) {
    std::cout << estimate_json(e).dump(2) << '\n';
    return;
  }
  std::cout << format_estimate(e);
}

}  // namespace

void add_estimate_command(CLI::App& app) {
  auto opts = std::make_shared<EstimateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "estimate", "back-of-the-envelope sync time from closed forms (instant, no simulation)");
  cmd->add_option("--params", opts->params,
                  "parameters: 7e9, or with K/M/B/T = 1e3/1e6/1e9/1e12 (7B, 350M)")
      ->type_name("COUNT")
      ->required();
  cmd->add_option("--dtype", opts->dtype, "gradient dtype: fp32 | fp16 | bf16 | fp8")
      ->type_name("DTYPE")
      ->required();
  cmd->add_option("--bandwidth", opts->bandwidth,
                  "line rate per GPU, with its unit (10Gbps, 50GB/s)")
      ->type_name("RATE")
      ->required();
  cmd->add_option("--latency", opts->latency, "latency per algorithm step, with its unit (50us)")
      ->type_name("TIME")
      ->required();
  cmd->add_option("--gpus", opts->gpus, "data-parallel GPUs n (parameter server: workers)")
      ->type_name("N")
      ->required();
  cmd->add_option("--efficiency", opts->efficiency,
                  "share of line rate carrying payload, (0, 1] (default 0.6)")
      ->type_name("E");
  cmd->add_option("--accumulation", opts->accumulation,
                  "micro-batches per optimizer step; one sync per step (default 1)")
      ->type_name("K");
  cmd->add_option("--ps-servers", opts->ps_servers, "dedicated parameter servers k (default 1)")
      ->type_name("K");
  cmd->add_option("--gpus-per-node", opts->gpus_per_node,
                  "GPUs per node g, for hierarchical AllReduce (with --intra-bandwidth)")
      ->type_name("G");
  cmd->add_option("--intra-bandwidth", opts->intra_bandwidth,
                  "intra-node line rate per GPU, with its unit (450GB/s)")
      ->type_name("RATE");
  cmd->add_option("--compute", opts->compute,
                  "compute (forward + backward) of one micro-batch on one GPU, with its unit "
                  "(360ms): shows the step share of the sync with no overlap")
      ->type_name("TIME");
  cmd->add_flag("--json", opts->json, "print one JSON object");
  cmd->callback([opts] { run_estimate(*opts); });
}

}  // namespace gradsync::cli
