// The outputs of `gradsync run` (run_report.hpp): the `run --json` document and the text
// report, both pure functions of a scenario's result.
#include "gradsync/report/run_report.hpp"

#include <algorithm>
#include <map>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "gradsync/report/run_json.hpp"
#include "gradsync/topology/topology_summary.hpp"
#include "gradsync/units/units.hpp"

namespace gradsync {
namespace {

// Samples/s with one decimal, or 3 significant digits below 10 (0.03, not 0.0).
std::string rate_text(double v) {
  return v >= 10.0 || v == 0.0 ? fmt::format("{:.1f}", v) : fmt::format("{:.3g}", v);
}

}  // namespace

nlohmann::ordered_json run_result_json(const ScenarioResult& r, const LoadedScenario& loaded) {
  const Scenario& sc = loaded.scenario;
  const StepMetrics& m = r.metrics;
  nlohmann::ordered_json bottleneck = nullptr;
  if (!r.busiest_links.empty())
    bottleneck = {{"link", r.busiest_links[0].name},
                  {"fabric", std::string(to_string(r.busiest_links[0].fabric))},
                  {"utilization", r.busiest_links[0].utilization}};
  nlohmann::ordered_json links = nlohmann::ordered_json::array();
  for (const LinkLoad& l : r.busiest_links)
    links.push_back({{"link", l.name},
                     {"fabric", std::string(to_string(l.fabric))},
                     {"bytes_per_step", l.bytes.bytes()},
                     {"utilization", l.utilization}});
  nlohmann::ordered_json util = nlohmann::ordered_json::array();
  for (const UtilizationSample& u : r.gpu_utilization_timeline)
    util.push_back({{"start_s", u.start.seconds()}, {"end_s", u.end.seconds()},
                    {"utilization", u.utilization}});
  std::map<std::string, int> algorithms;
  for (const auto& a : r.bucket_algorithms) ++algorithms[a];
  nlohmann::ordered_json out = {
      {"scenario", r.scenario_name},
      {"topology", r.topology_name},
      {run_json::kGpus, r.gpus},
      {run_json::kNodes, r.nodes},
      {"data_parallel_ranks", r.ranks},
      {run_json::kStepTime, m.step_time.seconds()},
      {run_json::kComputeTime, m.compute_time.seconds()},
      {run_json::kCommTime, m.comm_time.seconds()},
      {run_json::kExposedComm, m.exposed_comm.seconds()},
      {"comm_compute_ratio", m.comm_compute_ratio},
      {"gpu_utilization", m.gpu_utilization},
      {"samples_per_step", m.samples_per_step},
      {run_json::kSamplesPerS, m.samples_per_s},
      {"scaling_efficiency", m.scaling_efficiency},
      {"scaling_efficiency_vs_one_node",
       r.scaling_vs_one_node ? nlohmann::ordered_json(*r.scaling_vs_one_node) : nullptr},
      {"one_node_samples_per_s",
       r.one_node_samples_per_s ? nlohmann::ordered_json(*r.one_node_samples_per_s) : nullptr},
      {run_json::kGradBytes, r.sync_plan.grad_bytes.bytes()},
      {run_json::kWireBytes, r.sync_plan.wire_bytes.bytes()},
      {"buckets", r.buckets.size()},
      {"algorithms", algorithms},
      {"codec_time_s", r.timeline.codec_time.seconds()},
      {"staleness_steps", r.timeline.staleness_steps},
      {"staleness_updates", m.staleness_updates},
      {"steps", sc.training.steps},
      {"total_time_s", r.total_time.seconds()},
      {run_json::kBottleneck, bottleneck},
      {run_json::kVerdict, std::string(to_string(m.verdict))},
      {"verdict_text", r.verdict_text},
      {"busiest_links", links},
      {"gpu_utilization_timeline", util},
      {"notes", r.sync_plan.notes},
  };
  const MemoryBreakdown& mem = r.memory;
  out["parallel"] = {{"data", std::string(to_string(sc.parallel.data))},
                     {"tensor", r.layout.tensor},
                     {"pipeline", r.layout.pipeline},
                     {"data_parallel_degree", r.layout.data},
                     {"shard_group", r.layout.shard_group},
                     {"schedule", std::string(to_string(sc.parallel.schedule))},
                     {"order", to_string(sc.parallel.order)},
                     {"collectives", r.parallel_algorithms}};
  out[run_json::kMemoryPerGpu] = {{"params", mem.params.bytes()},
                                 {"grads", mem.grads.bytes()},
                                 {"optimizer", mem.optimizer.bytes()},
                                 {"activations", mem.activations.bytes()},
                                 {run_json::kMemoryTotal, mem.total().bytes()}};
  out["activations_known"] = mem.activations_known;
  out[run_json::kGpuMemory] = r.gpu_memory.bytes() > 0.0 ? nlohmann::ordered_json(r.gpu_memory.bytes())
                                                      : nlohmann::ordered_json(nullptr);
  out[run_json::kFitsInMemory] = r.fits_in_memory ? nlohmann::ordered_json(*r.fits_in_memory)
                                           : nlohmann::ordered_json(nullptr);
  auto kind = [](const CommKindStats& k) {
    return nlohmann::ordered_json{{"bytes_per_gpu", k.bytes_per_gpu.bytes()},
                                  {"time_s", k.time.seconds()},
                                  {"exposed_s", k.exposed.seconds()},
                                  {"contention_s", k.contention.seconds()},
                                  {"collectives", k.collectives}};
  };
  out["comm_by_kind"] = {{"dp", kind(r.comm_dp)}, {"tp", kind(r.comm_tp)}, {"pp", kind(r.comm_pp)}};
  out["bubble_s"] = r.bubble.seconds();
  // Cost per sample when the topology carries prices: its capital cost depreciated over
  // kCostAmortization, divided by the samples trained in that time.
  if (const auto cost = cluster_cost(loaded.topology.topology)) {
    out[run_json::kClusterCost] = cost->total;
    out["cost_currency"] = cost->currency;
    out[run_json::kCostPerHour] = cost->total / kCostAmortization.seconds() * 3600.0;
    out[run_json::kCostPerSample] =
        m.samples_per_s > 0.0 ? cost->total / kCostAmortization.seconds() / m.samples_per_s : 0.0;
  }
  return out;
}

std::string run_result_text(const ScenarioResult& r, const LoadedScenario& loaded) {
  std::ostringstream out;
  const Scenario& sc = loaded.scenario;
  const StepMetrics& m = r.metrics;
  const StepTimeline& t = r.timeline;
  std::map<std::string, int> algorithms;
  for (const auto& a : r.bucket_algorithms) ++algorithms[a];
  std::string algos;
  for (const auto& [name, count] : algorithms)
    algos += fmt::format("{}{} ×{}", algos.empty() ? "" : ", ", name, count);

  const std::string servers =
      r.node_sizes.empty()
          ? fmt::format("{} node{} × {}", r.nodes, r.nodes == 1 ? "" : "s", r.ranks_per_node)
          : fmt::format("{} nodes: {}", r.nodes, fmt::join(r.node_sizes, " + "));
  out << fmt::format("{} on {}: {} GPUs ({}), {} data-parallel ranks\n", r.scenario_name,
                     r.topology_name, r.gpus, servers, r.ranks);
  const bool plain = sc.parallel.plain();
  if (plain) {
    out << fmt::format("model: {:.3g} parameters, {} gradients: {} per sync in {} buckets\n",
                       sc.model.total_params(), to_string(sc.model.grad_dtype),
                       format_size(r.sync_plan.grad_bytes), r.buckets.size());
    out << fmt::format("sync: {} ({}), overlap {}, compression {}, accumulation {}\n",
                       to_string(sc.sync.strategy), algos, to_string(sc.sync.overlap),
                       to_string(sc.sync.compression.method), sc.training.accumulation);
  } else {
    const ParallelLayout& l = r.layout;
    out << fmt::format(
        "layout: data {} x {}{}, tensor {}, pipeline {}{}, ranks {} (innermost first)\n",
        to_string(sc.parallel.data), l.data,
        sc.parallel.data == DataParallelism::Hsdp
            ? fmt::format(" (shard groups of {}, {} replicas)", l.shard_group, l.replicas)
            : std::string(),
        l.tensor, l.pipeline,
        l.pipeline > 1 ? fmt::format(" ({}, {} micro-batches)", to_string(sc.parallel.schedule),
                                     sc.training.accumulation)
                       : std::string(),
        to_string(sc.parallel.order));
    out << fmt::format("model: {:.3g} parameters, {} gradients: {} per GPU to synchronize\n",
                       sc.model.total_params(), to_string(sc.model.grad_dtype),
                       format_size(r.sync_plan.grad_bytes));
    std::string names;
    for (const auto& a : r.parallel_algorithms) names += (names.empty() ? "" : ", ") + a;
    out << "collectives: " << names << '\n';
  }
  {
    const MemoryBreakdown& mem = r.memory;
    out << fmt::format(
        "memory per GPU: {} = params {} + grads {} + optimizer {} + activations {}{}",
        format_size(mem.total()), format_size(mem.params), format_size(mem.grads),
        format_size(mem.optimizer), format_size(mem.activations),
        mem.activations_known ? "" : " (unknown: give model.hidden and seq_len)");
    if (r.fits_in_memory)
      out << fmt::format(" of {}: {}", format_size(r.gpu_memory),
                         *r.fits_in_memory ? "fits" : "DOES NOT FIT");
    out << '\n';
  }
  if (r.sync_plan.wire_bytes != r.sync_plan.grad_bytes)
    out << fmt::format("wire: {} per sync after compression\n",
                       format_size(r.sync_plan.wire_bytes));
  for (const auto& note : r.sync_plan.notes) out << "note: " << note << '\n';
  out << '\n';
  const double step = m.step_time.seconds();
  auto row = [&](const std::string& label, Seconds value, const std::string& extra) {
    out << fmt::format("  {:<22}{:>12}   {}\n", label, format_time(value), extra);
  };
  row("step time", m.step_time, fmt::format("({} step{}: {})", sc.training.steps,
                                            sc.training.steps == 1 ? "" : "s",
                                            format_time(r.total_time)));
  const bool async = sc.sync.strategy == SyncStrategy::AsyncParameterServer;
  if (!plain)
    row("compute", m.compute_time,
        fmt::format("{} of the step: 1/{} of a stage's layers over {} micro-batches, + its "
                    "optimizer share{}",
                    format_percent(step > 0 ? m.compute_time.seconds() / step : 0), r.layout.tensor,
                    sc.training.accumulation,
                    sc.parallel.activation_checkpointing ? " (backward recomputes forward)" : ""));
  else
    row("compute", m.compute_time,
        fmt::format("{} of the step: {} × (forward {} + backward {}){}",
                    format_percent(step > 0 ? m.compute_time.seconds() / step : 0),
                    sc.training.accumulation, format_time(sc.compute.forward),
                    format_time(sc.compute.backward),
                    async ? " (the servers run the optimizer)"
                          : " + optimizer " + format_time(sc.compute.optimizer)));
  row("communication", m.comm_time,
      fmt::format("sum of the bucket collectives ({:.2f}× compute)", m.comm_compute_ratio));
  row("exposed communication", m.exposed_comm,
      fmt::format("{} of the step (GPU waiting for gradients)",
                  format_percent(step > 0 ? m.exposed_comm.seconds() / step : 0)));
  if (t.codec_time.seconds() > 0) row("compression codec", t.codec_time, "encode + decode");
  if (!plain) {
    auto kind_row = [&](const char* label, const CommKindStats& k) {
      if (k.collectives == 0) return;
      const std::string shared =
          k.contention.seconds() > 1e-3 * k.time.seconds()
              ? fmt::format(" (+{} sharing links with other traffic)", format_time(k.contention))
              : "";
      row(label, k.exposed,
          fmt::format("exposed of {}{} in {} collectives, {} sent per GPU", format_time(k.time),
                      shared, k.collectives, format_size(k.bytes_per_gpu)));
    };
    kind_row("  data parallel", r.comm_dp);
    kind_row("  tensor parallel", r.comm_tp);
    kind_row("  pipeline p2p", r.comm_pp);
    if (sc.parallel.pipeline > 1)
      row("pipeline bubble", r.bubble,
          fmt::format("{} of the step (stages idle, waiting for one another)",
                      format_percent(step > 0 ? r.bubble.seconds() / step : 0)));
  }
  if (async)
    out << fmt::format("  {:<22}{:>12}   steps a worker runs ahead of its own update; "
                       "{} updates from all workers in between (async-ps)\n",
                       "staleness", t.staleness_steps, m.staleness_updates);
  out << fmt::format("  {:<22}{:>12}\n", "GPU utilization", format_percent(m.gpu_utilization));
  out << fmt::format("  {:<22}{:>12}   samples/s ({:.0f} samples per step)\n",
                     "throughput", rate_text(m.samples_per_s), m.samples_per_step);
  // Above 1 only where the layout divides work one GPU alone does in full: the optimizer step,
  // sharded over the data-parallel ranks (ZeRO, FSDP, HSDP).
  out << fmt::format("  {:<22}{:>12}   vs {} × one GPU with no communication{}\n",
                     "scaling efficiency", format_percent(m.scaling_efficiency),
                     plain ? r.ranks : r.gpus,
                     m.scaling_efficiency >= 1.005  // printed above 100 %
                         ? " (above 100 %: each GPU steps only its shard of the optimizer)"
                         : "");
  if (r.nodes > 1 && r.one_node_samples_per_s.value_or(0.0) > 0.0) {
    // Servers filled unevenly: GPUs over a whole server's (8 + 4: 1.5 × one node of 8 GPUs).
    const std::uint32_t fullest =
        r.node_sizes.empty() ? 0 : *std::max_element(r.node_sizes.begin(), r.node_sizes.end());
    const std::string worth =
        fullest == 0 ? fmt::format("{}", r.nodes)
                     : fmt::format("{:g}", static_cast<double>(r.gpus) / fullest);
    out << fmt::format("  {:<22}{:>12}   vs {} × one node{} ({} samples/s)\n", "",
                       format_percent(*r.scaling_vs_one_node), worth,
                       fullest == 0 ? std::string() : fmt::format(" of {} GPUs", fullest),
                       rate_text(*r.one_node_samples_per_s));
  }
  if (const auto cost = cluster_cost(loaded.topology.topology); cost && m.samples_per_s > 0.0)
    out << fmt::format("  {:<22}{:>12.3g}   {} per sample ({:.0f} {} cluster depreciated over "
                       "3 years: {:.2f} {}/hour)\n",
                       "cost", cost->total / kCostAmortization.seconds() / m.samples_per_s,
                       cost->currency, cost->total, cost->currency,
                       cost->total / kCostAmortization.seconds() * 3600.0, cost->currency);
  out << "\nverdict: " << r.verdict_text << "\n";
  if (!r.busiest_links.empty()) {
    out << "\nbusiest links over one step (payload, busier direction):\n";
    for (std::size_t i = 0; i < r.busiest_links.size() && i < 5; ++i) {
      const LinkLoad& l = r.busiest_links[i];
      out << fmt::format("  {:<34} {:<11} {:>10} per step  {:>5} utilized\n", l.name,
                         to_string(l.fabric), format_size(l.bytes), format_percent(l.utilization));
    }
  }
  if (!r.gpu_utilization_timeline.empty()) {
    out << "\nGPU utilization over one step (as nvidia-smi dmon would sample it):\n  ";
    static const char* kBars[] = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
    for (const auto& u : r.gpu_utilization_timeline)
      out << kBars[static_cast<int>(u.utilization * 8.0 + 0.5)];
    out << fmt::format("  (0 … {}, {} per column)\n", format_time(m.step_time),
                       format_time(m.step_time / static_cast<double>(
                                                     r.gpu_utilization_timeline.size())));
  }
  return out.str();
}

}  // namespace gradsync
