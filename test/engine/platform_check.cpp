// platform_check TOPOLOGY.yaml [--cfg=...]
//
// Why it exists: the platform layer is where a wrong link direction, a forgotten latency or a
// SimGrid default (LV08 factors, TCP-gamma window cap, RTT-weighted sharing) would silently
// bend every result. This builds the platform of one topology and sends single messages, one
// at a time, between GPU pairs; each must take exactly
//     sum of link latencies + forwarding latency of the devices crossed + bytes / bottleneck
// computed here from the Router's path, independently of the platform code. It also checks
// that SimGrid's route uses the expected direction of every link.
//
// Pairs: rank 0 -> last rank (crosses the network on multi-node topologies), its reverse, and
// rank 0 -> rank 1. Sizes: 8 B (latency-bound) and 64 MiB (bandwidth-bound).
// Prints one line per check; exits 0 when all hold, 1 on a mismatch, 2 on bad input.
// One SimGrid simulation per process (s4u::Engine is a singleton).
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>

#include <cmath>
#include <cstdint>
#include <algorithm>
#include <cstdio>
#include <exception>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "gradsync/config/topology_loader.hpp"
#include "gradsync/units/config_error.hpp"
#include "gradsync/platform/platform_builder.hpp"
#include "gradsync/topology/topology.hpp"

namespace {

using gradsync::DeviceId;
namespace sg4 = simgrid::s4u;

constexpr double kTolerance = 1e-6;  // relative
constexpr std::uint64_t kSizes[] = {8, 64ULL << 20};

struct Expected {
  double latency = 0.0;     // seconds
  double bottleneck = 0.0;  // bytes/s
  std::vector<const sg4::Link*> links;  // SimGrid links after the egress carrier
  std::size_t tcp_host_links = 0;       // TCP host-cap links after the topology hops
};

// From the Router's path alone: latency, bottleneck and the link direction of every hop.
Expected expect(const gradsync::Topology& topo, const gradsync::Router& router,
                const gradsync::Platform& platform, DeviceId src, DeviceId dst) {
  const gradsync::Route r = router.route(src, dst, gradsync::ecmp_flow_hash(0, src, dst));
  Expected e;
  e.bottleneck = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < r.links.size(); ++i) {
    const gradsync::Link& l = topo.link(r.links[i]);
    e.latency += l.latency.seconds();
    if (i + 1 < r.links.size()) e.latency += topo.device(r.devices[i + 1]).latency.seconds();
    e.bottleneck = std::min(e.bottleneck, l.bandwidth.bytes_per_second() * l.efficiency);
    const gradsync::PlatformLink& pl = platform.links.at(r.links[i]);
    e.links.push_back(r.devices[i] == l.a ? pl.a_to_b : pl.b_to_a);
  }
  // Ethernet (TCP) model: the sending and receiving host ports' caps (tcp_model.hpp).
  if (topo.tcp()) {
    std::vector<const gradsync::Link*> eth;
    for (const gradsync::LinkId id : r.links)
      if (topo.link(id).fabric == gradsync::Fabric::Ethernet) eth.push_back(&topo.link(id));
    if (!eth.empty()) {
      e.tcp_host_links = 2;
      for (const gradsync::Link* l : {eth.front(), eth.back()})
        e.bottleneck = std::min(
            e.bottleneck, gradsync::tcp_host_cap(*topo.tcp(), l->bandwidth).bytes_per_second());
    }
  }
  return e;
}

