// The engine's side of the fabric corrections (fabric_correction.hpp): transfers started at
// one simulated instant are started together, each part with the extra latency and rate cap
// the corrections ask; when a part ends, the corrections that cap rates restart parts in
// flight on their remaining bytes.
#include "simulation_impl.hpp"

namespace gradsync {

namespace detail {

std::vector<std::unique_ptr<FabricCorrection>> make_fabric_corrections(const Topology& topology) {
  std::vector<std::unique_ptr<FabricCorrection>> corrections;
  for (auto make : {+[](const Topology& t) { return make_roce_pfc_correction(t); },
                    +[](const Topology& t) { return make_roce_lossy_correction(t); },
                    +[](const Topology& t) { return make_tcp_incast_correction(t); }})
    if (auto c = make(topology)) corrections.push_back(std::move(c));
  return corrections;
}

}  // namespace detail

const std::vector<detail::PortHop>& Simulation::Impl::part_hops(DeviceId src, DeviceId dst,
                                                                std::uint32_t qp) {
  auto& hops = hop_cache[{pair_key(src, dst), qp}];
  if (hops.empty()) {
    const Route& r = part_route(src, dst, qp);
    for (std::size_t i = 0; i < r.links.size(); ++i) {
      const Link& l = topology->link(r.links[i]);
      hops.push_back(detail::PortHop{port_of(r, i), l.effective_bandwidth().bytes_per_second(),
                                     l.fabric,
                                     topology->device(r.devices[i]).kind == DeviceKind::Switch});
    }
  }
  return hops;
}

detail::StartingPart Simulation::Impl::starting_part(const InFlight& part, double bytes,
                                                     std::size_t transfer) {
  return detail::StartingPart{part.seq, transfer, part_hops(part.src, part.dst, part.qp), bytes,
                              platform.find_route(part.src, part.dst)->latency.seconds()};
}

void Simulation::Impl::correct_after(std::uint64_t seq) {
  if (!caps_rates) return;  // started()/finished() matter only to corrections that cap rates
  std::vector<detail::Restart> restarts;
  for (const auto& c : corrections) c->finished(seq, restarts);
  for (const detail::Restart& r : restarts)
    if (const auto it = in_flight_by_start.find(r.seq); it != in_flight_by_start.end())
      restart(*it->second, r.rate_factor, r.cap_rate);
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
  // Suspended, the old Comm holds no bandwidth (its variable weighs nothing in the max-min
  // system); it is dropped when the run ends. (A cancelled Comm's action keeps its share
  // until SimGrid frees it, which it does only once nothing references the Comm.)
  old->suspend();
  canceled.push_back(std::move(old));
  next_latency_override = latency_left;
  start_part(std::move(next), remaining);
  next_latency_override.reset();
}

void Simulation::Impl::flush_deferred() {
  if (deferred.empty()) return;
  std::vector<Deferred> batch;
  batch.swap(deferred);
  // The parts in the order launch() starts them, with the start numbers it gives them.
  std::vector<detail::StartingPart> parts;
  std::vector<std::size_t> first_part(batch.size() + 1, 0);
  std::uint64_t seq = start_seq;
  for (std::size_t b = 0; b < batch.size(); ++b) {
    first_part[b] = parts.size();
    const PlatformRoute* route = platform.find_route(batch[b].src, batch[b].dst);
    const std::size_t n =
        route != nullptr && !route->qp_sources.empty() ? route->qp_sources.size() : 1;
    for (std::uint32_t q = 0; q < n; ++q)
      parts.push_back(detail::StartingPart{
          ++seq, b, part_hops(batch[b].src, batch[b].dst, q),
          batch[b].wire / static_cast<double>(n),
          route != nullptr ? route->latency.seconds() : 0.0});
  }
  first_part[batch.size()] = parts.size();
  std::vector<detail::StartAdjustment> adjust(parts.size());
  for (const auto& c : corrections) c->on_start(parts, adjust);
  for (std::size_t b = 0; b < batch.size(); ++b) {
    const std::span<const detail::StartAdjustment> mine(adjust.data() + first_part[b],
                                                        first_part[b + 1] - first_part[b]);
    // A transfer's parts start together: each waits for the longest extra latency among them.
    next_extra_latency = 0.0;
    for (const detail::StartAdjustment& a : mine)
      next_extra_latency = std::max(next_extra_latency, a.extra_latency_s);
    launch(batch[b].src, batch[b].dst, batch[b].wire, batch[b].id, mine);
  }
  next_extra_latency = 0.0;
}

}  // namespace gradsync
