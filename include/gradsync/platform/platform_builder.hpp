// The topology graph as a SimGrid platform, built in code (no XML).
//
// One flat zone whose routes are bypass routes (a map, no hosts x hosts table); one SimGrid
// host per GPU (named after the device) and per other device that is the endpoint of a routed
// pair; one SimGrid link per topology link: split-duplex for
// Duplex::Full, one shared link for Duplex::Half, bandwidth = line rate x efficiency. Routes
// exist only for the (src, dst) pairs the caller asks for, in that direction: ECMP may pick a
// different path each way. Sending between hosts without a route aborts the process (a
// SimGrid assertion): route every pair the engine will use.
//
//        gpu0 ──l0──┐                     route gpu0 -> gpu2, as SimGrid sees it:
//        gpu1 ──l1──┼── sw0 (300 ns)        [egress:gpu0] [l0 a->b] [l2 b->a]
//        gpu2 ──l2──┘                       (links in SimGrid carry bandwidth only)
//
// Latency and sharing (why the route latency is not on the links). SimGrid's CM02 weights
// each flow's max-min share by 1 / (sum of its links' latencies): with latencies on the links,
// a 2 us flow and a 1 ms flow on one link split it 435:1, not 1:1 (measured). It also caps
// a flow at TCP-gamma / (2 x latency) unless network/TCP-gamma is 0. To keep plain max-min
// sharing (every correction is a named fabric model of ours), SimGrid links get latency 0; every
// route starts with its source host's FATPIPE "egress" link of latency 1 s, so all flows carry the
// same weight; and the latency-factor callback scales that 1 s to the route's real latency
// (its links' latencies plus the forwarding latency of every device it crosses, endpoints
// excluded). So Host::route_to() reports 1 s for every route: use PlatformRoute::latency.
// One named exception, RTT-biased TCP sharing (tcp_model.hpp, `tcp.rtt_bias`, off by default):
// a route through an ethernet link then starts with its own FATPIPE "rtt-weight" link instead,
// of latency 1 s x its sharing RTT / the smallest sharing RTT among the TCP routes, so CM02
// shares ethernet bottlenecks in proportion to 1 / RTT; the callback still charges the real
// latency. Routes without an ethernet link (InfiniBand, RoCE, NVLink, PCIe) keep the 1 s egress.
// A per-switch FATPIPE link carrying the switch latency would also couple every flow
// through that switch in SimGrid's selective max-min update: a 1024-rank ring ran ~440x slower
// (26 s instead of 0.06 s for 5 chunks per rank).
//
// The platform layer owns SimGrid's latency-factor callback; fabric models that need a
// size-dependent latency (e.g. TCP slow start) plug in through PlatformOptions. The
// bandwidth-factor callback stays free.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gradsync/fabric/fabric_model.hpp"
#include "gradsync/topology/topology.hpp"
#include "gradsync/units/units.hpp"

namespace simgrid::s4u {
class Engine;
class Host;
class Link;
class NetZone;
}  // namespace simgrid::s4u

