// Topology graph -> SimGrid platform (see platform_builder.hpp for the model and why latency rides on
// one egress link per host instead of the links themselves).
//
// SimGrid facts this relies on (3.32, verified against its sources and by measurement):
// - NetZone::add_bypass_route(src, dst, nullptr, nullptr, links) stores exactly the given link
//   list for that host pair in a map (NetZoneImpl::bypass_routes_), which every route lookup
//   (get_global_route_with_netzones) consults first; a split-duplex link in it must say UP
//   (its "<name>_UP" half) or DOWN ("<name>_DOWN"); here UP always carries traffic from link.a
//   to link.b.
// - CM02 (NetworkCm02Model::communicate): a flow's max-min weight is 1 / (sum of its route's
//   link latencies, before the latency factor); its delay is that sum times the latency
//   factor; with TCP-gamma > 0 its rate is capped at gamma / (2 x the unscaled sum).
// - FullZone keeps an n x n table of route pointers over its hosts (8 n^2 bytes: 128 MiB at
//   4096 hosts, 2.1 GB at 16,384, page-faulted in by its zeroing). The platform is therefore an
//   EmptyZone (no table) whose routes are all bypass routes: memory follows the routed pairs.
#include "gradsync/units/splitmix64.hpp"
#include "gradsync/platform/platform_builder.hpp"

#include <simgrid/kernel/resource/NetworkModelIntf.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>
#include <xbt/config.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_set>

#include "gradsync/units/config_error.hpp"
#include "gradsync/units/memory_budget.hpp"
#include "../engine/fabric_correction.hpp"
#include "bypass_routes.hpp"

