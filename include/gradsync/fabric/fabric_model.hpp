// Network fabric models on top of max-min sharing (sim/fabric/README.md): how a flow spreads over
// equal-cost paths (static ECMP hashing with queue pairs, or adaptive routing), and the RoCE
// corrections (PFC per-ingress-port sharing and pause spreading, lossy go-back-N under incast).
// Pure functions of the topology and of flow sets: the platform and the engine apply them to
// SimGrid (sim/platform/platform_builder.cpp, sim/engine/simulation.cpp). Sources and defaults:
// sim/fabric/README.md.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "gradsync/topology/topology.hpp"
#include "gradsync/units/units.hpp"

namespace gradsync {

// ---- routing ---------------------------------------------------------------------------------

// The fabric's default routing when `network.routing` is not given: Adaptive on InfiniBand
// (NCCL enables adaptive-routing sends on IB ports by default, NCCL_IB_ADAPTIVE_ROUTING=-2 ->
// on for the IB link layer, off for RoCE: NVIDIA/nccl src/transport/net_ib; Quantum switches
// route adaptively) and on EFA (SRD sprays every flow's packets over many paths and delivers
// out of order: Shalev et al., "A Cloud-Optimized Transport Protocol for Elastic and Scalable
// HPC", IEEE Micro 40(6), 2020), Static (ECMP hashing) on RoCE and Ethernet.
[[nodiscard]] Routing default_routing(Fabric network_fabric);
// The routing a topology runs: its `network.routing`, else default_routing() of its network
// fabric (the fabric of its first network link; Static when it has none).
[[nodiscard]] Routing effective_routing(const Topology& topology);

// One topology link in one direction, with the share of a flow's bytes it carries.
struct LinkShare {
  LinkId link = 0;
  DeviceId from = 0;   // the end the traffic leaves from
  double share = 1.0;  // 0 < share <= 1
};

// How one (src, dst) connection uses the network.
struct PathSpread {
  // Static routing: one path per queue pair (qps entries; entry 0 is the path a single-QP
  // connection takes, i.e. Router::route(src, dst, flow_hash)). Adaptive: one representative
  // path (for latency and link class).
  std::vector<Route> qp_routes;
  // Adaptive routing: per hop, the links the flow's packets spread over and their shares (one
  // entry of share 1 where the path does not branch). Empty for static routing.
  std::vector<std::vector<LinkShare>> stages;
  // Every link used, with the share of the connection's bytes it carries (static: count of QPs
  // on it / qps). For byte accounting and utilization.
  std::vector<LinkShare> link_shares;
};

// Spreads the connection src -> dst. Static: QP q hashes with flow_hash (q = 0) or a mix of
// flow_hash and q; every device with several equal-cost next hops picks one (Router::route).
// Adaptive: at every network switch with several next hops the flow splits evenly (ideal
// per-packet spreading); other devices (a CPU choosing between sockets' paths) still hash.
// `qps` > 1 applies to routes that cross a network link (InfiniBand, RoCE, Ethernet) only.
// Across servers, when either GPU has several rail NICs (rail_nics()), the connection is split
// evenly over max(k_src, k_dst) rails, rail r leaving through the source's rail NIC r mod k_src
// and arriving through the destination's r mod k_dst, each rail with its `qps` (static: one
// sub-route per rail and QP in qp_routes; adaptive: the rails' hops merged stage by stage when
// their lengths agree, else one static sub-route per rail). A rail leaves through its source
// NIC's network port and arrives through its destination NIC's: it is spread between the
// switches at those ports, never into the destination server through another of its NICs
// (which shortest paths between the NICs may tie with where a switch holds NICs of both).
// With one rail NIC on both sides the route is the Router's, except behind a PCIe switch
// without GPU <-> NIC P2P, where the GPU's own NIC is its one rail.
[[nodiscard]] PathSpread spread_paths(const Topology& topology, const Router& router,
                                      DeviceId src, DeviceId dst, Routing routing,
                                      std::uint32_t qps, std::uint64_t flow_hash);

// NIC rails (NCCL's channel-to-NIC binding). A GPU's rail NICs are the NICs of its own server
// that are fewest hops from it (through PCIe switches and CPUs, never through another GPU), in
// device order, each with the path to it: one for a GPU with its own NIC, k when k NICs sit
// behind its PCIe switch (AWS p5en: 2 x 200G per H100, p5: 4 x 100G), every NIC of the socket
// on a PCIe server whose NICs hang off the CPU. NCCL's graph search gives each channel one NIC
// near the GPU and spreads the channels over them (src/graph/search.cc, NCCL_CROSS_NIC=2: the
// same NIC index on both sides where it can); aws-ofi-nccl stripes each message over a GPU's
// NICs (its multi-rail protocol). Empty when the GPU has no server (node < 0) or no NIC there.
struct RailNic {
  DeviceId nic = 0;
  Route path;  // gpu ... nic, inside the server
};
[[nodiscard]] std::vector<RailNic> rail_nics(const Topology& topology, DeviceId gpu);

// True when the route crosses a network-fabric link.
[[nodiscard]] bool crosses_network(const Topology& topology, const Route& route);

// ---- shared max-min arithmetic (fluid fixed points) -----------------------------------------

// A flow in a fluid fixed point: the directed ports it crosses (any dense ids), in route order,
// with the share of its rate each carries, and an optional rate cap (B/s; <= 0: none).
struct FluidFlow {
  std::vector<std::pair<std::size_t, double>> ports;
  double cap = 0.0;
};
// Max-min fair rates (progressive filling) of `flows` over ports of the given capacities (B/s).
[[nodiscard]] std::vector<double> max_min_rates(std::span<const FluidFlow> flows,
                                                const std::vector<double>& capacity);

// ---- RoCE ---------------------------------------------------------------------------------

// PFC without ECN/DCQCN (roce: {pfc: true, ecn: false}). Without end-to-end congestion
// control a congested switch egress port fills, and PFC pauses its ingress ports one by one:
// the port's capacity is shared per ingress port (round robin), then per flow within an
// ingress port — not per flow. A paused ingress link stops every flow on it (one queue per
// priority, head-of-line blocking), so a flow sharing an upstream link with a congested flow
// (a victim) is held to that flow's rate even though its own destination is idle.
// `switch_egress[p]` marks ports that leave a switch (where PFC arbitrates). Returns each
// flow's rate (B/s). With ecn: true (DCQCN), flows converge to per-flow fair shares
// (Zhu et al., SIGCOMM'15): max_min_rates() is the answer.
[[nodiscard]] std::vector<double> pfc_rates(std::span<const FluidFlow> flows,
                                            const std::vector<double>& capacity,
                                            const std::vector<bool>& switch_egress);
// Same, given max_min_rates(flows, capacity) already computed (`fair`). O(flow-ports) plus, per
// congested port, its own flows and the flows on the ports it pauses; two max-min solves.
[[nodiscard]] std::vector<double> pfc_rates(std::span<const FluidFlow> flows,
                                            const std::vector<double>& capacity,
                                            const std::vector<bool>& switch_egress,
                                            const std::vector<double>& fair);
// The max-min and PFC rates of the flows from `first_new` on, among all `flows` (the ones before
// are in flight): as max_min_rates() and pfc_rates() of all, but solved on the new flows'
// connected component only (flows linked through shared ports), which is all that determines
// them. Index k of each vector is flow first_new + k.
struct NewFlowRates {
  std::vector<double> fair;
  std::vector<double> pfc;
};
[[nodiscard]] NewFlowRates pfc_rates_of_new(std::span<const FluidFlow> flows,
                                            const std::vector<double>& capacity,
                                            const std::vector<bool>& switch_egress,
                                            std::size_t first_new);
// The flows connected (through shared ports, transitively) to `seed_flows` or to `seed_ports`,
// seeds included, ascending. `ports`: the number of port ids. O(flow-ports + ports).
[[nodiscard]] std::vector<std::size_t> connected_flows(std::span<const FluidFlow> flows,
                                                       std::size_t ports,
                                                       std::span<const std::size_t> seed_flows,
                                                       std::span<const std::size_t> seed_ports);
// Max-min and PFC rates of `members` (ascending indices into flows, closed under sharing a
// port, e.g. from connected_flows()), solved on those flows alone; index k is members[k].
[[nodiscard]] NewFlowRates pfc_rates_on(std::span<const FluidFlow> flows,
                                        const std::vector<double>& capacity,
                                        const std::vector<bool>& switch_egress,
                                        std::span<const std::size_t> members);

// Lossy RoCE (roce: {pfc: false}): go-back-N goodput of a switch port crossed by `flows`
// flows. Each sender keeps one bandwidth-delay product `bdp` in flight; per round trip the
// port forwards one bdp and buffers `buffer`, the rest is dropped, and go-back-N makes the
// receiver discard everything a sender sends after its first drop until it rewinds — so of the
// flows·bdp sent per round only bdp + buffer is goodput:
//   goodput fraction = min(1, (bdp + buffer) / (flows · bdp)).
// With ECN (DCQCN) the senders slow to their fair share after the first round: no steady loss
// (fraction 1); the first burst still overflows (see lossy_burst_overflows).
[[nodiscard]] double lossy_goodput_fraction(int flows, Bytes bdp, Bytes buffer, bool ecn);
// True when the first round of `burst` bytes (sum over the flows converging on a port of
// min(message, bdp)) overflows the port: bdp drains and `buffer` absorbs, the rest is dropped,
// and the tail of a go-back-N message waits for a retransmission timeout.
[[nodiscard]] bool lossy_burst_overflows(Bytes burst, Bytes bdp, Bytes buffer);

}  // namespace gradsync
