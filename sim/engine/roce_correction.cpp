// RoCE corrections at the start of flows (fabric_correction.hpp; the fluid models are in
// fabric_model.hpp and sim/fabric/roce_model.cpp):
// - PFC without ECN: flows started together are solved with the flows in flight in one fluid
//   fixed point; a part whose PFC rate is below its max-min share starts capped at that rate.
//   When a flow ends, the capped flows of its component are re-solved and those whose PFC
//   rate rises by more than kRecoveryGain restart at the new rate.
// - Lossy (no PFC): per switch egress port, the parts starting together each put
//   min(part bytes, port bdp) on it; a part crossing a port whose burst overflows waits for the
//   go-back-N retransmission timeout; on the platform, their steady goodput on those ports is
//   shared NONLINEARly (shape_lossy_roce_ports).
#include <simgrid/s4u/Link.hpp>

#include <cmath>
#include <map>
#include <unordered_map>

#include "fabric_correction.hpp"
#include "gradsync/fabric/fabric_model.hpp"

namespace gradsync::detail {
namespace {

class RocePfcCorrection final : public FabricCorrection {
 public:
  RocePfcCorrection(std::vector<double> capacity, std::vector<bool> leaves_switch)
      : capacity_(std::move(capacity)), leaves_switch_(std::move(leaves_switch)) {}

  std::string_view name() const override { return "RoCE PFC without ECN"; }
  bool caps_rates() const override { return true; }

  void on_start(std::span<const StartingPart> parts, std::span<StartAdjustment> adjust) override {
    std::size_t count = in_flight_flows();
    const std::size_t first_new = count;
    for (const StartingPart& part : parts) add_flow(count, part.hops, 0.0);
    const NewFlowRates rates = pfc_rates_of_new(std::span<const FluidFlow>(flows_.data(), count),
                                                capacity_, leaves_switch_, first_new);
    for (std::size_t k = 0; k < parts.size(); ++k) {
      const double pfc = rates.pfc[k];
      const double fair = rates.fair[k];
      if (!(std::isfinite(pfc) && pfc > 0.0 && pfc < fair * (1.0 - 1e-6))) continue;
      adjust[k].rate_factor = pfc / fair;
      adjust[k].cap_rate = pfc;  // the fluid model of later batches takes the rate (B/s)
    }
  }

  void started(const StartingPart& part, const StartAdjustment& adjust) override {
    auto [it, fresh] = in_flight_.try_emplace(part.seq);
    if (!fresh && it->second.cap_rate > 0.0) --capped_;
    it->second = InFlight{part.hops, adjust.cap_rate};
    if (adjust.cap_rate > 0.0) ++capped_;
  }

  void finished(std::uint64_t seq, std::vector<Restart>& restarts) override {
    const auto done = in_flight_.find(seq);
    if (done == in_flight_.end()) return;
    const std::span<const PortHop> done_hops = done->second.hops;
    if (done->second.cap_rate > 0.0) --capped_;
    in_flight_.erase(done);
    if (capped_ == 0) return;
    const std::size_t count = in_flight_flows();
    std::vector<std::pair<std::uint64_t, double>> records;  // (seq, cap rate), flow order
    records.reserve(count);
    for (const auto& [s, f] : in_flight_) records.emplace_back(s, f.cap_rate);
    const std::span<const FluidFlow> all(flows_.data(), count);
    std::vector<std::size_t> seed_ports;
    for (const PortHop& h : done_hops) seed_ports.push_back(h.port);
    const std::vector<std::size_t> members =
        connected_flows(all, capacity_.size(), {}, seed_ports);
    bool any = false;
    for (std::size_t f : members)
      if (flows_[f].cap > 0.0) {
        flows_[f].cap = 0.0;  // a candidate: re-solved free of its old cap
        any = true;
      }
    if (!any) return;
    const NewFlowRates rates = pfc_rates_on(all, capacity_, leaves_switch_, members);
    for (std::size_t k = 0; k < members.size(); ++k) {
      const auto [s, cap_rate] = records[members[k]];
      if (!(cap_rate > 0.0)) continue;
      const double pfc = rates.pfc[k];
      const double fair = rates.fair[k];
      if (!(pfc > cap_rate * kRecoveryGain)) continue;
      const bool still_capped = std::isfinite(pfc) && pfc > 0.0 && pfc < fair * (1.0 - 1e-6);
      restarts.push_back(
          Restart{s, still_capped ? pfc / fair : 0.0, still_capped ? pfc : 0.0});
    }
  }

  // A capped flow keeps the factor it started with (SimGrid cannot change a running flow's
  // rate), so it restarts when its PFC rate rises by more than this. kRecoveryGain only keeps
  // small rate changes from restarting flows: on 48 RoCE-without-ECN benches (ring, tree,
  // hierarchical, PS; flow and step; 4 and 8 servers) 1.001 gives the same times as 1.05 in
  // the same wall time, 1.2 moves two of them by 0.1-0.6 %.
  static constexpr double kRecoveryGain = 1.05;

 private:
  struct InFlight {
    std::span<const PortHop> hops;
    double cap_rate = 0.0;
  };
  // Appends a fluid flow to flows_[0, count), reusing storage.
  void add_flow(std::size_t& count, std::span<const PortHop> hops, double cap) {
    if (count == flows_.size()) flows_.emplace_back();
    FluidFlow& f = flows_[count++];
    f.cap = cap;
    f.ports.clear();
    for (const PortHop& h : hops) f.ports.emplace_back(h.port, 1.0);
  }
  // flows_[0, count) = the flows in flight, in start order, capped at their PFC rates.
  std::size_t in_flight_flows() {
    std::size_t count = 0;
    for (const auto& [seq, f] : in_flight_) add_flow(count, f.hops, f.cap_rate);
    return count;
  }

