// `gradsync import-trace TRACE -o SCENARIO [--topology T] [--rank R] [--model M] ...`: one
// rank's PyTorch profiler trace of DDP training steps (trace_workload.hpp lists the events
// read) written as a scenario that replays it; with --topology, the buckets are simulated on
// that cluster and printed beside the trace's own all-reduce times. What is read besides the
// trace comes from trace_inputs.hpp, what is printed from trace_report.hpp.
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.hpp"
#include "gradsync/scenario/scenario.hpp"
#include "gradsync/io/command_files.hpp"
#include "gradsync/scenario/model_presets.hpp"
#include "gradsync/trace/profiler_trace.hpp"
#include "gradsync/config/scenario_loader.hpp"
#include "gradsync/scenario/scenario_runner.hpp"
#include "gradsync/trace/trace_inputs.hpp"
#include "gradsync/report/trace_report.hpp"
#include "gradsync/trace/trace_scenario.hpp"
#include "gradsync/trace/trace_workload.hpp"

namespace gradsync::cli {
namespace {

namespace fs = std::filesystem;

struct ImportOptions {
  std::string trace;
  std::string output;
  std::string topology;
  std::optional<std::uint32_t> rank;
  std::string model;
  std::optional<std::uint32_t> world_size;
  std::string grad_dtype;
  std::uint32_t samples = 1;
};

[[noreturn]] void fail_option(const std::string& option, const std::string& message) {
  throw ConfigError(SourceMark{"gradsync import-trace " + option, 0, 0}, message);
}

// The model's tensors in backward order (--model: a preset or a scenario file).
std::vector<double> model_tensors(const std::string& model) {
  if (const ModelPreset* p = find_model_preset(model))
    return backward_tensors(preset_layers(*p, preset_dims(*p), Seconds(1.0), Seconds(2.0)));
  std::error_code ec;
  if (!fs::is_regular_file(model, ec))
    fail_option("--model", fmt::format("'{}' is neither a preset (gradsync models) nor a scenario "
                                "file", model));
  return backward_tensors(load_scenario_file(model).scenario.model.layers);
}

void run_import(const ImportOptions& o) {
  TraceImportOptions opts;
  opts.world_size = o.world_size;
  if (!o.grad_dtype.empty()) opts.grad_dtype = grad_dtype_from_string(o.grad_dtype);
  if (!o.model.empty()) opts.model_tensors = model_tensors(o.model);
  const fs::path trace_path = rank_trace_file(o.trace, o.rank);
  const ProfilerTrace trace = read_profiler_trace(trace_path);
  if (o.rank && trace.rank && *trace.rank != *o.rank)
    fail_option("--rank", fmt::format("{} is the trace of rank {} (distributedInfo.rank)",
                               trace_path.string(), *trace.rank));
  const TraceWorkload w = analyze_ddp_trace(trace, opts);
  const std::uint32_t rank = trace.rank.value_or(o.rank.value_or(0));

  const fs::path out = fs::absolute(o.output);
  TraceScenarioOptions so;
  so.name = out.stem().string();
  so.trace = trace_path.filename().string();
  so.rank = rank;
  so.samples = o.samples;
  if (!o.topology.empty()) so.topology = scenario_topology_path(o.topology, out);
  write_output_file(out, trace_scenario_yaml(w, so));
  std::cout << trace_summary_text(w, trace_path.string(), rank);
  std::cout << fmt::format("wrote {}\n", o.output);
  if (o.topology.empty()) {
    std::cout << "(set its topology: to the cluster to replay on, or give --topology to "
                 "compare the buckets with a simulation)\n";
    return;
  }
  const LoadedScenario loaded = load_scenario_file(out);
  const ScenarioResult result = run_scenario(loaded);
  std::cout << trace_comparison_text(w, result, loaded.topology.topology.name());
}

}  // namespace

void add_import_trace_command(CLI::App& app) {
  auto o = std::make_shared<ImportOptions>();
  auto* cmd = app.add_subcommand(
      "import-trace",
      "Write a scenario from a PyTorch profiler trace of DDP training steps (prof."
      "export_chrome_trace; Kineto JSON or the legacy list, .gz too)");
  cmd->add_option("TRACE", o->trace, "one rank's trace, or a folder of per-rank traces")
      ->required();
  cmd->add_option("-o,--output", o->output, "the scenario to write")->required();
  cmd->add_option("--topology", o->topology,
                  "cluster to replay on: written into the scenario, and the buckets are "
                  "simulated on it beside the trace's own times");
  cmd->add_option("--rank", o->rank, "the rank to read from a folder of traces (default 0)");
  cmd->add_option("--model", o->model,
                  "preset or scenario file of the traced model: its parameter tensors size "
                  "the buckets when the trace records no sizes (torch without Kineto)");
  cmd->add_option("--world-size", o->world_size, "ranks in the run, when the trace does not say")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--grad-dtype", o->grad_dtype,
                  "gradient dtype when the trace does not say (default fp32)")
      ->check(CLI::IsMember(grad_dtype_names()));
  cmd->add_option("--samples", o->samples, "samples per micro-batch of the traced run")
      ->check(CLI::Range(1, 1 << 24));
  cmd->callback([o] { run_import(*o); });
}

}  // namespace gradsync::cli
