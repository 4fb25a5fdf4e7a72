// The fabric corrections (sim/engine/fabric_correction.hpp) on hand-built paths: what each asks
// of a start (extra latency, rate cap) and which parts in flight it restarts.
#include <doctest/doctest.h>

#include <array>
#include <vector>

#include "fabric_correction.hpp"
#include "gradsync/fabric/tcp_model.hpp"

using namespace gradsync;
using detail::PortHop;
using detail::StartAdjustment;
using detail::StartingPart;

namespace {

// Parts with start numbers 1, 2, ... and one transfer each, over paths they keep (a part's
// hops are a view).
struct Parts {
  std::vector<std::vector<PortHop>> paths;
  std::vector<StartingPart> parts;
  std::size_t size() const { return parts.size(); }
  const StartingPart& operator[](std::size_t k) const { return parts[k]; }
  operator std::span<const StartingPart>() const { return parts; }
};

Parts parts_on(std::vector<std::vector<PortHop>> paths, double bytes, double route_latency_s) {
  Parts out{std::move(paths), {}};
  for (std::size_t k = 0; k < out.paths.size(); ++k)
    out.parts.push_back(StartingPart{k + 1, k, out.paths[k], bytes, route_latency_s});
  return out;
}

}  // namespace

TEST_CASE("RoCE PFC: flows sharing an ingress port start capped, and restart when it frees") {
  // Hosts A and B into a switch (ports 0 and 1, 100 B/s), its egress port 2 to D (100 B/s).
  // Two flows from A and one from B converge on port 2: PFC shares it per ingress port, 50 to
  // A's two flows (25 each) and 50 to B's one, where max-min gives each 100/3.
  const std::vector<double> capacity{100.0, 100.0, 100.0};
  const std::vector<bool> leaves_switch{false, false, true};
  auto pfc = detail::make_roce_pfc_correction(capacity, leaves_switch);
  CHECK(pfc->caps_rates());
  const std::vector<PortHop> from_a{{0, 100.0, Fabric::Roce, false},
                                    {2, 100.0, Fabric::Roce, true}};
  const std::vector<PortHop> from_b{{1, 100.0, Fabric::Roce, false},
                                    {2, 100.0, Fabric::Roce, true}};
  const std::vector<std::vector<PortHop>> paths{from_a, from_a, from_b};
  const auto parts = parts_on(paths, 1e6, 1e-6);
  std::vector<StartAdjustment> adjust(parts.size());
  pfc->on_start(parts, adjust);
  CHECK(adjust[0].cap_rate == doctest::Approx(25.0));
  CHECK(adjust[0].rate_factor == doctest::Approx(0.75));  // 25 of a 100/3 share
  CHECK(adjust[1].cap_rate == doctest::Approx(25.0));
  CHECK(adjust[2].cap_rate == 0.0);  // 50 is above its max-min share: not capped
  CHECK(adjust[2].rate_factor == 0.0);
  CHECK(adjust[0].extra_latency_s == 0.0);
  for (std::size_t k = 0; k < parts.size(); ++k) pfc->started(parts[k], adjust[k]);

  SUBCASE("B's flow ends: A's two flows have port 2 to themselves, uncapped") {
    std::vector<detail::Restart> restarts;
    pfc->finished(3, restarts);
    REQUIRE(restarts.size() == 2);
    CHECK(restarts[0].seq == 1);
    CHECK(restarts[1].seq == 2);
    CHECK(restarts[0].rate_factor == 0.0);
    CHECK(restarts[0].cap_rate == 0.0);
  }
  SUBCASE("one of A's flows ends: the other gets 50 of port 2, its fair share, uncapped") {
    std::vector<detail::Restart> restarts;
    pfc->finished(1, restarts);
    REQUIRE(restarts.size() == 1);
    CHECK(restarts[0].seq == 2);
    CHECK(restarts[0].cap_rate == 0.0);
  }
  SUBCASE("a flow that started later joins the fixed point of those in flight") {
    std::vector<StartAdjustment> more(1);
    const std::vector<StartingPart> late{StartingPart{4, 0, from_b, 1e6, 1e-6}};
    pfc->on_start(late, more);
    // A keeps 50 (25 x 2), B's two flows share 50: 25 each, below max-min's 25 -> no cap.
    CHECK(more[0].cap_rate == 0.0);
  }
}

TEST_CASE("RoCE PFC: no congestion, no cap and nothing to restart") {
  auto pfc = detail::make_roce_pfc_correction({100.0, 100.0}, {false, true});
  const std::vector<PortHop> path{{0, 100.0, Fabric::Roce, false}, {1, 100.0, Fabric::Roce, true}};
  const auto parts = parts_on({path}, 1e6, 1e-6);
  std::vector<StartAdjustment> adjust(1);
  pfc->on_start(parts, adjust);
  CHECK(adjust[0].rate_factor == 0.0);
  pfc->started(parts[0], adjust[0]);
  std::vector<detail::Restart> restarts;
  pfc->finished(1, restarts);
  CHECK(restarts.empty());
}

