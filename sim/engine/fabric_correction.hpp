// Fabric corrections (sim/fabric/README.md): what SimGrid's max-min flows do not capture about a
// fabric, applied when transfers start. One small interface — what a start needs (extra
// latency, a rate cap) and a restart rule for flows in flight — and one unit per fabric:
//   roce_correction.cpp  RoCE with PFC and without ECN: per-ingress-port PFC rates and
//                        head-of-line victims as rate caps, restarted as congestion eases;
//                        lossy RoCE: a retransmission timeout for overflowing first bursts
//                        (its go-back-N goodput on switch ports is set on the platform).
//   tcp_correction.cpp   TCP incast: a retransmission timeout for synchronized bursts that
//                        overflow the port they converge on.
// Each unit also holds its fabric's part of the platform (platform_builder.cpp calls it): lossy
// RoCE's go-back-N goodput on switch ports; TCP's host-port cap links and RTT-biased weights.
// The engine (fabric_corrections.cpp) gathers the transfers started at one simulated instant,
// asks every correction about their parts, starts them with the combined latency and cap,
// tells the corrections when parts end, and restarts the parts they ask it to.
// A new fabric behaviour is one unit and one line in make_fabric_corrections().
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "gradsync/platform/platform_builder.hpp"
#include "gradsync/topology/topology.hpp"

namespace simgrid::s4u {
class LinkInRoute;
}  // namespace simgrid::s4u

namespace gradsync::detail {

// One directed port (2 x link + direction) of a part's path.
struct PortHop {
  std::size_t port = 0;
  double capacity = 0.0;  // the link's effective bandwidth, B/s
  Fabric fabric = Fabric::NvLink;
  bool leaves_switch = false;  // the device the port leaves is a switch
};

// One part of a transfer (the transfer, or one queue pair's share of it) about to start.
struct StartingPart {
  std::uint64_t seq = 0;          // start order, unique in a simulation; a restart keeps it
  std::size_t transfer = 0;       // its transfer's index among those starting together
  std::span<const PortHop> hops;  // its path in order; outlives the part (the engine's cache)
  double bytes = 0.0;             // its bytes on the wire
  double route_latency_s = 0.0;   // its device pair's route latency, one way
};

// What a start needs. Corrections combine: the largest extra latency, the smallest cap; the
// engine charges each transfer the largest extra latency among its parts.
struct StartAdjustment {
  double extra_latency_s = 0.0;
  double rate_factor = 0.0;  // bandwidth factor < 1 on the part's max-min share; 0 = none
  double cap_rate = 0.0;     // the rate behind that factor, B/s; 0 = none
};

// A part in flight to restart on its remaining bytes with another cap (0: none), paying no
// latency beyond what its first start had left.
struct Restart {
  std::uint64_t seq = 0;
  double rate_factor = 0.0;
  double cap_rate = 0.0;
};

class FabricCorrection {
 public:
  virtual ~FabricCorrection() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  // True when it caps rates: the engine then passes caps to SimGrid as bandwidth factors,
  // keeps its parts in flight by start order for restarts, and calls started() and finished()
  // (only then: a correction that does not cap rates sees each batch once, in on_start()).
  [[nodiscard]] virtual bool caps_rates() const { return false; }
  // Parts starting together at one simulated instant; adjust[k] belongs to parts[k].
  virtual void on_start(std::span<const StartingPart> parts, std::span<StartAdjustment> adjust) = 0;
  // A part has started (or restarted, same seq) with its final adjustment.
  virtual void started(const StartingPart& /*part*/, const StartAdjustment& /*adjust*/) {}
  // A part in flight has finished; appends the parts in flight to restart.
  virtual void finished(std::uint64_t /*seq*/, std::vector<Restart>& /*restarts*/) {}
};

// The corrections of `topology`'s fabrics (none for NVLink, InfiniBand, RoCE with ECN, TCP
// without incast).
[[nodiscard]] std::vector<std::unique_ptr<FabricCorrection>> make_fabric_corrections(
    const Topology& topology);

// The units (roce_correction.cpp, tcp_correction.cpp); each returns nullptr where its fabric
// behaviour does not apply to `topology`.
// RoCE with PFC and without ECN. `port_capacity[p]` (B/s) and `port_leaves_switch[p]` for
// every directed port p = 2 x link + direction.
[[nodiscard]] std::unique_ptr<FabricCorrection> make_roce_pfc_correction(
    std::vector<double> port_capacity, std::vector<bool> port_leaves_switch);
[[nodiscard]] std::unique_ptr<FabricCorrection> make_roce_pfc_correction(const Topology& topology);
// Lossy RoCE (no PFC).
[[nodiscard]] std::unique_ptr<FabricCorrection> make_roce_lossy_correction(const RoceOptions& roce);
[[nodiscard]] std::unique_ptr<FabricCorrection> make_roce_lossy_correction(const Topology& topology);
// TCP incast.
[[nodiscard]] std::unique_ptr<FabricCorrection> make_tcp_incast_correction(const TcpOptions& tcp);
[[nodiscard]] std::unique_ptr<FabricCorrection> make_tcp_incast_correction(const Topology& topology);

// ---- Each fabric's part of the platform (platform_builder.cpp) -------------------------------
// Lossy RoCE (roce: {pfc: false}; roce_correction.cpp): go-back-N goodput on every switch
// egress of a RoCE link, as a function of the flows crossing it (SimGrid NONLINEAR sharing,
// lossy_goodput_fraction); a port's bandwidth-delay product uses the longest round trip
// (2 x route latency) among the platform's routes through it. Nothing without lossy RoCE.
void shape_lossy_roce_ports(const Topology& topology, Platform& platform);

// Ethernet (TCP) host cap (tcp_model.hpp; tcp_correction.cpp): one shared link per host port
// and direction, of capacity tcp_host_cap(), on every route through that port. A host port is
// the device where a route enters its first ethernet link (sending) and the one where it
// leaves its last (receiving); routes without ethernet links, and topologies without a TCP
// model, get none.
class TcpHostPorts {
 public:
  TcpHostPorts(const Topology& topology, simgrid::s4u::NetZone& zone)
      : topology_(&topology), zone_(&zone) {}
  // Appends the host-port links of `route` to `hops`, lowering `bottleneck` to their rates.
  void add_hops(const Route& route, std::vector<simgrid::s4u::LinkInRoute>& hops,
                BytesPerSecond& bottleneck);

 private:
  const Topology* topology_;
  simgrid::s4u::NetZone* zone_;
  std::map<std::pair<DeviceId, bool>, simgrid::s4u::Link*> links_;  // (port, receiving)
};

// RTT-biased sharing (tcp_model.hpp, rtt_bias): the RTT that sets a route's TCP share
// (tcp_sharing_rtt over its latency and its slowest ethernet link), in seconds; negative when
// the route crosses no ethernet link or the topology has no TCP model.
[[nodiscard]] double tcp_route_sharing_rtt(const Topology& topology, const Route& route);

}  // namespace gradsync::detail
