// `gradsync import-trace TRACE -o SCENARIO [--topology T] [--rank R] [--model M] ...`: one
// rank's PyTorch profiler trace of DDP training steps (trace_workload.hpp lists the events
// read) written as a scenario that replays it; with --topology, the buckets are simulated on
// that cluster and printed beside the trace's own all-reduce times.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <regex>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.hpp"
#include "gradsync/model_presets.hpp"
#include "gradsync/profiler_trace.hpp"
#include "gradsync/scenario_config.hpp"
#include "gradsync/scenario_runner.hpp"
#include "gradsync/trace_scenario.hpp"
#include "gradsync/trace_workload.hpp"

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

[[noreturn]] void fail(const std::string& option, const std::string& message) {
  throw ConfigError(SourceMark{"gradsync import-trace " + option, 0, 0}, message);
}

// A directory of per-rank traces: the file of --rank (its distributedInfo.rank, else the
// digits after "rank" or at the end of its name).
fs::path pick_trace(const ImportOptions& o) {
  std::error_code ec;
  if (!fs::is_directory(o.trace, ec)) return o.trace;
  const std::uint32_t want = o.rank.value_or(0);
  const std::regex rank_digits(R"((?:rank[-_]?|[^0-9])(\d+)(?:\.[a-z.]+)?$)",
                               std::regex::icase);
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(o.trace, ec))
    if (entry.is_regular_file()) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    std::smatch m;
    const std::string name = f.filename().string();
    if (std::regex_search(name, m, rank_digits) && std::stoul(m[1].str()) == want) return f;
  }
  fail("TRACE", fmt::format("{} is a directory and no file in it is named for rank {} "
                            "(e.g. rank-{}.json)", o.trace, want, want));
}

// The model's tensors in backward order (--model: a preset or a scenario file).
std::vector<double> model_tensors(const std::string& model) {
  std::vector<LayerSpec> layers;
  if (const ModelPreset* p = find_model_preset(model)) {
    layers = preset_layers(*p, preset_dims(*p), Seconds(1.0), Seconds(2.0));
  } else {
    std::error_code ec;
    if (!fs::is_regular_file(model, ec))
      fail("--model", fmt::format("'{}' is neither a preset (gradsync models) nor a scenario "
                                  "file", model));
    layers = load_scenario_file(model).scenario.model.layers;
  }
  std::vector<double> out;
  for (std::size_t i = layers.size(); i-- > 0;) {
    const LayerSpec& l = layers[i];
    if (!(l.params > 0.0)) continue;
    if (l.tensors.empty()) out.push_back(l.params);
    for (std::size_t k = l.tensors.size(); k-- > 0;)
      if (l.tensors[k] > 0.0) out.push_back(l.tensors[k]);
  }
  return out;
}

std::string ms(double us) { return format_time(Seconds(us * 1e-6)); }

void print_summary(const TraceWorkload& w, const std::string& trace, std::uint32_t rank) {
  double params = w.total_elements();
  std::cout << fmt::format(
      "{}: rank {} of {}, {} format, {} step(s) averaged ({}{})\n", trace, rank, w.world_size,
      w.format == TraceFormat::Kineto ? "Kineto" : "legacy", w.steps.size(), w.steps.front(),
      w.steps.size() > 1 ? " … " + w.steps.back() : "");
  std::cout << fmt::format("  model: {} layers, {:.0f} parameters, {} gradients, {} buckets\n",
                           w.layers.size(), params, to_string(w.grad_dtype), w.buckets.size());
  std::cout << fmt::format("  step {} = forward {} + backward {} + waiting for gradients {} + "
                           "optimizer {} + other {}\n",
                           ms(w.step_us), ms(w.forward_us), ms(w.backward_us), ms(w.wait_us),
                           ms(w.optimizer_us), ms(w.other_us));
  std::cout << fmt::format("  sizes: {}\n", w.size_source);
  for (const std::string& n : w.notes) std::cout << "  note: " << n << '\n';
}

