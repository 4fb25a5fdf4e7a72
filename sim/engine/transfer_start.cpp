// Starting and finishing Comms (simulation_impl.hpp): a transfer's wire bytes under NCCL's
// protocol, its queue-pair parts, completions, and step fidelity's dependency-driven replay.
#include "simulation_impl.hpp"

namespace gradsync {

void Simulation::Impl::start_comm(DeviceId src, DeviceId dst, Bytes bytes, TransferId id) {
  count_link_bytes(src, dst, bytes.bytes());
  // NCCL protocols below Simple's bandwidth (LL, LL128, Tree's correction) move the same
  // payload more slowly: send bytes / factor (LL's flag words really do cross the links).
  // NVLSTree's network legs have their own factor (one route-class lookup, only then).
  double factor = nccl_run_cost ? nccl_run_cost->bandwidth_factor : 1.0;
  if (nccl_run_cost && nccl_run_cost->bandwidth_factor_net != factor) {
    const auto c = route_class.find(pair_key(src, dst));
    if (c == route_class.end() || c->second == LinkClass::Net)
      factor = nccl_run_cost->bandwidth_factor_net;
  }
  const double wire = factor > 0.0 ? bytes.bytes() / factor : bytes.bytes();
  if (!corrections.empty()) {
    deferred.push_back(Deferred{src, dst, wire, id});
    return;
  }
  launch(src, dst, wire, id);
}

void Simulation::Impl::launch(DeviceId src, DeviceId dst, double wire, TransferId id,
                              std::span<const detail::StartAdjustment> adjust) {
  const PlatformRoute* route = platform.find_route(src, dst);
  const std::size_t parts =
      route != nullptr && !route->qp_sources.empty() ? route->qp_sources.size() : 1;
  if (parts > 1) {
    if (!together.empty()) together[id].left += parts - 1;
    else if (flow_mode) flows_left += parts - 1;
    else parts_left[id] = static_cast<std::uint32_t>(parts);
  }
  for (std::size_t q = 0; q < parts; ++q) {
    InFlight part;
    part.id = id;
    part.src = src;
    part.dst = dst;
    part.qp = static_cast<std::uint32_t>(q);
    if (q < adjust.size()) {
      part.cap = adjust[q].rate_factor;
      part.cap_rate = adjust[q].cap_rate;
    }
    part.seq = ++start_seq;
    ++started;
    start_part(std::move(part), wire / static_cast<double>(parts));
  }
}

void Simulation::Impl::start_part(InFlight part, double payload) {
  const PlatformRoute* route = platform.find_route(part.src, part.dst);
  sg4::Host* from = route != nullptr && !route->qp_sources.empty()
                        ? route->qp_sources[part.qp]
                        : platform.device_hosts.at(part.src);
  auto comm = sg4::Comm::sendto_init(from, platform.device_hosts.at(part.dst));
  comm->set_payload_size(static_cast<std::uint64_t>(std::llround(payload)));
  part.comm = comm;
  part.start_clock = sg4::Engine::get_clock();
  next_rate_cap = part.cap;
  InFlight& rec = in_flight.emplace(comm.get(), std::move(part)).first->second;
  if (caps_rates) in_flight_by_start.emplace(rec.seq, &rec);
  comm->start();
  rec.latency = last_charged_latency;
  next_rate_cap = 0.0;
  if (caps_rates) {  // only corrections that cap rates follow the parts in flight
    const detail::StartingPart started_part = starting_part(rec, payload, 0);
    const detail::StartAdjustment adjust{0.0, rec.cap, rec.cap_rate};
    for (const auto& c : corrections) c->started(started_part, adjust);
  }
}

void Simulation::Impl::start_transfer(TransferId id) {
  const Transfer& t = plan->transfers[id];
  const DeviceId src = (*ranks)[t.src];
  const DeviceId dst = (*ranks)[t.dst];
  if (src == dst) {
    ready.push_back(id);  // same GPU: no network, completes at once
    return;
  }
  start_comm(src, dst, plan->bytes_of(t), id);
}

void Simulation::Impl::release(TransferId id) {
  ready.push_back(id);
  drain();
}

void Simulation::Impl::drain() {
  while (!ready.empty()) {
    const TransferId done = ready.back();
    ready.pop_back();
    note_completion();  // every transfer once, whatever its parts
    last_arrival = std::max(last_arrival, sg4::Engine::get_clock());
    for (std::uint32_t i = succ_offset[done]; i < succ_offset[done + 1]; ++i) {
      const TransferId s = succ[i];
      if (--pending[s] == 0) start_transfer(s);
    }
  }
  flush_deferred();
}

void Simulation::Impl::on_complete(const sg4::Activity& activity) {
  const auto it = in_flight.find(&activity);
  if (it == in_flight.end()) return;
  const TransferId id = it->second.id;
  // SimGrid still uses this Comm after the callback returns: keep it until the next
  // completion (by then its handling is over), so at most one finished Comm stays alive.
  retired.clear();
  retired.push_back(std::move(it->second.comm));
  const std::uint64_t done_seq = it->second.seq;
  if (caps_rates) in_flight_by_start.erase(done_seq);
  in_flight.erase(it);
  correct_after(done_seq);
  if (flow_mode) {
    note_completion();  // every flow part (run_total counts them)
    last_arrival = std::max(last_arrival, sg4::Engine::get_clock());
    if (together.empty()) {
      --flows_left;
    } else if (--together[id].left == 0) {
      finish_together_batch(id);
      flush_deferred();
    }
    return;
  }
  if (const auto parts = parts_left.find(id); parts != parts_left.end()) {
    if (--parts->second > 0) return;  // other queue pairs of this transfer still in flight
    parts_left.erase(parts);
  }
  ready.push_back(id);
  drain();
}

void Simulation::Impl::run_steps(const Plan& p) {
  flow_mode = false;
  latency_multiplier.clear();
  const std::size_t n = p.transfers.size();
  pending.assign(n, 0);
  succ_offset.assign(n + 1, 0);
  for (TransferId id = 0; id < n; ++id)
    p.for_each_dep(id, [&](TransferId d) {
      ++pending[id];
      ++succ_offset[d + 1];
    });
  for (std::size_t i = 0; i < n; ++i) succ_offset[i + 1] += succ_offset[i];
  succ.assign(succ_offset[n], 0);
  std::vector<std::uint32_t> fill(succ_offset.begin(), succ_offset.end() - 1);
  for (TransferId id = 0; id < n; ++id)
    p.for_each_dep(id, [&](TransferId d) { succ[fill[d]++] = id; });
  for (TransferId id = 0; id < n; ++id)
    if (pending[id] == 0) start_transfer(id);
  drain();
  engine->run();
  drain();
}

}  // namespace gradsync