namespace gradsync {

namespace sg4 = simgrid::s4u;

namespace {

// Every route's weight in SimGrid's max-min (its unscaled latency); scaled to the real route
// latency by the latency-factor callback.
constexpr double kCarrierLatency = 1.0;  // seconds
// Egress links never limit a flow.
constexpr double kCarrierBandwidth = 1e15;  // bytes/s (1000x an NVLink port)

std::uint64_t pair_key(DeviceId src, DeviceId dst) {
  return (static_cast<std::uint64_t>(src) << 32) | static_cast<std::uint64_t>(dst);
}

// What the latency-factor callback needs per routed pair.
struct RouteLatency {
  DeviceId src;
  DeviceId dst;
  double latency;  // seconds
  double tcp_rate = 0.0;  // bytes/s: bottleneck of a route through a TCP host port; 0 = none
  double carrier = kCarrierLatency;  // seconds: the route's unscaled SimGrid latency (its weight)
};

struct HostPairHash {
  std::size_t operator()(const std::pair<const sg4::Host*, const sg4::Host*>& p) const {
    const auto a = reinterpret_cast<std::uintptr_t>(p.first);
    const auto b = reinterpret_cast<std::uintptr_t>(p.second);
    return static_cast<std::size_t>(splitmix64(a ^ splitmix64(b)));
  }
};
using LatencyTable =
    std::unordered_map<std::pair<const sg4::Host*, const sg4::Host*>, RouteLatency, HostPairHash>;

struct Pin {
  const char* key;
  const char* value;  // as given to --cfg=
};
constexpr Pin kPins[] = {
    {"network/model", "CM02"},
    {"network/crosstraffic", "0"},
    {"network/weight-S", "0"},
    {"network/TCP-gamma", "0"},
    // SimGrid 3.32's lazy update mis-solves flows whose latencies end at one instant: on four
    // DGX H100 servers 80 of a ring's 256 flows of 65 MB (flow fidelity, one latency for all)
    // finished at the carrier rate of their egress link (1e15 B/s, 65 ns) instead of their NVLink
    // or NIC share (1.1-1.4 ms); the full update solves every flow (test "engine: flow reductions
    // equal the full replay", which the mis-solved flows fail) and is as fast here (1 GiB on
    // 4,096 GPUs: ring 1.9 s either way, tree 7.2 s instead of 8.3 s).
    {"network/optim", "Full"},
};

// True when the current value of a pinned key already equals ours.
bool pinned_value_holds(const Pin& pin) {
  const std::string key = pin.key;
  if (key == "network/model" || key == "network/optim")
    return simgrid::config::get_value<std::string>(key) == pin.value;
  if (key == "network/crosstraffic") return !simgrid::config::get_value<bool>(key);
  return simgrid::config::get_value<double>(key) == 0.0;
}

void check_route_shape(const Topology& topology, const Route& route, DeviceId src,
                       DeviceId dst) {
  const bool ok = !route.devices.empty() && route.devices.front() == src &&
                  route.devices.back() == dst &&
                  route.links.size() + 1 == route.devices.size();
  if (!ok)
    throw std::logic_error("build_platform: Router returned a malformed route from " +
                           topology.device(src).name + " to " + topology.device(dst).name);
  for (std::size_t i = 0; i < route.links.size(); ++i) {
    const Link& l = topology.link(route.links[i]);
    const DeviceId u = route.devices[i];
    const DeviceId v = route.devices[i + 1];
    if (!((l.a == u && l.b == v) || (l.a == v && l.b == u)))
      throw std::logic_error("build_platform: route from " + topology.device(src).name + " to " +
                             topology.device(dst).name + " uses a link that does not join " +
                             topology.device(u).name + " and " + topology.device(v).name);
  }
}

}  // namespace

// The memory the platform will take (memory_budget.hpp), checked before any of it is built:
// a SimGrid host or link per topology device and link, and each routed pair's route, spread
// and flow state.
void require_platform_memory(const Topology& topology, std::size_t routes) {
  const std::size_t objects = topology.devices().size() + topology.links().size();
  require_memory(static_cast<double>(objects) * MemoryCost::kPlatformObject +
                     static_cast<double>(routes) * MemoryCost::kRoutedPair,
                 fmt::format("the simulated platform ({} devices and links, {} routes)", objects,
                             routes),
                 "fewer nodes or ranks");
}

void configure_neutral_network(sg4::Engine& /*engine*/) {
  for (const Pin& pin : kPins) {
    if (!simgrid::config::is_default(pin.key) && !pinned_value_holds(pin))
      throw ConfigError(SourceMark{fmt::format("--cfg={}", pin.key), 0, 0},
                        fmt::format("gradsync runs SimGrid with {}:{} (the neutral network "
                                    "model, include/gradsync/platform/platform_builder.hpp); remove this option",
                                    pin.key, pin.value));
  }
  for (const char* key : {"network/latency-factor", "network/bandwidth-factor"}) {
    if (!simgrid::config::is_default(key))
      throw ConfigError(SourceMark{fmt::format("--cfg={}", key), 0, 0},
                        "gradsync sets network corrections itself; use the link `efficiency` "
                        "in the topology file instead");
  }
  for (const Pin& pin : kPins) {
    if (!pinned_value_holds(pin)) sg4::Engine::set_config(fmt::format("{}:{}", pin.key, pin.value));
  }
}

std::uint64_t ecmp_flow_hash(std::uint64_t seed, DeviceId src, DeviceId dst) {
  return splitmix64(seed ^ splitmix64(static_cast<std::uint64_t>(src) ^
                                      splitmix64(static_cast<std::uint64_t>(dst))));
}

sg4::Link* Platform::link_from(const Topology& topology, LinkId id, DeviceId from) const {
  const PlatformLink& pl = links.at(id);
  return topology.link(id).a == from ? pl.a_to_b : pl.b_to_a;
}

const PlatformRoute* Platform::find_route(DeviceId src, DeviceId dst) const {
  const auto it = route_index_.find(pair_key(src, dst));
  return it == route_index_.end() ? nullptr : &routes[it->second];
}

Platform build_platform(sg4::Engine& engine, const Topology& topology, const Router& router,
                        const std::vector<std::pair<DeviceId, DeviceId>>& routed_pairs,
                        const PlatformOptions& options) {
  if (engine.get_host_count() != 0)
    throw std::logic_error("build_platform: the SimGrid engine already has a platform");
  const auto& devices = topology.devices();
  if (devices.size() > std::numeric_limits<std::uint32_t>::max())
    throw std::logic_error("build_platform: too many devices");
  for (const auto& [src, dst] : routed_pairs)
    if (src >= devices.size() || dst >= devices.size())
      throw std::logic_error(fmt::format("build_platform: routed pair ({}, {}) names an unknown "
                                         "device (the topology has {})",
                                         src, dst, devices.size()));

  const Routing routing = effective_routing(topology);
  const std::uint32_t qps = std::max<std::uint32_t>(topology.routing().qps, 1);
  const std::uint64_t seed = options.ecmp_seed ^ topology.routing().seed;
  std::vector<std::pair<DeviceId, DeviceId>> pairs;
  std::unordered_set<std::uint64_t> seen;
  for (const auto& [src, dst] : routed_pairs)
    if (src != dst && seen.insert(pair_key(src, dst)).second) pairs.emplace_back(src, dst);
  require_platform_memory(topology, pairs.size());

  configure_neutral_network(engine);

  Platform p;
  p.zone = sg4::create_empty_zone(topology.name().empty() ? "gradsync" : topology.name());

  // Hosts: every GPU (rank order), then other endpoints of routed pairs (DeviceId order).
  // All hosts exist before the first route.
  p.device_hosts.assign(devices.size(), nullptr);
  auto add_host = [&](DeviceId d) {
    if (p.device_hosts[d] != nullptr) return;
    if (sg4::Host::by_name_or_null(devices[d].name) != nullptr)
      throw std::logic_error("build_platform: two devices are named " + devices[d].name);
    p.device_hosts[d] = p.zone->create_host(devices[d].name, kHostSpeed);
  };
  for (DeviceId g : topology.gpus()) {
    add_host(g);
    p.rank_hosts.push_back(p.device_hosts[g]);
  }
  std::vector<DeviceId> other_endpoints;
  for (const auto& [src, dst] : routed_pairs)
    for (DeviceId d : {src, dst})
      if (p.device_hosts[d] == nullptr) other_endpoints.push_back(d);
  std::sort(other_endpoints.begin(), other_endpoints.end());
  for (DeviceId d : other_endpoints) add_host(d);

  // One SimGrid link per topology link; latency 0 (it rides on the route, see platform_builder.hpp).
  p.links.reserve(topology.links().size());
  std::vector<const sg4::Link*> route_links;  // the split-duplex pair of each topology link
  route_links.reserve(topology.links().size());
  for (LinkId id = 0; id < topology.links().size(); ++id) {
    const Link& l = topology.link(id);
    const double bw = l.effective_bandwidth().bytes_per_second();
    if (!(bw > 0.0))
      throw std::logic_error(fmt::format("build_platform: link {} has no bandwidth", id));
    const std::string name =
        fmt::format("link{}:{}-{}", id, devices.at(l.a).name, devices.at(l.b).name);
    if (l.shares) {  // the same physical link as an earlier one, in the same orientation
      p.links.push_back(p.links.at(*l.shares));
      route_links.push_back(route_links.at(*l.shares));
    } else if (l.duplex == Duplex::Full) {
      sg4::SplitDuplexLink* sd = p.zone->create_split_duplex_link(name, bw);
      sd->seal();
      p.links.push_back({sd->get_link_up(), sd->get_link_down()});
      route_links.push_back(sd);
    } else {
      sg4::Link* shared = p.zone->create_link(name, bw)->seal();
      p.links.push_back({shared, shared});
      route_links.push_back(shared);
    }
  }

  // One egress link per host: weight carrier, first on every route from that host.
  std::vector<sg4::Link*> egress(devices.size(), nullptr);
  auto egress_of = [&](DeviceId d) {
    if (egress[d] == nullptr)
      egress[d] = p.zone->create_link("egress:" + devices[d].name, kCarrierBandwidth)
                      ->set_sharing_policy(sg4::Link::SharingPolicy::FATPIPE)
                      ->set_latency(kCarrierLatency)
                      ->seal();
    return egress[d];
  };

  // Routing (fabric_model.hpp): spread every pair first (`pairs`, deduplicated above), so
  // that the per-QP alias hosts exist before the first route.
  // Spread destination by destination: the Router keeps its search toward a destination for
  // the next source (a 16,384-GPU tree asked in source order re-searched every destination).
  std::vector<std::size_t> by_destination(pairs.size());
  std::iota(by_destination.begin(), by_destination.end(), std::size_t{0});
  std::stable_sort(by_destination.begin(), by_destination.end(),
                   [&](std::size_t a, std::size_t b) { return pairs[a].second < pairs[b].second; });
  std::vector<PathSpread> spreads(pairs.size());
  std::size_t spread_count = 0;
  for (std::size_t i : by_destination) {
    if (options.progress && ++spread_count % 1024 == 0)
      options.progress(spread_count, pairs.size());
    const auto [src, dst] = pairs[i];
    spreads[i] =
        spread_paths(topology, router, src, dst, routing, qps, ecmp_flow_hash(seed, src, dst));
    // Exact sizes: a spread grows by push_back, and thousands are held at once (an adaptive
    // 4,096-GPU tree's spreads took 83 MB with their growth slack, 29 MB without).
    spreads[i].link_shares.shrink_to_fit();
    for (auto& stage : spreads[i].stages) stage.shrink_to_fit();
  }
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const auto [src, dst] = pairs[i];
    for (const Route& r : spreads[i].qp_routes) check_route_shape(topology, r, src, dst);
    const Route& r0 = spreads[i].qp_routes.front();
    p.routes.push_back(PlatformRoute{src, dst, r0, Seconds{0.0},
                                     BytesPerSecond{std::numeric_limits<double>::infinity()}});
    PlatformRoute& pr = p.routes.back();
    // A copy, not a move: the routes' shares then sit together in memory, which the flow
    // replay walks (a move left them among the spreads' stages: 512-server tree 1.88 -> 2.19 s).
    pr.link_shares = spreads[i].link_shares;
    if (spreads[i].qp_routes.size() > 1) {
      pr.qp_routes = spreads[i].qp_routes;
      pr.qp_sources.push_back(p.device_hosts[src]);
      for (std::size_t q = 1; q < pr.qp_routes.size(); ++q)
        pr.qp_sources.push_back(p.zone->create_host(
            fmt::format("{}>q{}>{}", devices[src].name, q, devices[dst].name), kHostSpeed));
    }
  }