void print_comparison(const TraceWorkload& w, const ScenarioResult& r, const std::string& topo) {
  std::cout << fmt::format("\nbuckets: measured ({}) and simulated on {} ({} GPUs)\n",
                           w.measured_source.empty() ? "not in the trace" : w.measured_source,
                           topo, r.gpus);
  std::cout << fmt::format("  {:>6} {:>11} {:>12} {:>12} {:>12} {:>9}\n", "bucket", "bytes",
                           "ready at", "measured", "simulated", "sim/meas");
  const double bpe = bytes_per_element(w.grad_dtype);
  std::vector<double> ratios;
  for (std::size_t i = 0; i < w.buckets.size() && i < r.collective_times.size(); ++i) {
    const TraceBucket& b = w.buckets[i];
    const double sim = r.collective_times[i].seconds() * 1e6;
    std::string meas = "–", ratio = "–";
    if (b.measured_us && *b.measured_us > 0.0) {
      meas = ms(*b.measured_us);
      ratio = fmt::format("{:.3g}", sim / *b.measured_us);
      ratios.push_back(sim / *b.measured_us);
    }
    std::cout << fmt::format("  {:>6} {:>11} {:>12} {:>12} {:>12} {:>9}\n", i,
                             format_size(Bytes(b.elements * bpe)), ms(b.ready_us), meas, ms(sim),
                             ratio);
  }
  if (!ratios.empty()) {
    std::sort(ratios.begin(), ratios.end());
    std::cout << fmt::format("  median simulated/measured: {:.3g} over {} buckets\n",
                             ratios[ratios.size() / 2], ratios.size());
  }
  const double replayed = w.forward_us + w.backward_us + w.wait_us + w.optimizer_us;
  std::cout << fmt::format(
      "step: traced {} (forward + backward + wait + optimizer {}), simulated {} (exposed "
      "communication {} against {} traced)\n",
      ms(w.step_us), ms(replayed), format_time(r.metrics.step_time),
      format_time(r.metrics.exposed_comm), ms(w.wait_us));
}

void run_import(const ImportOptions& o) {
  TraceImportOptions opts;
  opts.world_size = o.world_size;
  if (!o.grad_dtype.empty()) opts.grad_dtype = grad_dtype_from_string(o.grad_dtype);
  if (!o.model.empty()) opts.model_tensors = model_tensors(o.model);
  const fs::path trace_path = pick_trace(o);
  const ProfilerTrace trace = read_profiler_trace(trace_path);
  if (o.rank && trace.rank && *trace.rank != *o.rank)
    fail("--rank", fmt::format("{} is the trace of rank {} (distributedInfo.rank)",
                               trace_path.string(), *trace.rank));
  const TraceWorkload w = analyze_ddp_trace(trace, opts);
  const std::uint32_t rank = trace.rank.value_or(o.rank.value_or(0));

  const fs::path out = fs::absolute(o.output);
  TraceScenarioOptions so;
  so.name = out.stem().string();
  so.trace = trace_path.filename().string();
  so.rank = rank;
  so.samples = o.samples;
  if (!o.topology.empty()) {
    std::error_code ec;
    if (!fs::is_regular_file(o.topology, ec))
      fail("--topology", fmt::format("cannot open '{}'", o.topology));
    // As the user wrote it: an absolute path stays absolute, a relative one is made relative
    // to the scenario's folder (where the loader resolves it).
    const fs::path rel = fs::relative(fs::absolute(o.topology), out.parent_path(), ec);
    so.topology = fs::path(o.topology).is_absolute() || ec || rel.empty()
                      ? fs::path(o.topology).lexically_normal().string()
                      : rel.string();
  }
  write_output_file(out, trace_scenario_yaml(w, so));
  print_summary(w, trace_path.string(), rank);
  std::cout << fmt::format("wrote {}\n", o.output);
  if (o.topology.empty()) {
    std::cout << "(set its topology: to the cluster to replay on, or give --topology to "
                 "compare the buckets with a simulation)\n";
    return;
  }
  const LoadedScenario loaded = load_scenario_file(out);
  const ScenarioResult result = run_scenario(loaded);
  print_comparison(w, result, loaded.topology.topology.name());
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
      ->check(CLI::IsMember({"fp32", "fp16", "bf16", "fp8"}));
  cmd->add_option("--samples", o->samples, "samples per micro-batch of the traced run")
      ->check(CLI::Range(1, 1 << 24));
  cmd->callback([o] { run_import(*o); });
}

}  // namespace gradsync::cli