namespace gradsync {

// Pins SimGrid's neutral network model (the default LV08 scales latency by 13.01 and
// bandwidth by 0.97 and adds reverse ACK flows): network/model:CM02,
// network/crosstraffic:0, network/weight-S:0, network/TCP-gamma:0, network/optim:Full (SimGrid
// 3.32's lazy update mis-solves flows whose latencies end together). Call after constructing
// the Engine from argv (so other --cfg= options pass through) and before any platform exists;
// build_platform() calls it itself. Throws ConfigError if the command line set one of these
// keys to another value, or set network/latency-factor or network/bandwidth-factor (the
// platform owns those corrections: use the fabric `efficiency` in the topology instead).
void configure_neutral_network(simgrid::s4u::Engine& engine);

// The ECMP hash build_platform() passes to Router::route() for the pair (src, dst).
// Deterministic (splitmix64 of seed, src, dst), so tests can reproduce the chosen path.
[[nodiscard]] std::uint64_t ecmp_flow_hash(std::uint64_t seed, DeviceId src, DeviceId dst);

struct PlatformOptions {
  std::uint64_t ecmp_seed = 0;
  // Optional latency model: given the message size, the endpoints and the route's latency,
  // returns the latency to charge. Empty: the route latency as is. Runs once per message
  // (inside SimGrid's solver path): keep it cheap.
  std::function<Seconds(Bytes size, DeviceId src, DeviceId dst, Seconds route_latency)>
      latency_model;
  // Called every 1024 routed pairs with (pairs routed, pairs), for progress on a terminal.
  std::function<void(std::size_t done, std::size_t total)> progress;
  // Leave out of the SimGrid routes the switch-to-switch links and aggregates no set of flows
  // can saturate (sim/platform/implied_links.hpp): the same rates, fewer coupled flows. Off:
  // every link stays (to check that it changes nothing).
  bool drop_implied_links = true;
};

// The two directions of one topology link in SimGrid. For a half-duplex link both are the
// same shared link.
struct PlatformLink {
  simgrid::s4u::Link* a_to_b = nullptr;  // traffic from link.a toward link.b ("_UP")
  simgrid::s4u::Link* b_to_a = nullptr;  // traffic from link.b toward link.a ("_DOWN")
};

// One routed (src, dst) pair.
struct PlatformRoute {
  DeviceId src = 0;
  DeviceId dst = 0;
  Route route;                      // the path Router::route() chose
  Seconds latency{0.0};             // links' latencies + forwarding latency of crossed devices
  BytesPerSecond bottleneck{0.0};   // smallest effective bandwidth along the route
  // Routing (fabric_model.hpp). Static routing with network.qps > 1 on a route that crosses the
  // network: one sub-flow per queue pair, each from its own SimGrid host (qp_sources[0] is the
  // device's host, the others are per-pair aliases named "<src>>q<k>><dst>") along qp_routes[q].
  // Empty otherwise (one flow along `route`; under adaptive routing its branching hops are
  // aggregate links, see build_platform).
  std::vector<simgrid::s4u::Host*> qp_sources;
  std::vector<Route> qp_routes;
  std::vector<LinkShare> link_shares;  // share of the pair's bytes on each link and direction
  // The SimGrid constraints its flows share with others (indices into
  // Platform::constraint_links): its route's and every QP's, implied links left out.
  std::vector<std::uint32_t> sim_constraints;
};

struct Platform {
  simgrid::s4u::NetZone* zone = nullptr;
  std::vector<simgrid::s4u::Host*> rank_hosts;    // index: rank (Topology::gpus() order)
  std::vector<simgrid::s4u::Host*> device_hosts;  // index: DeviceId; nullptr without a host
  std::vector<PlatformLink> links;                // index: LinkId
  std::vector<PlatformRoute> routes;              // requested order, duplicates and src == dst dropped
  // Every SimGrid constraint a route crosses (a topology link's direction, an aggregate, a TCP
  // host port), by index; PlatformRoute::sim_constraints refers to them.
  std::vector<const simgrid::s4u::Link*> constraint_links;

  // The SimGrid link carrying traffic over topology link `id` when leaving device `from`.
  [[nodiscard]] simgrid::s4u::Link* link_from(const Topology& topology, LinkId id,
                                              DeviceId from) const;
  // The route of a requested pair, or nullptr.
  [[nodiscard]] const PlatformRoute* find_route(DeviceId src, DeviceId dst) const;

 private:
  friend Platform build_platform(simgrid::s4u::Engine&, const Topology&, const Router&,
                                 const std::vector<std::pair<DeviceId, DeviceId>>&,
                                 const PlatformOptions&);
  std::unordered_map<std::uint64_t, std::size_t> route_index_;  // src << 32 | dst -> routes[i]
};

// Routing (topology.routing(), fabric_model.hpp): static routing hashes every pair (every QP)
// on one path; adaptive routing replaces each hop where the flow spreads over several links by
// one shared "aggregate" SimGrid link per set of (link, direction), of capacity
// min(effective bandwidth / share) over the set (their sum on symmetric Clos fabrics, where
// every flow through the set spreads evenly over it). Lossy RoCE (roce.pfc: false): links that
// leave a switch on a RoCE fabric get SimGrid's NONLINEAR sharing with capacity × go-back-N
// goodput fraction of the number of flows on them (lossy_goodput_fraction()).
//
// Builds the platform for `topology` (validated) into `engine`, which must not have a platform
// yet, and seals it. Hosts have a speed of kHostSpeed flop/s (an Exec of t flops lasts t s).
// Throws std::logic_error on a second platform, an unknown device id, or a route the Router
// cannot produce; ConfigError from configure_neutral_network().
[[nodiscard]] Platform build_platform(
    simgrid::s4u::Engine& engine, const Topology& topology, const Router& router,
    const std::vector<std::pair<DeviceId, DeviceId>>& routed_pairs,
    const PlatformOptions& options = {});

inline constexpr double kHostSpeed = 1.0;  // flop/s

}  // namespace gradsync