  // Hops of one path, with its latency and bottleneck.
  auto path_hops = [&](const Route& route, std::vector<sg4::LinkInRoute>& hops, Seconds& latency,
                       BytesPerSecond& bottleneck) {
    for (std::size_t i = 0; i < route.links.size(); ++i) {
      const LinkId id = route.links[i];
      const Link& l = topology.link(id);
      const DeviceId from = route.devices[i];
      if (l.duplex == Duplex::Full)
        hops.emplace_back(route_links[id], l.a == from ? sg4::LinkInRoute::Direction::UP
                                                       : sg4::LinkInRoute::Direction::DOWN);
      else
        hops.emplace_back(route_links[id]);
      latency += l.latency;
      if (i > 0) latency += devices[from].latency;  // forwarding at a crossed device
      bottleneck = std::min(bottleneck, l.effective_bandwidth());
    }
  };
  // Adaptive routing: one shared aggregate link per set of (link, direction) a flow spreads over.
  std::map<std::vector<std::pair<LinkId, DeviceId>>, sg4::Link*> aggregates;
  auto aggregate_of = [&](const std::vector<LinkShare>& stage, BytesPerSecond& capacity) {
    std::vector<std::pair<LinkId, DeviceId>> key;
    double bw = std::numeric_limits<double>::infinity();
    for (const LinkShare& s : stage) {
      key.emplace_back(s.link, s.from);
      bw = std::min(bw, topology.link(s.link).effective_bandwidth().bytes_per_second() / s.share);
    }
    std::sort(key.begin(), key.end());
    auto [it, fresh] = aggregates.emplace(key, nullptr);
    if (fresh)
      it->second = p.zone->create_link(fmt::format("aggregate{}:{}x{}-from-{}", aggregates.size(),
                                                   key.size(), key.front().first,
                                                   devices[key.front().second].name),
                                       bw)
                       ->seal();
    capacity = BytesPerSecond(it->second->get_bandwidth());
    return it->second;
  };

