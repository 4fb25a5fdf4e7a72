// Plans run together (Simulation::run_together): flow fidelity for several collectives that
// start at one instant and share the platform's links, each advancing through its own phases.
#include "simulation_impl.hpp"

namespace gradsync {

void Simulation::Impl::start_together_batch(std::size_t i, bool merge_latency) {
  TogetherRun& run = together[i];
  FlowBatch& batch = run.batches[run.next++];
  for (const auto& [key, latency] : batch.latency) {
    auto [it, fresh] = latency_multiplier.try_emplace(key, latency);
    // Two plans sending between one pair at one instant: the larger latency (conservative).
    if (fresh) continue;
    if (merge_latency) {
      const PlatformRoute* route = platform.find_route(static_cast<DeviceId>(key >> 32),
                                                       static_cast<DeviceId>(key & 0xffffffffULL));
      const double route_s = route != nullptr ? route->latency.seconds() : 0.0;
      const auto total = [&](const FlowLatency& l) { return route_s * l.steps + l.extra_s; };
      if (total(latency) > total(it->second)) it->second = latency;
    } else {
      it->second = latency;
    }
  }
  nccl_run_cost = run.cost;  // its protocol's wire bytes (start_comm)
  run.left = 0;
  for (const detail::DeviceFlow& f : batch.flows) {
    ++run.left;
    start_comm(f.src, f.dst, Bytes(f.bytes), static_cast<TransferId>(i));
  }
  nccl_run_cost.reset();
  run_total += run.left;
  if (run.left == 0) finish_together_batch(i);
}

void Simulation::Impl::finish_together_batch(std::size_t i) {
  TogetherRun& run = together[i];
  run.end = sg4::Engine::get_clock();
  if (run.next < run.batches.size()) start_together_batch(i, false);
}

std::vector<Seconds> Simulation::Impl::run_together(std::span<const PlanRun> runs) {
  if (!built) {
    std::vector<std::pair<DeviceId, DeviceId>> pairs;
    for (const PlanRun& r : runs) {
      const auto p = device_pairs(*r.plan, *r.devices);
      pairs.insert(pairs.end(), p.begin(), p.end());
    }
    build(pairs);
  }
  flow_mode = true;
  started = 0;
  pair_bytes.clear();
  const double t0 = sg4::Engine::get_clock();
  run_t0 = t0;
  run_started = progress_shown = std::chrono::steady_clock::now();
  progress_shown -= progress_every;
  completions = 0;
  run_total = 0;
  together.assign(runs.size(), TogetherRun{});
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const PlanRun& r = runs[i];
    if (r.devices->size() < r.plan->ranks)
      throw std::logic_error("Simulation::run_together: fewer devices than ranks");
    std::optional<NcclProtocol> protocol;
    std::uint32_t channels = 0;
    together[i].cost = nccl_setup(*r.plan, *r.devices, protocol, channels);
    nccl_run_cost = together[i].cost;  // flow_batches() charges its collective latency
    streamed_run = streams_through_stages(r.plan->algorithm, protocol);
    together[i].batches = flow_batches(*r.plan, *r.devices);
    nccl_run_cost.reset();
    streamed_run = false;
    together[i].end = t0;
  }
  // Every plan's first phase at this instant (the RoCE and TCP corrections see them as one
  // batch), the next phase of each as its previous one ends (on_complete).
  for (std::size_t i = 0; i < runs.size(); ++i)
    if (!together[i].batches.empty()) start_together_batch(i, true);
  flush_deferred();
  engine->run();
  std::vector<Seconds> out;
  for (const TogetherRun& r : together) {
    if (r.next < r.batches.size() || r.left > 0)
      throw std::logic_error("Simulation::run_together: flows left unfinished");
    out.push_back(Seconds(r.end - t0));
  }
  together.clear();
  latency_multiplier.clear();
  retire_canceled();
  pair_bytes.clear();
  return out;
}

std::vector<Seconds> Simulation::run_together(std::span<const PlanRun> runs) {
  return impl_->run_together(runs);
}

}  // namespace gradsync
