// Scenario runner (see scenario_runner.hpp).
#include "gradsync/scenario/scenario_runner.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "gradsync/units/config_error.hpp"
#include "gradsync/collective/mesh_ring_orders.hpp"
#include "gradsync/scenario/memory_model.hpp"
#include "gradsync/fabric/nccl_tuner.hpp"
#include "collective_timer.hpp"
#include "parallel_runner.hpp"

namespace gradsync {

using detail::algorithms_for;
using detail::CollectiveTimer;
using detail::plan_or_fail;
using detail::set_collnet;
using detail::set_in_switch;

namespace {

std::vector<UtilizationSample> utilization_timeline(const StepTimeline& t, int samples) {
  std::vector<UtilizationSample> out;
  const double step = t.step_time.seconds();
  if (!(step > 0.0)) return out;
  for (int i = 0; i < samples; ++i) {
    const double a = step * i / samples;
    const double b = step * (i + 1) / samples;
    double busy = 0.0;
    for (const ComputeInterval& c : t.compute)
      busy += std::max(0.0, std::min(b, c.end.seconds()) - std::max(a, c.start.seconds()));
    out.push_back(UtilizationSample{Seconds(a), Seconds(b), std::min(1.0, busy / (b - a))});
  }
  return out;
}

// Busiest links over one step, the utilization timeline and the verdict users act on
// (the 30 % rule, step_schedule.hpp), from the payload per link and direction.
void finish(ScenarioResult& result, const Topology& topo, const std::vector<double>& link_a,
            const std::vector<double>& link_b) {
  const double step_s = result.timeline.step_time.seconds();
  for (LinkId l = 0; l < topo.links().size(); ++l) {
    const double bytes = std::max(link_a[l], link_b[l]);
    if (bytes <= 0.0) continue;
    const Link& link = topo.link(l);
    const bool forward = link_a[l] >= link_b[l];
    LinkLoad load;
    load.link = l;
    load.name = forward ? topo.device(link.a).name + " -> " + topo.device(link.b).name
                        : topo.device(link.b).name + " -> " + topo.device(link.a).name;
    load.fabric = link.fabric;
    load.bytes = Bytes(bytes);
    load.utilization =
        step_s > 0.0 ? bytes / (link.effective_bandwidth().bytes_per_second() * step_s) : 0.0;
    result.busiest_links.push_back(load);
  }
  std::sort(result.busiest_links.begin(), result.busiest_links.end(),
            [](const LinkLoad& a, const LinkLoad& b) { return a.utilization > b.utilization; });
  if (result.busiest_links.size() > 10) result.busiest_links.resize(10);
  result.gpu_utilization_timeline = utilization_timeline(result.timeline, 20);

  // The verdict users act on: communication-bound above 30 % exposed (step_schedule.hpp).
  const double exposed_share =
      step_s > 0.0 ? result.timeline.exposed_comm.seconds() / step_s : 0.0;
  const std::string bottleneck =
      result.busiest_links.empty()
          ? std::string("no network traffic")
          : fmt::format("busiest link {} ({}, {:.0f} % utilized)", result.busiest_links[0].name,
                        to_string(result.busiest_links[0].fabric),
                        100.0 * result.busiest_links[0].utilization);
  if (result.metrics.verdict == Verdict::CommunicationBound)
    result.verdict_text = fmt::format(
        "communication-bound: exposed communication is {:.0f} % of the step (> {:.0f} %); "
        "adding GPUs buys little until the network, overlap, accumulation or compression "
        "improves; {}",
        100.0 * exposed_share, 100.0 * kCommunicationBoundShare, bottleneck);
  else
    result.verdict_text = fmt::format(
        "compute-bound: exposed communication is {:.0f} % of the step (<= {:.0f} %); {}",
        100.0 * exposed_share, 100.0 * kCommunicationBoundShare, bottleneck);
  if (result.nodes > 1 && result.one_node_samples_per_s.value_or(0.0) > 0.0 &&
      result.metrics.samples_per_s < *result.one_node_samples_per_s)
    result.verdict_text += fmt::format(
        "; SLOWER than one server: {:.1f} samples/s on {} servers vs {:.1f} on one",
        result.metrics.samples_per_s, result.nodes, *result.one_node_samples_per_s);
  if (step_s > 0.0 && result.bubble.seconds() > 0.0)
    result.verdict_text += fmt::format("; pipeline bubble {:.0f} % of the step",
                                       100.0 * result.bubble.seconds() / step_s);
  if (result.fits_in_memory && !*result.fits_in_memory) {
    // What to change depends on what fills the memory.
    const MemoryBreakdown& mem = result.memory;
    const Bytes states = mem.params + mem.grads + mem.optimizer;
    const std::string hint =
        mem.activations > states
            ? fmt::format("activations take {}: parallel.activation_checkpointing, fewer "
                          "samples per micro-batch, or tensor/pipeline parallelism",
                          format_size(mem.activations))
        : result.layout.shard_group <= 1
            ? std::string("shard with parallel.data: zero1/zero2/fsdp, or add tensor/pipeline "
                          "parallelism")
            : fmt::format("model states take {} sharded over {} GPUs: more GPUs, or "
                          "tensor/pipeline parallelism",
                          format_size(states), result.layout.shard_group);
    result.verdict_text = fmt::format(
        "does not fit in memory: {} per GPU needed, the GPU has {} ({}); if it did: {}",
        format_size(result.memory.total()), format_size(result.gpu_memory), hint,
        result.verdict_text);
  }
}

// Memory per GPU and whether it fits (the scenario's memory:, else the topology's gpu:).
void add_memory(ScenarioResult& result, const Scenario& sc, const Topology& topo) {
  result.memory = memory_per_gpu(sc.model, sc.parallel, result.layout,
                                 sc.compute.samples_per_micro_batch, sc.training.accumulation);
  const std::optional<Bytes> hbm = sc.memory ? sc.memory : gpu_memory_of(topo.gpu_model());
  if (!hbm) return;
  result.gpu_memory = *hbm;
  result.fits_in_memory = result.memory.total() <= *hbm;
}

ScenarioResult run_parallel(const LoadedScenario& loaded, const std::vector<DeviceId>& devices,
                            const RunOptions& options) {
  const Scenario& sc = loaded.scenario;
  const Topology& topo = loaded.topology.topology;
  ScenarioResult result;
  result.scenario_name = sc.name;
  result.topology_name = topo.name();
  const auto gpus = static_cast<std::uint32_t>(devices.size());
  result.gpus = gpus;
  result.ranks_per_node = ranks_per_node(topo, devices);
  result.nodes = std::max<std::uint32_t>(1, gpus / result.ranks_per_node);
  try {
    result.layout = make_layout(gpus, sc.parallel, result.ranks_per_node);
  } catch (const std::invalid_argument& e) {
    throw ConfigError(SourceMark{sc.file.string(), 0, 0}, std::string("parallel: ") + e.what());
  }
  result.ranks = result.layout.data;
  detail::ParallelRun run = detail::simulate_parallel_step(loaded, devices, result.layout, options);
  const ParallelStep& step = run.step;
  result.timeline = step.timeline;
  result.comm_dp = step.dp;
  result.comm_tp = step.tp;
  result.comm_pp = step.pp;
  result.bubble = step.bubble;
  result.parallel_algorithms = run.algorithms;
  // The gradients one GPU synchronizes: its stage's parameters over the tensor ranks.
  const std::vector<StageLayers> stages = stage_layers(sc.model, sc.parallel);
  result.sync_plan.grad_bytes = Bytes(stages[step.critical_stage].params(sc.model) /
                                      result.layout.tensor * sc.model.bytes_per_grad());
  result.sync_plan.wire_bytes = result.sync_plan.grad_bytes;

  StepMetrics& m = result.metrics;
  const StepTimeline& t = result.timeline;
  m.step_time = t.step_time;
  m.compute_time = t.compute_time;
  m.comm_time = t.comm_time;
  m.exposed_comm = t.exposed_comm;
  if (t.compute_time.seconds() > 0.0) m.comm_compute_ratio = t.comm_time / t.compute_time;
  if (t.step_time.seconds() > 0.0) {
    m.gpu_utilization = t.compute_time / t.step_time;
    m.samples_per_step = samples_per_step(sc.compute, sc.training.accumulation, result.layout.data);
    m.samples_per_s = m.samples_per_step / t.step_time.seconds();
  }
  const double alone = single_gpu_samples_per_s(sc.compute, sc.training.accumulation);
  if (alone > 0.0) m.scaling_efficiency = m.samples_per_s / (gpus * alone);
  m.verdict = verdict_of(t.exposed_comm, t.step_time);
  result.total_time = t.step_time * static_cast<double>(sc.training.steps);
  add_memory(result, sc, topo);
  finish(result, topo, run.bytes_a_to_b, run.bytes_b_to_a);
  return result;
}

}  // namespace

ScenarioResult run_scenario(const LoadedScenario& loaded, const RunOptions& options) {
  const Scenario& sc = loaded.scenario;
  const Topology& topo = loaded.topology.topology;
  ScenarioResult result;
  result.scenario_name = sc.name;
  result.topology_name = topo.name();

  const auto gpus = static_cast<std::uint32_t>(sc.gpus.value_or(topo.gpu_count()));
  if (gpus > topo.gpu_count())
    throw ConfigError(SourceMark{sc.file.string(), 0, 0},
                      fmt::format("gpus: {} but topology '{}' has {} GPUs", gpus, topo.name(),
                                  topo.gpu_count()));
  const std::vector<DeviceId> placed = place_ranks(topo, gpus);
  if (!sc.parallel.plain()) {
    ScenarioResult r = run_parallel(loaded, placed, options);
    r.sync_plan.notes.insert(r.sync_plan.notes.begin(), sc.notes.begin(), sc.notes.end());
    return r;
  }
  const std::uint32_t ranks = data_parallel_ranks(gpus, sc.sync);
  if (ranks == 0)
    throw ConfigError(SourceMark{sc.file.string(), 0, 0},
                      "no data-parallel worker left: the dedicated servers take every GPU");
  // One data-parallel group of whole servers: NCCL chains and rings each server's GPUs along
  // NVLink whatever their numbering (nvlink_chain_order()).
  const std::vector<DeviceId> devices = nvlink_chain_order(topo, placed, ranks_per_node(topo, placed));
  const std::uint32_t ppn = ranks_per_node(topo, devices);
  result.gpus = gpus;
  result.ranks = ranks;
  result.ranks_per_node = ppn;
  result.nodes = std::max<std::uint32_t>(1, gpus / ppn);
  // Servers filled unevenly (12 GPUs as 8 + 4): as many nodes as blocks.
  if (const std::vector<std::uint32_t> blocks = node_blocks(topo, devices);
      std::adjacent_find(blocks.begin(), blocks.end(), std::not_equal_to<>()) != blocks.end()) {
    result.node_sizes = blocks;
    result.nodes = static_cast<std::uint32_t>(blocks.size());
  }

  // The step's buckets and what goes on the wire.
  result.buckets = build_buckets(sc.model, sc.sync);
  result.sync_plan = plan_sync(result.buckets, sc.model, sc.sync, ranks);
  result.sync_plan.notes.insert(result.sync_plan.notes.begin(), sc.notes.begin(), sc.notes.end());
  if (sc.sync.algorithm == SyncAlgorithm::Hierarchical && !result.node_sizes.empty())
    result.sync_plan.notes.push_back(fmt::format(
        "hierarchical needs the same number of GPUs on every server, and these hold {}: "
        "ring instead", fmt::join(result.node_sizes, " + ")));

  // Rank groups: every GPU, and the first server alone (for scaling versus one node).
  CollectiveTimer::Group all;
  const bool dedicated_servers = sc.sync.strategy != SyncStrategy::AllReduce &&
                                 sc.sync.ps.placement == PsPlacement::Dedicated;
  const std::vector<DeviceId>& hosts = loaded.server_hosts;  // sync.ps.hosts
  all.devices = dedicated_servers && hosts.empty()
                    ? spread_dedicated_servers(topo, devices, sc.sync.ps.servers)
                    : devices;
  all.devices.insert(all.devices.end(), hosts.begin(), hosts.end());
  all.base.ranks = gpus + static_cast<std::uint32_t>(hosts.size());
  all.base.ranks_per_node = ppn;
  all.base.node_sizes = node_blocks(topo, devices);
  all.base.ps.servers = sc.sync.ps.servers;
  all.base.ps.placement = sc.sync.ps.placement == PsPlacement::Dedicated
                              ? ServerPlacement::Dedicated : ServerPlacement::Colocated;
  all.base.channels = default_ring_channels(topo, devices, ppn);
  if (hosts.empty()) {
    all.base.mesh_rings = server_mesh_rings(topo, all.devices, ppn);
    all.base.mesh_paths = mesh_rail_paths(topo, all.devices, ppn, all.base.mesh_rings, all.base.channels);
    if (all.base.mesh_rings.empty() && all.base.node_sizes.size() > 1)
      all.base.mesh_server_paths =
          mesh_server_paths(topo, all.devices, all.base.node_sizes, all.base.channels);
  }

  // The one-node reference: the first server, or on servers filled unevenly (8 + 4) the first
  // of the fullest ones, a whole server's GPUs.
  std::uint32_t node_gpus = ppn;
  std::size_t node_first = 0;  // its first GPU in `devices`
  if (!result.node_sizes.empty()) {
    const auto fullest = std::max_element(result.node_sizes.begin(), result.node_sizes.end());
    node_gpus = *fullest;
    node_first = std::accumulate(result.node_sizes.begin(), fullest, std::size_t{0});
  }
  const bool multi_node = result.nodes > 1 && node_gpus > 1;
  CollectiveTimer::Group one_node;
  if (multi_node) {
    const auto first = devices.begin() + static_cast<std::ptrdiff_t>(node_first);
    one_node.devices.assign(first, first + node_gpus);
    one_node.base = all.base;
    one_node.base.ranks = node_gpus;
    one_node.base.ranks_per_node = node_gpus;
    one_node.base.node_sizes = {node_gpus};
    one_node.base.mesh_server_paths.clear();
    one_node.base.channels = 1;
    if (hosts.empty()) {
      one_node.base.mesh_rings = server_mesh_rings(topo, one_node.devices, node_gpus);
      one_node.base.mesh_paths.clear();
    }
    if (!hosts.empty()) {  // one server's GPUs with the same server hosts
      one_node.devices.insert(one_node.devices.end(), hosts.begin(), hosts.end());
      one_node.base.ranks = node_gpus + static_cast<std::uint32_t>(hosts.size());
    } else {
      if (sc.sync.strategy != SyncStrategy::AllReduce &&
          sc.sync.ps.placement == PsPlacement::Dedicated && sc.sync.ps.servers >= node_gpus)
        one_node.base.ps.placement = ServerPlacement::Colocated;  // servers do not fit a node
      one_node.base.ps.servers = std::min(sc.sync.ps.servers, node_gpus);
    }
  }

  // NVLS where it can run. An explicit `algorithm: nvls` that cannot is bad input for the whole
  // cluster; the one-server reference then falls back to the ring.
  std::string no_nvls;
  set_in_switch(all, topo, devices, ppn, sc.sync.algorithm == SyncAlgorithm::NvlsTree, &no_nvls);
  const bool explicit_switch = sc.sync.algorithm == SyncAlgorithm::Nvls ||
                               sc.sync.algorithm == SyncAlgorithm::NvlsTree;
  if (explicit_switch && sc.sync.strategy == SyncStrategy::AllReduce &&
      (all.nvls_devices.empty() ||
       (sc.sync.algorithm == SyncAlgorithm::Nvls) != (all.nvls_algorithm == Algorithm::Nvls)))
    throw ConfigError(SourceMark{sc.file.string(), 0, 0},
                      fmt::format("sync.algorithm: {} cannot run on these GPUs{}",
                                  to_string(sc.sync.algorithm),
                                  no_nvls.empty() ? std::string(" (one server: nvls; several: "
                                                                "nvlstree, or nvls with SHARP)")
                                                  : ": " + no_nvls));
  if (multi_node) set_in_switch(one_node, topo, one_node.devices, node_gpus, false, nullptr);
  // CollNetChain where the servers' NICs share SHARP switches (auto, or asked for: the loader
  // checked that it can run).
  const bool collnet_asked = sc.sync.algorithm == SyncAlgorithm::CollNetChain ||
                            sc.sync.algorithm == SyncAlgorithm::CollNetDirect;
  if ((sc.sync.algorithm == SyncAlgorithm::Auto || collnet_asked) &&
      sc.sync.strategy == SyncStrategy::AllReduce)
    set_collnet(all, topo, devices, ppn);
  if (collnet_asked && sc.sync.strategy == SyncStrategy::AllReduce &&
      (all.collnet_devices.empty() ||
       (sc.sync.algorithm == SyncAlgorithm::CollNetDirect && !all.collnet_direct)))
    throw ConfigError(SourceMark{sc.file.string(), 0, 0},
                      fmt::format("sync.algorithm: {} cannot run on these GPUs (two servers or "
                                  "more whose NICs share SHARP switches, network.sharp: true; "
                                  "collnetdirect: NVSwitch servers)",
                                  to_string(sc.sync.algorithm)));
  const bool nccl = topo.software() == SoftwareModel::Nccl;
  // NVLSTree pipelines in NCCL's loops (nvls_tree_pipeline_steps).
  if (nccl && !all.nvls_devices.empty() &&
      (all.nvls_algorithm == Algorithm::NvlsTree || all.tree_too))
    set_nvls_loops(all.base, nccl_topology_view(topo, all.devices, ppn, Algorithm::NvlsTree));
  // `auto` under NCCL runs NCCL's choice, as a real job does (AllReduce buckets).
  if (nccl && sc.sync.algorithm == SyncAlgorithm::Auto &&
      sc.sync.strategy == SyncStrategy::AllReduce) {
    all.nccl_view = nccl_topology_view(topo, all.devices, ppn, all.in_switch());
    if (multi_node)
      one_node.nccl_view =
          nccl_topology_view(topo, one_node.devices, node_gpus, one_node.in_switch());
  }

  Simulation sim(topo, options.simgrid_args);
  if (options.progress) sim.set_progress(options.progress);
  {
    std::vector<std::pair<DeviceId, DeviceId>> pairs;
    auto add_pairs = [&](const CollectiveTimer::Group& g, std::uint32_t group_ranks) {
      std::vector<CollectiveOp> ops;
      for (const BucketWire& wire : result.sync_plan.buckets)
        if (std::find(ops.begin(), ops.end(), wire.op) == ops.end()) ops.push_back(wire.op);
      for (CollectiveOp op : ops)
        for (Algorithm a : algorithms_for(sc.sync, op, group_ranks, g.base.ranks_per_node,
                                          g.in_switch(), g.tree_too, nccl,
                                          !g.collnet_devices.empty(), g.collnet_direct)) {
          const CollectiveRequest r = g.request(op, a, Bytes(4096.0 * group_ranks));
          const auto p = device_pairs(plan_or_fail(r, Fidelity::Flow, SourceMark{sc.file.string(), 0, 0}),
                                      g.devices_for(a));
          pairs.insert(pairs.end(), p.begin(), p.end());
        }
    };
    add_pairs(all, gpus);
    if (multi_node) add_pairs(one_node, node_gpus);
    sim.build(pairs);
  }
  CollectiveTimer timer(sim, options.fidelity, SourceMark{sc.file.string(), 0, 0});

  std::vector<double> link_a(topo.links().size(), 0.0), link_b(topo.links().size(), 0.0);
  for (const BucketWire& wire : result.sync_plan.buckets) {
    const auto [t, algo] = timer.time(all, 0, wire.op,
                                      algorithms_for(sc.sync, wire.op, gpus, ppn,
                                                     all.in_switch(), all.tree_too, nccl,
                                                     !all.collnet_devices.empty(),
                                                     all.collnet_direct),
                                      wire.bytes,
                                      &link_a, &link_b);
    result.collective_times.push_back(t);
    result.bucket_algorithms.emplace_back(to_string(algo));
  }
  const StepOptions step_opts = step_options(sc);
  result.timeline = compose_step(result.buckets, result.sync_plan, result.collective_times,
                                 sc.compute, step_opts);
  result.metrics = step_metrics(result.timeline, sc.compute, sc.training.accumulation, ranks);
  result.total_time = result.timeline.step_time * static_cast<double>(sc.training.steps);

  // Scaling versus one node: the same step on the first server's GPUs (one node is its own).
  if (result.nodes <= 1) {
    result.one_node_samples_per_s = result.metrics.samples_per_s;
    result.scaling_vs_one_node = 1.0;
  } else if (multi_node) {
    const std::uint32_t node_ranks = data_parallel_ranks(node_gpus, sc.sync);
    if (node_ranks > 0) {
      const SyncPlan node_plan = plan_sync(result.buckets, sc.model, sc.sync, node_ranks);
      std::vector<Seconds> node_times;
      bool reference = true;
      try {
        for (const BucketWire& wire : node_plan.buckets)
          node_times.push_back(timer.time(one_node, 1, wire.op,
                                          algorithms_for(sc.sync, wire.op, node_gpus, node_gpus,
                                                         one_node.in_switch(),
                                                         one_node.tree_too, nccl),
                                          wire.bytes, nullptr, nullptr)
                                   .first);
      } catch (const ConfigError& e) {
        // nccl.algorithms names only what runs across servers (nvlstree, collnet*): on one
        // server NCCL would find no algorithm, so there is no one-node reference (null). Any
        // other error stands.
        if (!one_node.nccl_view || one_node.nccl_view->settings.algorithms.empty()) throw;
        const SourceMark& key = one_node.nccl_view->settings.algorithms_origin;
        if (e.where().file != key.file || e.where().line != key.line ||
            e.where().column != key.column)
          throw;
        reference = false;
      }
      if (reference) {
        const StepTimeline node_timeline =
            compose_step(result.buckets, node_plan, node_times, sc.compute, step_opts);
        const StepMetrics node_metrics =
            step_metrics(node_timeline, sc.compute, sc.training.accumulation, node_ranks);
        result.one_node_samples_per_s = node_metrics.samples_per_s;
        // Servers' worth of GPUs: the node count, or on uneven servers GPUs / a whole
        // server's (8 + 4 on 8-GPU servers: 1.5).
        const double servers = result.node_sizes.empty()
                                   ? static_cast<double>(result.nodes)
                                   : static_cast<double>(gpus) / node_gpus;
        if (node_metrics.samples_per_s > 0.0)
          result.scaling_vs_one_node =
              result.metrics.samples_per_s / (servers * node_metrics.samples_per_s);
      }
    }
  }

  result.layout = make_layout(ranks, sc.parallel, ppn);
  result.layout.gpus = gpus;
  for (std::size_t k = 0; k < result.sync_plan.buckets.size(); ++k) {
    const BucketWire& w = result.sync_plan.buckets[k];
    result.comm_dp.bytes_per_gpu += Bytes(busbw_factor(w.op, ranks) * w.bytes.bytes());
    ++result.comm_dp.collectives;
  }
  result.comm_dp.time = result.timeline.comm_time;
  result.comm_dp.exposed = result.timeline.exposed_comm;
  add_memory(result, sc, topo);
  finish(result, topo, link_a, link_b);
  return result;
}

}  // namespace gradsync