  // Ethernet (TCP) host cap (tcp_correction.cpp): shared links per host port and direction.
  detail::TcpHostPorts tcp_host_ports(topology, *p.zone);

  // RTT-biased sharing (tcp_model.hpp, rtt_bias): a route through an ethernet link carries its
  // own FATPIPE weight link of latency kCarrierLatency x sharing RTT / the smallest sharing RTT
  // among the TCP paths, instead of its source's egress link, so CM02 shares in proportion to
  // 1 / RTT (the shortest TCP path weighs like every non-TCP route). The latency-factor
  // callback still charges the real route latency. Off: every route keeps the egress link.
  const bool rtt_bias = topology.tcp() && topology.tcp()->rtt_bias;
  double rtt_reference = std::numeric_limits<double>::infinity();
  if (rtt_bias)
    for (const PathSpread& spread : spreads)
      for (const Route& r : spread.qp_routes)
        if (const double rtt = detail::tcp_route_sharing_rtt(topology, r); rtt >= 0.0)
          rtt_reference = std::min(rtt_reference, rtt);
  const bool weigh_rtt = rtt_bias && rtt_reference > 0.0 && !std::isinf(rtt_reference);
  std::size_t weight_links = 0;
  // The first hop of a route from `src_host` along `route`, and its carrier latency.
  auto carrier_hop = [&](DeviceId src, const sg4::Host* src_host, DeviceId dst,
                         const Route& route, double& carrier) -> sg4::Link* {
    const double rtt = weigh_rtt ? detail::tcp_route_sharing_rtt(topology, route) : -1.0;
    if (rtt < 0.0) {
      carrier = kCarrierLatency;
      return egress_of(src);
    }
    carrier = kCarrierLatency * rtt / rtt_reference;
    return p.zone
        ->create_link(fmt::format("rtt-weight{}:{}>{}", weight_links++, src_host->get_name(),
                                  devices[dst].name),
                      kCarrierBandwidth)
        ->set_sharing_policy(sg4::Link::SharingPolicy::FATPIPE)
        ->set_latency(carrier)
        ->seal();
  };