  std::vector<double> capacity_;
  std::vector<bool> leaves_switch_;
  // In start order, so that each fixed point sees the flows in an order that does not depend
  // on memory addresses (a run's result must not depend on what ran before it).
  std::map<std::uint64_t, InFlight> in_flight_;
  std::size_t capped_ = 0;
  std::vector<FluidFlow> flows_;  // storage reused between fixed points
};

class RoceLossyCorrection final : public FabricCorrection {
 public:
  explicit RoceLossyCorrection(const RoceOptions& roce) : roce_(roce) {}

  std::string_view name() const override { return "lossy RoCE"; }

  void on_start(std::span<const StartingPart> parts, std::span<StartAdjustment> adjust) override {
    std::unordered_map<std::size_t, double> burst;  // per switch egress port, bytes
    auto bdp = [](const StartingPart& part, const PortHop& h) {
      return h.capacity * 2.0 * part.route_latency_s;
    };
    auto egress = [](const PortHop& h) { return h.fabric == Fabric::Roce && h.leaves_switch; };
    for (const StartingPart& part : parts)
      for (const PortHop& h : part.hops)
        if (egress(h)) burst[h.port] += std::min(part.bytes, bdp(part, h));
    for (std::size_t k = 0; k < parts.size(); ++k)
      for (const PortHop& h : parts[k].hops)
        if (egress(h) &&
            lossy_burst_overflows(Bytes(burst[h.port]), Bytes(bdp(parts[k], h)), roce_.buffer))
          adjust[k].extra_latency_s =
              std::max(adjust[k].extra_latency_s, roce_.retransmit_timeout.seconds());
  }

 private:
  RoceOptions roce_;
};

bool has_roce_links(const Topology& topology) {
  for (const Link& l : topology.links())
    if (l.fabric == Fabric::Roce) return true;
  return false;
}

}  // namespace

std::unique_ptr<FabricCorrection> make_roce_pfc_correction(std::vector<double> port_capacity,
                                                           std::vector<bool> port_leaves_switch) {
  return std::make_unique<RocePfcCorrection>(std::move(port_capacity),
                                             std::move(port_leaves_switch));
}

std::unique_ptr<FabricCorrection> make_roce_pfc_correction(const Topology& topology) {
  if (!topology.roce() || !topology.roce()->pfc || topology.roce()->ecn ||
      !has_roce_links(topology))
    return nullptr;
  const auto& links = topology.links();
  std::vector<double> capacity(2 * links.size());
  std::vector<bool> leaves_switch(2 * links.size(), false);
  for (LinkId id = 0; id < links.size(); ++id) {
    capacity[2 * id] = capacity[2 * id + 1] = links[id].effective_bandwidth().bytes_per_second();
    leaves_switch[2 * id] = links[id].fabric == Fabric::Roce &&
                            topology.device(links[id].a).kind == DeviceKind::Switch;
    leaves_switch[2 * id + 1] = links[id].fabric == Fabric::Roce &&
                                topology.device(links[id].b).kind == DeviceKind::Switch;
  }
  return make_roce_pfc_correction(std::move(capacity), std::move(leaves_switch));
}

std::unique_ptr<FabricCorrection> make_roce_lossy_correction(const RoceOptions& roce) {
  return std::make_unique<RoceLossyCorrection>(roce);
}

std::unique_ptr<FabricCorrection> make_roce_lossy_correction(const Topology& topology) {
  if (!topology.roce() || topology.roce()->pfc || !has_roce_links(topology)) return nullptr;
  return make_roce_lossy_correction(*topology.roce());
}

void shape_lossy_roce_ports(const Topology& topology, Platform& platform) {
  if (!topology.roce() || topology.roce()->pfc) return;
  std::vector<double> rtt(2 * topology.links().size(), 0.0);  // per link and direction, s
  for (const PlatformRoute& pr : platform.routes)
    for (const LinkShare& s : pr.link_shares) {
      const std::size_t port = 2 * s.link + (topology.link(s.link).a == s.from ? 0 : 1);
      rtt[port] = std::max(rtt[port], 2.0 * pr.latency.seconds());
    }
  const RoceOptions roce = *topology.roce();
  for (LinkId id = 0; id < topology.links().size(); ++id) {
    const Link& l = topology.link(id);
    if (l.fabric != Fabric::Roce) continue;
    for (int dir = 0; dir < 2; ++dir) {
      const DeviceId from = dir == 0 ? l.a : l.b;
      if (topology.device(from).kind != DeviceKind::Switch || !(rtt[2 * id + dir] > 0.0)) continue;
      const Bytes bdp = l.effective_bandwidth() * Seconds(rtt[2 * id + dir]);
      simgrid::s4u::Link* link = dir == 0 ? platform.links[id].a_to_b : platform.links[id].b_to_a;
      link->set_sharing_policy(simgrid::s4u::Link::SharingPolicy::NONLINEAR,
                               [bdp, roce](double capacity, int flows) {
                                 return capacity *
                                        lossy_goodput_fraction(flows, bdp, roce.buffer, roce.ecn);
                               });
    }
  }
}

}  // namespace gradsync::detail
