// Flow fidelity (simulation.hpp): one flow per connection and phase, phases one after another,
// with the exact reductions of flow_symmetry.hpp.
#include "simulation_impl.hpp"

namespace gradsync {

const detail::FlowShape& Simulation::Impl::flow_shape(DeviceId src, DeviceId dst) {
  const std::uint64_t key = pair_key(src, dst);
  auto [it, fresh] = flow_shapes.try_emplace(key);
  detail::FlowShape& shape = it->second;
  if (!fresh) return shape;
  const PlatformRoute* route = platform.find_route(src, dst);
  if (route == nullptr) {
    shape.plain = false;
    return shape;
  }
  // One sub-flow (no queue pairs or rails); its constraints are the SimGrid links it shares,
  // aggregates of adaptive spreading included (the links no flow can saturate are not among
  // them, build_platform): identical components of such flows have identical max-min rates.
  shape.plain = route->qp_sources.empty();
  for (std::uint32_t c : route->sim_constraints) {
    const sg4::Link* l = platform.constraint_links[c];
    shape.ports.push_back({reinterpret_cast<std::uintptr_t>(l), l->get_bandwidth(),
                           static_cast<int>(l->get_sharing_policy())});
  }
  shape.latency_s = base_latency(Bytes(0.0), src, dst, route->latency).seconds();
  const auto cls = route_class.find(key);
  shape.route_class = cls != route_class.end() ? static_cast<int>(cls->second) + 1 : 0;
  shape.src_order = local_order[src];
  shape.dst_order = local_order[dst];
  return shape;
}

std::vector<Simulation::Impl::FlowBatch> Simulation::Impl::flow_batches(
    const Plan& p, const std::vector<DeviceId>& rank_devices) {
  std::vector<FlowPhase> summed;
  if (!p.flows_only) summed = flow_phases_of(p);
  const std::vector<FlowPhase>& phases = p.flows_only ? p.flow_phases : summed;
  // Each phase's flows: bytes per (source, destination, channel), then per device pair.
  struct PhaseFlows {
    std::map<std::tuple<DeviceId, DeviceId, std::uint8_t>, double> flows;
    std::map<std::pair<DeviceId, DeviceId>, double> pairs;
  };
  std::vector<PhaseFlows> phase_flows(phases.size());
  // One flow per (pair, channel): channels are separate connections (NCCL channels), and
  // merging them would make unequal flows that max-min shares unevenly. Trees with more
  // than one pair (a pair per NIC) are the exception: the rotated chains put a node's
  // neighbour pairs in up to `trees` trees, all on one route with equal bytes, and one
  // flow per tree made SimGrid's solver quadratic in flows (512 GPUs, 16 trees: 12.9 s
  // instead of 2 s). Merged, such a pair weighs as one flow where it shares a link with
  // other pairs: the GPU's NVLink/PCIe port, which the NIC-bound head flows do not
  // saturate. Flow then stays within 10 % of step fidelity (128 GPUs, 16 trees, 256 MiB:
  // 255 vs 235 GB/s busbw; "engine: step and flow agree" checks smaller clusters).
  const bool merge_channels = p.algorithm == Algorithm::Tree && p.channels > 2;
  for (std::size_t k = 0; k < phases.size(); ++k) {
    PhaseFlows& pf = phase_flows[k];
    for (const PlanFlow& f : phases[k].flows) {
      const DeviceId src = rank_devices[f.src];
      const DeviceId dst = rank_devices[f.dst];
      if (src == dst) continue;
      pf.flows[{src, dst, merge_channels ? std::uint8_t{0} : f.channel}] += f.bytes.bytes();
    }
    for (const auto& [key, b] : pf.flows) pf.pairs[{std::get<0>(key), std::get<1>(key)}] += b;
  }
  // Under NCCL every flow of the first phase pays NCCL's latency for the whole collective
  // (base + intra and inter steps, each at least the longest route of its class over the
  // whole plan, as step fidelity charges it); later phases add only their fill. Without a
  // software model, `steps` route latencies per phase.
  Seconds intra_latency{0.0}, inter_latency{0.0};
  if (nccl_run_cost)
    for (const PhaseFlows& pf : phase_flows)
      for (const auto& [pair, b] : pf.pairs) {
        const PlatformRoute* route = platform.find_route(pair.first, pair.second);
        if (route == nullptr) continue;
        Seconds& slot = route_class[pair_key(pair.first, pair.second)] == LinkClass::Net
                            ? inter_latency : intra_latency;
        slot = std::max(slot, route->latency);
      }
  std::vector<FlowBatch> out(phases.size());
  for (std::size_t k = 0; k < phases.size(); ++k) {
    const FlowPhase& phase = phases[k];
    const PhaseFlows& pf = phase_flows[k];
    FlowBatch& batch = out[k];
    const double steps = std::max<std::uint32_t>(phase.steps, 1);
    const Seconds collective_latency =
        nccl_run_cost && k == 0
            ? nccl_collective_latency(*nccl_run_cost, intra_latency, inter_latency)
            : Seconds(0.0);
    for (const auto& [pair, b] : pf.pairs) {
      const PlatformRoute* route = platform.find_route(pair.first, pair.second);
      const double fill_s =
          !streamed_run && route != nullptr && route->bottleneck.bytes_per_second() > 0.0
              ? phase.fill.bytes() / route->bottleneck.bytes_per_second() : 0.0;
      batch.latency[pair_key(pair.first, pair.second)] =
          nccl_run_cost ? FlowLatency{0.0, collective_latency.seconds() + fill_s}
                        : FlowLatency{steps, fill_s};
    }
    batch.flows.reserve(pf.flows.size());
    for (const auto& [key, b] : pf.flows)
      batch.flows.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), b});
  }
  return out;
}

void Simulation::Impl::run_flows(const Plan& p, const std::vector<DeviceId>& rank_devices) {
  flow_mode = true;
  for (FlowBatch& batch : flow_batches(p, rank_devices)) {
    latency_multiplier = std::move(batch.latency);
    std::vector<detail::DeviceFlow> flows = std::move(batch.flows);
    // Exact reductions (flow_symmetry.hpp), where a flow's start does not depend on the
    // others started with it.
    if (symmetry && corrections.empty() && !rtt_biased) {
      flow_shapes.clear();
      detail::ReducedPhase reduced = detail::reduce_phase(
          flows, [this](DeviceId src, DeviceId dst) -> const detail::FlowShape& {
            return flow_shape(src, dst);
          });
      for (const detail::DeviceFlow& f : reduced.mirrored) count_link_bytes(f.src, f.dst, f.bytes);
      flows = std::move(reduced.simulate);
    }
    flows_left = flows.size();
    completions = 0;
    for (const detail::DeviceFlow& f : flows)
      start_comm(f.src, f.dst, Bytes(f.bytes), kNoTransfer);
    flush_deferred();
    run_total = flows_left;  // with every QP / rail part
    engine->run();
  }
  latency_multiplier.clear();
}

}  // namespace gradsync