bool same_links(const std::vector<sg4::Link*>& got, const std::vector<const sg4::Link*>& want,
                std::size_t extra = 0) {
  // SimGrid's route is [egress carrier] + the topology hops (+ `extra` TCP host-cap links).
  if (got.size() != want.size() + 1 + extra) return false;
  for (std::size_t i = 0; i < want.size(); ++i)
    if (got[i + 1] != want[i]) return false;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  sg4::Engine engine(&argc, argv);  // consumes --cfg= options
  if (argc != 2) {
    std::fprintf(stderr, "usage: platform_check TOPOLOGY.yaml [--cfg=...]\n");
    return 2;
  }
  try {
    const gradsync::TopologyFile file = gradsync::load_topology_file(argv[1]);
    const gradsync::Topology& topo = file.topology;
    const gradsync::Router router(topo);
    const auto& gpus = topo.gpus();
    std::vector<std::pair<DeviceId, DeviceId>> pairs;
    if (gpus.size() >= 2) {
      pairs = {{gpus.front(), gpus.back()}, {gpus.back(), gpus.front()}};
      if (gpus.size() > 2) pairs.emplace_back(gpus[0], gpus[1]);
    }
    // Every link in the routes (none dropped as implied): the check compares the SimGrid
    // route with the topology's, hop by hop (flow_symmetry_sim_check shows that dropping the
    // implied links changes no time).
    gradsync::PlatformOptions options;
    options.drop_implied_links = false;
    const gradsync::Platform platform =
        gradsync::build_platform(engine, topo, router, pairs, options);
    std::printf("%s: %zu GPUs, %zu devices, %zu links, %zu routes\n", topo.name().c_str(),
                gpus.size(), topo.devices().size(), topo.links().size(), platform.routes.size());
    if (pairs.empty()) {
      std::printf("nothing to check: fewer than 2 GPUs\n");
      return 0;
    }

    int failures = 0;
    sg4::Actor::create("platform_check", platform.rank_hosts.front(), [&] {
      for (const auto& [src, dst] : pairs) {
        const Expected e = expect(topo, router, platform, src, dst);
        sg4::Host* from = platform.device_hosts[src];
        sg4::Host* to = platform.device_hosts[dst];
        const std::string name = topo.device(src).name + " -> " + topo.device(dst).name;

        std::vector<sg4::Link*> sg_links;
        double sg_latency = 0.0;
        from->route_to(to, sg_links, &sg_latency);
        // Adaptive routing replaces the hops where a flow spreads by aggregate links
        // (platform_builder.hpp): compare the hop count there (ecmp_paths_test checks the spread).
        const gradsync::PlatformRoute* pr = platform.find_route(src, dst);
        const bool spread = pr != nullptr && std::any_of(pr->link_shares.begin(), pr->link_shares.end(),
                                                         [](const auto& s) { return s.share < 1.0; });
        const bool links_ok =
            spread ? sg_links.size() == e.links.size() + 1 + e.tcp_host_links
                   : same_links(sg_links, e.links, e.tcp_host_links);
        std::printf("%s route: %zu hops, %s %s\n", name.c_str(), e.links.size(),
                    spread ? "spread (adaptive), hop count" : "directions", links_ok ? "ok" : "MISMATCH");
        failures += links_ok ? 0 : 1;

        for (std::uint64_t bytes : kSizes) {
          const double expected = e.latency + static_cast<double>(bytes) / e.bottleneck;
          const double start = sg4::Engine::get_clock();
          sg4::Comm::sendto(from, to, bytes);
          const double took = sg4::Engine::get_clock() - start;
          const double rel = std::abs(took - expected) / expected;
          const bool ok = rel <= kTolerance;
          std::printf("%s %llu B: simulated %.9e s, expected %.9e s (latency %.3e s, "
                      "bottleneck %.4g GB/s), rel. error %.1e %s\n",
                      name.c_str(), static_cast<unsigned long long>(bytes), took, expected,
                      e.latency, e.bottleneck / 1e9, rel, ok ? "ok" : "MISMATCH");
          failures += ok ? 0 : 1;
        }
      }
    });
    engine.run();
    std::printf("%s\n", failures == 0 ? "all checks passed" : "FAILED");
    return failures == 0 ? 0 : 1;
  } catch (const gradsync::ConfigError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "platform_check: internal error: %s\n", e.what());
    return 1;
  }
}
