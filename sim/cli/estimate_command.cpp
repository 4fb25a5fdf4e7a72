// `gradsync estimate --params 7e9 --dtype fp16 --bandwidth 10Gbps --latency 50us --gpus 8
// [--efficiency 0.6]` (README.md, Commands): the back-of-the-envelope estimate, instant, no
// simulation. Gradient bytes per sync, the naive `S / (B·e) + α` over the typical 50–70 %
// efficiency, and beside it the closed forms of ring, tree, parameter server and (with
// --gpus-per-node and --intra-bandwidth) hierarchical AllReduce, with their algbw/busbw, the
// cost amortized over --accumulation, and with --compute the share of the step the sync takes
// with no overlap. The numbers come from the model (include/gradsync/report/estimate.hpp), the
// options' text becomes a request in estimate_request.hpp (bad input: ConfigError, exit 2);
// this file registers the options and prints what the writers return (format_estimate;
// estimate_json in estimate_report.hpp).
#include <iostream>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "gradsync/report/estimate.hpp"
#include "gradsync/report/estimate_report.hpp"
#include "gradsync/report/estimate_request.hpp"

namespace gradsync::cli {
namespace {

struct EstimateOptions {
  EstimateArguments text;
  bool json = false;
};

void run_estimate(const EstimateOptions& o) {
  const SyncEstimate e = estimate_sync(estimate_request(o.text));
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
  cmd->add_option("--params", opts->text.params,
                  "parameters: 7e9, or with K/M/B/T = 1e3/1e6/1e9/1e12 (7B, 350M)")
      ->type_name("COUNT")
      ->required();
  cmd->add_option("--dtype", opts->text.dtype, "gradient dtype: fp32 | fp16 | bf16 | fp8")
      ->type_name("DTYPE")
      ->required();
  cmd->add_option("--bandwidth", opts->text.bandwidth,
                  "line rate per GPU, with its unit (10Gbps, 50GB/s)")
      ->type_name("RATE")
      ->required();
  cmd->add_option("--latency", opts->text.latency, "latency per algorithm step, with its unit (50us)")
      ->type_name("TIME")
      ->required();
  cmd->add_option("--gpus", opts->text.gpus, "data-parallel GPUs n (parameter server: workers)")
      ->type_name("N")
      ->required();
  cmd->add_option("--efficiency", opts->text.efficiency,
                  "share of line rate carrying payload, (0, 1] (default 0.6)")
      ->type_name("E");
  cmd->add_option("--accumulation", opts->text.accumulation,
                  "micro-batches per optimizer step; one sync per step (default 1)")
      ->type_name("K");
  cmd->add_option("--ps-servers", opts->text.ps_servers, "dedicated parameter servers k (default 1)")
      ->type_name("K");
  cmd->add_option("--gpus-per-node", opts->text.gpus_per_node,
                  "GPUs per node g, for hierarchical AllReduce (with --intra-bandwidth)")
      ->type_name("G");
  cmd->add_option("--intra-bandwidth", opts->text.intra_bandwidth,
                  "intra-node line rate per GPU, with its unit (450GB/s)")
      ->type_name("RATE");
  cmd->add_option("--compute", opts->text.compute,
                  "compute (forward + backward) of one micro-batch on one GPU, with its unit "
                  "(360ms): shows the step share of the sync with no overlap")
      ->type_name("TIME");
  cmd->add_flag("--json", opts->json, "print one JSON object");
  cmd->callback([opts] { run_estimate(*opts); });
}

}  // namespace gradsync::cli
