// Fabric corrections applied when flows start together (simulation_impl.hpp; the models are
// in fabric_model.hpp and tcp_model.hpp): RoCE without ECN (PFC rates as caps, restarted as
// congestion eases), lossy RoCE (a retransmission timeout for overflowing bursts) and TCP incast.
#include "simulation_impl.hpp"

namespace gradsync {

void Simulation::Impl::add_fluid_flow(std::size_t& count,
                                      const std::vector<std::pair<std::size_t, double>>& ports,
                                      double cap) {
  if (count == fluid_flows.size()) fluid_flows.emplace_back();
  FluidFlow& f = fluid_flows[count++];
  f.cap = cap;
  f.ports.assign(ports.begin(), ports.end());
}

std::size_t Simulation::Impl::fluid_flows_in_flight() {
  std::size_t count = 0;
  for (const auto& [seq, f] : in_flight_by_start) add_fluid_flow(count, *f->ports, f->cap_rate);
  return count;
}

void Simulation::Impl::recover_capped_flows(DeviceId done_src, DeviceId done_dst,
                                            std::uint32_t done_qp) {
  if (capped_in_flight == 0) return;
  std::vector<FluidFlow>& flows = fluid_flows;
  const std::size_t count = fluid_flows_in_flight();
  std::vector<InFlight*> records;  // same order as the flows
  records.reserve(count);
  for (const auto& [seq, f] : in_flight_by_start) records.push_back(f);
  const std::span<const FluidFlow> all(flows.data(), count);
  std::vector<std::size_t> seed_ports;
  for (const auto& [p, c] : fluid_ports(done_src, done_dst, done_qp)) seed_ports.push_back(p);
  const std::vector<std::size_t> members =
      connected_flows(all, port_capacity.size(), {}, seed_ports);
  bool any = false;
  for (std::size_t f : members)
    if (flows[f].cap > 0.0) {
      flows[f].cap = 0.0;  // a candidate: re-solved free of its old cap
      any = true;
    }
  if (!any) return;
  const NewFlowRates rates = pfc_rates_on(all, port_capacity, port_switch_egress, members);
  for (std::size_t k = 0; k < members.size(); ++k) {
    InFlight& rec = *records[members[k]];
    if (!(rec.cap_rate > 0.0)) continue;
    const double pfc = rates.pfc[k];
    const double fair = rates.fair[k];
    if (!(pfc > rec.cap_rate * kRecoveryGain)) continue;
    const bool still_capped = std::isfinite(pfc) && pfc > 0.0 && pfc < fair * (1.0 - 1e-6);
    restart(rec, still_capped ? pfc / fair : 0.0, still_capped ? pfc : 0.0);
  }
}

void Simulation::Impl::restart(InFlight& rec, double cap, double cap_rate) {
  const double remaining = rec.comm->get_remaining();
  if (!(remaining >= 1.0)) return;
  const double now = sg4::Engine::get_clock();
  const double latency_left = std::max(0.0, rec.start_clock + rec.latency - now);
  InFlight next = rec;  // same pair, QP and place in the start order
  next.cap = cap;
  next.cap_rate = cap_rate;
  const sg4::Activity* old_activity = rec.comm.get();
  sg4::CommPtr old = rec.comm;
  in_flight_by_start.erase(rec.seq);
  in_flight.erase(old_activity);  // `rec` is gone from here on
  --capped_in_flight;
  // Suspended, the old Comm holds no bandwidth (its variable weighs nothing in the max-min
  // system); it is dropped when the run ends. (A cancelled Comm's action keeps its share
  // until SimGrid frees it, which it does only once nothing references the Comm.)
  old->suspend();
  canceled.push_back(std::move(old));
  next_latency_override = latency_left;
  start_part(std::move(next), remaining);
  next_latency_override.reset();
}

const std::vector<std::pair<std::size_t, double>>& Simulation::Impl::fluid_ports(DeviceId src,
                                                                                 DeviceId dst,
                                                                                 std::uint32_t qp) {
  auto& ports = fluid_port_cache[{pair_key(src, dst), qp}];
  if (ports.empty()) {
    const Route& r = part_route(src, dst, qp);
    for (std::size_t i = 0; i < r.links.size(); ++i) ports.emplace_back(port_of(r, i), 1.0);
  }
  return ports;
}

bool Simulation::Impl::tcp_receiving_port(const Route& r, std::size_t& port,
                                          std::size_t& ingress) const {
  for (std::size_t i = r.links.size(); i-- > 0;) {
    if (topology->link(r.links[i]).fabric != Fabric::Ethernet) continue;
    if (i == 0 || topology->device(r.devices[i]).kind != DeviceKind::Switch) return false;
    port = port_of(r, i);
    ingress = port_of(r, i - 1);
    return true;
  }
  return false;
}

template <typename Part>
void Simulation::Impl::tcp_incast_latencies(const std::vector<Deferred>& batch,
                                            const std::vector<Part>& parts,
                                            std::vector<double>& extra) const {
  const TcpOptions& tcp = *topology->tcp();
  struct PortBurst {
    double bytes = 0.0;
    double latency_s = 0.0;  // longest route latency through the port
    std::size_t ingress = 0;
    bool converging = false;  // fed by two or more ingress ports
  };
  std::unordered_map<std::size_t, PortBurst> ports;
  std::vector<std::size_t> port_of_part(parts.size(), std::numeric_limits<std::size_t>::max());
  for (std::size_t k = 0; k < parts.size(); ++k) {
    const Deferred& d = batch[parts[k].batch_index];
    const Route& r = part_route(d.src, d.dst, parts[k].qp);
    std::size_t port = 0, ingress = 0;
    if (!tcp_receiving_port(r, port, ingress)) continue;
    const PlatformRoute* route = platform.find_route(d.src, d.dst);
    const double bytes =
        d.wire / static_cast<double>(std::max<std::size_t>(route->qp_sources.size(), 1));
    auto [it, fresh] = ports.try_emplace(port);
    PortBurst& b = it->second;
    if (fresh) b.ingress = ingress;
    else if (b.ingress != ingress) b.converging = true;
    b.bytes += tcp_burst_bytes(tcp, Bytes(bytes)).bytes();
    b.latency_s = std::max(b.latency_s, route->latency.seconds());
    port_of_part[k] = port;
  }
  const auto& links = topology->links();
  for (std::size_t k = 0; k < parts.size(); ++k) {
    if (port_of_part[k] == std::numeric_limits<std::size_t>::max()) continue;
    const PortBurst& b = ports.at(port_of_part[k]);
    const bool overflowing =
        b.converging &&
        tcp_burst_overflows(tcp, Bytes(b.bytes), links[port_of_part[k] / 2].effective_bandwidth(),
                            Seconds(2.0 * b.latency_s));
    double& e = extra[parts[k].batch_index];
    e = std::max(e, tcp_incast_latency(tcp, overflowing).seconds());
  }
}

void Simulation::Impl::flush_deferred() {
  if (deferred.empty()) return;
  std::vector<Deferred> batch;
  batch.swap(deferred);
  struct Part {
    std::size_t batch_index;
    std::uint32_t qp;
  };
  // PFC tier: the fluid flows of this batch, the in-flight ones then the new parts.
  std::vector<FluidFlow>& flows = fluid_flows;
  std::size_t flow_count = roce_tier == RoceTier::PfcWithoutEcn ? fluid_flows_in_flight() : 0;
  std::vector<Part> parts;  // the new flows' parts, after the in-flight ones in `flows`
  const std::size_t first_new = flow_count;
  for (std::size_t b = 0; b < batch.size(); ++b) {
    const PlatformRoute* route = platform.find_route(batch[b].src, batch[b].dst);
    const std::size_t n =
        route != nullptr && !route->qp_sources.empty() ? route->qp_sources.size() : 1;
    for (std::uint32_t q = 0; q < n; ++q) {
      parts.push_back(Part{b, q});
      if (roce_tier == RoceTier::PfcWithoutEcn)
        add_fluid_flow(flow_count, fluid_ports(batch[b].src, batch[b].dst, q), 0.0);
    }
  }
  std::vector<std::vector<double>> caps(batch.size()), cap_rates(batch.size());
  std::vector<double> extra(batch.size(), 0.0);
  const auto& links = topology->links();
  if (roce_tier == RoceTier::PfcWithoutEcn) {
    const NewFlowRates rates =
        pfc_rates_of_new(std::span<const FluidFlow>(flows.data(), flow_count), port_capacity,
                         port_switch_egress, first_new);
    const std::vector<double>& fair = rates.fair;
    const std::vector<double>& pfc = rates.pfc;
    for (std::size_t k = 0; k < parts.size(); ++k) {
      const std::size_t f = k;
      auto& c = caps[parts[k].batch_index];
      auto& r = cap_rates[parts[k].batch_index];
      c.resize(parts[k].qp + 1, 0.0);
      r.resize(parts[k].qp + 1, 0.0);
      if (std::isfinite(pfc[f]) && pfc[f] > 0.0 && pfc[f] < fair[f] * (1.0 - 1e-6)) {
        c[parts[k].qp] = pfc[f] / fair[f];
        r[parts[k].qp] = pfc[f];  // the fluid model of later batches takes the rate (B/s)
      }
    }
  } else if (roce_tier == RoceTier::Lossy) {
    // Synchronized first burst: per switch egress port, the batch's parts each put
    // min(part bytes, bdp) on it; a part whose port overflows waits for a timeout.
    std::unordered_map<std::size_t, double> burst;
    auto bdp_of = [&](const Deferred& d, std::size_t port) {
      const PlatformRoute* route = platform.find_route(d.src, d.dst);
      return links[port / 2].effective_bandwidth().bytes_per_second() * 2.0 *
             route->latency.seconds();
    };
    for (const Part& part : parts) {
      const Deferred& d = batch[part.batch_index];
      const Route& r = part_route(d.src, d.dst, part.qp);
      const double bytes = d.wire / static_cast<double>(std::max<std::size_t>(
                                        platform.find_route(d.src, d.dst)->qp_sources.size(), 1));
      for (std::size_t i = 0; i < r.links.size(); ++i)
        if (roce_switch_egress(r, i))
          burst[port_of(r, i)] += std::min(bytes, bdp_of(d, port_of(r, i)));
    }
    for (const Part& part : parts) {
      const Deferred& d = batch[part.batch_index];
      const Route& r = part_route(d.src, d.dst, part.qp);
      for (std::size_t i = 0; i < r.links.size(); ++i)
        if (roce_switch_egress(r, i) &&
            lossy_burst_overflows(Bytes(burst[port_of(r, i)]), Bytes(bdp_of(d, port_of(r, i))),
                                  topology->roce()->buffer))
          extra[part.batch_index] = topology->roce()->retransmit_timeout.seconds();
    }
  }
  if (tcp_incast) tcp_incast_latencies(batch, parts, extra);
  for (std::size_t b = 0; b < batch.size(); ++b) {
    next_extra_latency = extra[b];
    launch(batch[b].src, batch[b].dst, batch[b].wire, batch[b].id, caps[b], cap_rates[b]);
  }
  next_extra_latency = 0.0;
}

}  // namespace gradsync