TEST_CASE("lossy RoCE: parts whose first burst overflows a switch port wait for the timeout") {
  RoceOptions roce;
  roce.pfc = false;
  auto lossy = detail::make_roce_lossy_correction(roce);
  CHECK_FALSE(lossy->caps_rates());
  // A switch egress of 10 GB/s, route latency 10 us: bdp = 10e9 x 20e-6 = 200 kB per part.
  // The port drains one bdp and buffers 1.5 MB: 8 parts (1.6 MB) fit, 10 (2.0 MB) overflow.
  const std::vector<PortHop> path{{0, 10e9, Fabric::Roce, false}, {3, 10e9, Fabric::Roce, true}};
  for (const auto& [count, overflows] : {std::pair{8, false}, std::pair{10, true}}) {
    CAPTURE(count);
    const auto parts = parts_on(std::vector<std::vector<PortHop>>(count, path), 1e6, 10e-6);
    std::vector<StartAdjustment> adjust(parts.size());
    lossy->on_start(parts, adjust);
    for (const StartAdjustment& a : adjust) {
      CHECK(a.extra_latency_s == (overflows ? roce.retransmit_timeout.seconds() : 0.0));
      CHECK(a.rate_factor == 0.0);
    }
  }
  // Small parts put their whole size, not a bdp, on the port: 10 x 100 kB fit.
  const auto small = parts_on(std::vector<std::vector<PortHop>>(10, path), 1e5, 10e-6);
  std::vector<StartAdjustment> adjust(small.size());
  lossy->on_start(small, adjust);
  CHECK(adjust[0].extra_latency_s == 0.0);
  // A port that does not leave a switch (a host's NIC) never overflows here.
  const std::vector<PortHop> host_only{{0, 10e9, Fabric::Roce, false}};
  const auto hosts = parts_on(std::vector<std::vector<PortHop>>(10, host_only), 1e6, 10e-6);
  std::vector<StartAdjustment> host_adjust(hosts.size());
  lossy->on_start(hosts, host_adjust);
  CHECK(host_adjust[0].extra_latency_s == 0.0);
}

TEST_CASE("TCP incast: bursts converging from several ingress ports pay rto_min once") {
  // The overflow rule, from two flows on (incast_flows: 2); the default's 5 at the end.
  TcpOptions tcp;
  tcp.incast_flows = 2;
  auto incast = detail::make_tcp_incast_correction(tcp);
  // 10 GbE receiving port 4 (1.25 GB/s) leaving a switch, entered from ports 1 or 2; route
  // latency 5 us: the port holds 384 KiB + 1.25e9 x 10 us = 405 kB.
  const std::vector<PortHop> via_1{{0, 1.25e9, Fabric::Ethernet, false},
                                   {1, 1.25e9, Fabric::Ethernet, true},
                                   {4, 1.25e9, Fabric::Ethernet, true}};
  const std::vector<PortHop> via_2{{5, 1.25e9, Fabric::Ethernet, false},
                                   {2, 1.25e9, Fabric::Ethernet, true},
                                   {4, 1.25e9, Fabric::Ethernet, true}};
  auto extra = [&](const std::vector<std::vector<PortHop>>& paths, double bytes) {
    const auto parts = parts_on(paths, bytes, 5e-6);
    std::vector<StartAdjustment> adjust(parts.size());
    incast->on_start(parts, adjust);
    std::vector<double> out;
    for (const StartAdjustment& a : adjust) out.push_back(a.extra_latency_s);
    return out;
  };
  // Two 1 MiB blocks from two ingress ports: 2 MiB > 405 kB.
  const double rto = tcp.rto_min.seconds();  // Linux TCP_RTO_MIN, 200 ms
  CHECK(extra({via_1, via_2}, 1048576.0) == std::vector<double>{rto, rto});
  // The same blocks through one ingress port: no convergence, no incast.
  CHECK(extra({via_1, via_1}, 1048576.0) == std::vector<double>{0.0, 0.0});
  // Two 100 kB blocks fit the port.
  CHECK(extra({via_1, via_2}, 1e5) == std::vector<double>{0.0, 0.0});
  // A block over 4 MiB counts one send window: 2 x 4 MiB still overflows, not more.
  CHECK(extra({via_1, via_2}, 64e6) == std::vector<double>{rto, rto});
  // A host-to-host cable has no switch port to overflow.
  const std::vector<PortHop> cable{{6, 1.25e9, Fabric::Ethernet, false}};
  CHECK(extra({cable, cable}, 1048576.0) == std::vector<double>{0.0, 0.0});
  // Off: nothing.
  TcpOptions off = tcp;
  off.incast = false;
  auto none = detail::make_tcp_incast_correction(off);
  const auto parts = parts_on({via_1, via_2}, 1048576.0, 5e-6);
  std::vector<StartAdjustment> adjust(parts.size());
  none->on_start(parts, adjust);
  CHECK(adjust[0].extra_latency_s == 0.0);
  // The default: fewer than 5 converging flows never time out (ns-3: 2-4 senders of 1-16 MiB
  // into a 384 KiB port recover by fast retransmit), 5 and more from two ports or more do.
  const TcpOptions defaults;
  CHECK(defaults.incast_flows == 5);
  auto fan_in = detail::make_tcp_incast_correction(defaults);
  auto extra_default = [&](const std::vector<std::vector<PortHop>>& paths) {
    const auto p = parts_on(paths, 1048576.0, 5e-6);
    std::vector<StartAdjustment> a(p.size());
    fan_in->on_start(p, a);
    std::vector<double> out;
    for (const StartAdjustment& x : a) out.push_back(x.extra_latency_s);
    return out;
  };
  CHECK(extra_default({via_1, via_2}) == std::vector<double>{0.0, 0.0});
  CHECK(extra_default({via_1, via_2, via_1, via_2}) == std::vector<double>(4, 0.0));
  CHECK(extra_default({via_1, via_2, via_1, via_2, via_1}) == std::vector<double>(5, rto));
  CHECK(extra_default({via_1, via_1, via_1, via_1, via_1}) == std::vector<double>(5, 0.0));
}
