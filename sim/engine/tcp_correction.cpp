// TCP incast at the start of flows (fabric_correction.hpp; the model is tcp_model.hpp): per
// receiving port — a part's last ethernet link, leaving a switch and entered through another
// link — the burst is the sum over the parts starting together of min(part bytes,
// send_window). A port fed by two or more ingress ports and `incast_flows` parts or more, whose
// burst exceeds switch_buffer + rate x RTT (RTT = twice the longest route latency through it),
// overflows, and every part through it pays rto_min once. On the platform: the host-port cap
// links and the RTT that weighs a route's share (TcpHostPorts, tcp_route_sharing_rtt).
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <tuple>
#include <unordered_map>

#include "fabric_correction.hpp"
#include "gradsync/fabric/tcp_model.hpp"

namespace gradsync::detail {
namespace {

class TcpIncastCorrection final : public FabricCorrection {
 public:
  explicit TcpIncastCorrection(const TcpOptions& tcp) : tcp_(tcp) {}

  std::string_view name() const override { return "TCP incast"; }

  void on_start(std::span<const StartingPart> parts, std::span<StartAdjustment> adjust) override {
    struct PortBurst {
      double bytes = 0.0;
      double latency_s = 0.0;  // longest route latency through the port
      double capacity = 0.0;   // B/s
      std::size_t ingress = 0;
      std::size_t flows = 0;
      bool converging = false;  // fed by two or more ingress ports
    };
    constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
    std::unordered_map<std::size_t, PortBurst> ports;
    std::vector<std::size_t> port_of_part(parts.size(), kNone);
    for (std::size_t k = 0; k < parts.size(); ++k) {
      const PortHop* hop = receiving_port(parts[k].hops);
      if (hop == nullptr) continue;
      const std::size_t ingress = (hop - 1)->port;
      auto [it, fresh] = ports.try_emplace(hop->port);
      PortBurst& b = it->second;
      if (fresh) {
        b.ingress = ingress;
        b.capacity = hop->capacity;
      } else if (b.ingress != ingress) {
        b.converging = true;
      }
      b.bytes += tcp_burst_bytes(tcp_, Bytes(parts[k].bytes)).bytes();
      ++b.flows;
      b.latency_s = std::max(b.latency_s, parts[k].route_latency_s);
      port_of_part[k] = hop->port;
    }
    for (std::size_t k = 0; k < parts.size(); ++k) {
      if (port_of_part[k] == kNone) continue;
      const PortBurst& b = ports.at(port_of_part[k]);
      const bool overflowing =
          b.converging && b.flows >= static_cast<std::size_t>(tcp_.incast_flows) &&
          tcp_burst_overflows(tcp_, Bytes(b.bytes), BytesPerSecond(b.capacity),
                              Seconds(2.0 * b.latency_s));
      adjust[k].extra_latency_s =
          std::max(adjust[k].extra_latency_s, tcp_incast_latency(tcp_, overflowing).seconds());
    }
  }

 private:
  // The receiving port of a path: its last ethernet hop when that leaves a switch and is not
  // the path's first hop (nullptr otherwise: no ethernet, or a host-to-host cable).
  static const PortHop* receiving_port(std::span<const PortHop> hops) {
    for (std::size_t i = hops.size(); i-- > 0;) {
      if (hops[i].fabric != Fabric::Ethernet) continue;
      if (i == 0 || !hops[i].leaves_switch) return nullptr;
      return &hops[i];
    }
    return nullptr;
  }

  TcpOptions tcp_;
};

}  // namespace

std::unique_ptr<FabricCorrection> make_tcp_incast_correction(const TcpOptions& tcp) {
  return std::make_unique<TcpIncastCorrection>(tcp);
}

std::unique_ptr<FabricCorrection> make_tcp_incast_correction(const Topology& topology) {
  if (!topology.tcp() || !topology.tcp()->incast) return nullptr;
  for (const Link& l : topology.links())
    if (l.fabric == Fabric::Ethernet) return make_tcp_incast_correction(*topology.tcp());
  return nullptr;
}

void TcpHostPorts::add_hops(const Route& route, std::vector<simgrid::s4u::LinkInRoute>& hops,
                            BytesPerSecond& bottleneck) {
  const Topology& topology = *topology_;
  if (!topology.tcp()) return;
  std::size_t first = route.links.size(), last = route.links.size();
  for (std::size_t i = 0; i < route.links.size(); ++i)
    if (topology.link(route.links[i]).fabric == Fabric::Ethernet) {
      if (first == route.links.size()) first = i;
      last = i;
    }
  if (first == route.links.size()) return;
  for (const auto& [port, receiving, link] :
       {std::tuple{route.devices[first], false, route.links[first]},
        std::tuple{route.devices[last + 1], true, route.links[last]}}) {
    auto [it, fresh] = links_.emplace(std::pair{port, receiving}, nullptr);
    const BytesPerSecond cap = tcp_host_cap(*topology.tcp(), topology.link(link).bandwidth);
    if (fresh)
      it->second = zone_
                       ->create_link(fmt::format("tcp-host-{}:{}", receiving ? "rx" : "tx",
                                                 topology.device(port).name),
                                     cap.bytes_per_second())
                       ->seal();
    hops.emplace_back(it->second);
    bottleneck = std::min(bottleneck, BytesPerSecond(it->second->get_bandwidth()));
  }
}

double tcp_route_sharing_rtt(const Topology& topology, const Route& route) {
  if (!topology.tcp()) return -1.0;
  double latency = 0.0;
  double port = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < route.links.size(); ++i) {
    const Link& l = topology.link(route.links[i]);
    latency += l.latency.seconds();
    if (i > 0) latency += topology.device(route.devices[i]).latency.seconds();
    if (l.fabric == Fabric::Ethernet) port = std::min(port, l.bandwidth.bytes_per_second());
  }
  if (std::isinf(port)) return -1.0;
  return tcp_sharing_rtt(*topology.tcp(), Seconds(latency), BytesPerSecond(port)).seconds();
}

}  // namespace gradsync::detail