  auto table = std::make_shared<LatencyTable>();
  std::vector<sg4::LinkInRoute> hops;
  // Every route's hops (each pair's, then each of its QPs'), added to the zone once the links
  // no flow can saturate are known (below).
  std::vector<detail::PendingRoute> pending;
  pending.reserve(p.routes.size());
  for (std::size_t k = 0; k < p.routes.size(); ++k) {
    PlatformRoute& pr = p.routes[k];
    const PathSpread& spread = spreads[k];
    const DeviceId src = pr.src;
    const DeviceId dst = pr.dst;
    hops.clear();
    double carrier = kCarrierLatency;
    hops.emplace_back(carrier_hop(src, p.device_hosts[src], dst, pr.route, carrier));
    BytesPerSecond unused_bottleneck{0.0};
    if (spread.stages.empty()) {
      path_hops(pr.route, hops, pr.latency, pr.bottleneck);
    } else {
      // Latency along the representative path; bandwidth per stage (physical or aggregate).
      path_hops(pr.route, hops, pr.latency, unused_bottleneck);
      hops.erase(hops.begin() + 1, hops.end());
      for (const auto& stage : spread.stages) {
        if (stage.size() == 1) {
          const Link& l = topology.link(stage.front().link);
          if (l.duplex == Duplex::Full)
            hops.emplace_back(route_links[stage.front().link],
                              l.a == stage.front().from ? sg4::LinkInRoute::Direction::UP
                                                        : sg4::LinkInRoute::Direction::DOWN);
          else
            hops.emplace_back(route_links[stage.front().link]);
          pr.bottleneck = std::min(pr.bottleneck, l.effective_bandwidth());
        } else {
          BytesPerSecond capacity{0.0};
          hops.emplace_back(aggregate_of(stage, capacity));
          pr.bottleneck = std::min(pr.bottleneck, capacity);
        }
      }
    }
    const std::size_t hops_before_tcp = hops.size();
    tcp_host_ports.add_hops(pr.route, hops, pr.bottleneck);
    const double tcp_rate = hops.size() > hops_before_tcp ? pr.bottleneck.bytes_per_second() : 0.0;
    pending.push_back(detail::PendingRoute{p.device_hosts[src], k, hops});
    table->emplace(std::pair<const sg4::Host*, const sg4::Host*>{p.device_hosts[src],
                                                                 p.device_hosts[dst]},
                   RouteLatency{src, dst, pr.latency.seconds(), tcp_rate, carrier});
    // Static routing with several QPs: QP q's sub-flow leaves from its alias host.
    for (std::size_t q = 1; q < pr.qp_sources.size(); ++q) {
      hops.clear();
      double qp_carrier = kCarrierLatency;
      hops.emplace_back(carrier_hop(src, pr.qp_sources[q], dst, pr.qp_routes[q], qp_carrier));
      Seconds qp_latency{0.0};
      BytesPerSecond qp_bottleneck{std::numeric_limits<double>::infinity()};
      path_hops(pr.qp_routes[q], hops, qp_latency, qp_bottleneck);
      tcp_host_ports.add_hops(pr.qp_routes[q], hops, qp_bottleneck);
      pr.bottleneck = std::min(pr.bottleneck, qp_bottleneck);
      pending.push_back(detail::PendingRoute{pr.qp_sources[q], k, hops});
      table->emplace(std::pair<const sg4::Host*, const sg4::Host*>{pr.qp_sources[q],
                                                                   p.device_hosts[dst]},
                     RouteLatency{src, dst, qp_latency.seconds(), tcp_rate, qp_carrier});
    }
    p.route_index_.emplace(pair_key(src, dst), k);
  }

  // The routes into the zone, the links no flow can saturate left out (bypass_routes.hpp).
  std::vector<const sg4::Link*> aggregate_links;
  for (const auto& [key, link] : aggregates) aggregate_links.push_back(link);
  detail::add_bypass_routes(topology, route_links, aggregate_links, pending,
                            options.drop_implied_links, p);

  // Lossy RoCE: go-back-N goodput on its switch ports (roce_correction.cpp).
  detail::shape_lossy_roce_ports(topology, p);
  p.zone->seal();

  // Scale each route's carrier latency (1 s, or its RTT weight) to its real latency
  // (see platform_builder.hpp).
  auto model = options.latency_model;
  // TCP slow start (tcp_model.hpp), on top of whatever the model charges: a fresh connection's
  // round trips (RTT = 2 x route latency) before its window covers the route's bottleneck.
  const std::optional<TcpOptions> tcp =
      topology.tcp() && topology.tcp()->slow_start ? topology.tcp() : std::nullopt;
  engine.get_netzone_root()->get_network_model()->set_lat_factor_cb(
      [table, model, tcp](double size, const sg4::Host* src, const sg4::Host* dst,
                     const std::vector<sg4::Link*>& /*links*/,
                     const std::unordered_set<sg4::NetZone*>& /*zones*/) {
        const auto it = table->find({src, dst});
        if (it == table->end()) return 1.0;  // loopback (src == dst): SimGrid's own values
        const RouteLatency& r = it->second;
        const double latency =
            model ? model(Bytes{size}, r.src, r.dst, Seconds{r.latency}).seconds() : r.latency;
        const double slow_start =
            tcp && r.tcp_rate > 0.0
                ? tcp_slow_start_latency(*tcp, Bytes{size}, Seconds{2.0 * r.latency},
                                         BytesPerSecond{r.tcp_rate}).seconds()
                : 0.0;
        return (latency + slow_start) / r.carrier;
      });
  return p;
}

}  // namespace gradsync
