// RoCE fabric math (fabric_model.hpp): max-min, PFC per-ingress-port sharing with head-of-line
// victims, lossy go-back-N goodput. Expected values are worked out by hand from the model's
// definitions in sim/fabric/README.md.
#include <doctest/doctest.h>

#include "gradsync/fabric/fabric_model.hpp"

using namespace gradsync;

namespace {

FluidFlow flow(std::initializer_list<std::size_t> ports) {
  FluidFlow f;
  for (std::size_t p : ports) f.ports.emplace_back(p, 1.0);
  return f;
}

}  // namespace

TEST_CASE("max-min: a shared link splits evenly, a flow bottlenecked elsewhere leaves room") {
  // ports: 0 = shared (10), 1 = narrow (2) on flow 1 only
  const std::vector<FluidFlow> flows{flow({0}), flow({0, 1}), flow({0})};
  const auto r = max_min_rates(flows, {10.0, 2.0});
  CHECK(r[1] == doctest::Approx(2.0));
  CHECK(r[0] == doctest::Approx(4.0));
  CHECK(r[2] == doctest::Approx(4.0));
}

TEST_CASE("PFC without ECN: the congested port is shared per ingress port, not per flow") {
  // Switch egress E = port 4 (capacity 12). Ingress links: port 0 carries 3 flows, ports 1
  // and 2 one flow each. Max-min: 4 each... per flow 12/5 = 2.4; PFC: 12/3 = 4 per ingress
  // port: 4/3 each on port 0, 4 on ports 1 and 2.
  const std::vector<double> cap{100, 100, 100, 100, 12};
  std::vector<bool> egress{false, false, false, false, true};
  const std::vector<FluidFlow> flows{flow({0, 4}), flow({0, 4}), flow({0, 4}), flow({1, 4}),
                                     flow({2, 4})};
  const auto fair = max_min_rates(flows, cap);
  for (double r : fair) CHECK(r == doctest::Approx(2.4));
  const auto pfc = pfc_rates(flows, cap, egress);
  CHECK(pfc[0] == doctest::Approx(4.0 / 3));
  CHECK(pfc[3] == doctest::Approx(4.0));
  CHECK(pfc[4] == doctest::Approx(4.0));
}

TEST_CASE("PFC without ECN: a victim sharing a paused link runs at the congested flow's rate") {
  // Incast of 4 senders (ports 0..3) into E = port 4 (capacity 10): 2.5 each. Sender 0 also
  // sends to an idle port 5 (the victim): max-min gives it 10 - 2.5 = 7.5, PFC holds it at 2.5.
  const std::vector<double> cap{10, 10, 10, 10, 10, 10};
  const std::vector<bool> egress{false, false, false, false, true, true};
  const std::vector<FluidFlow> flows{flow({0, 4}), flow({1, 4}), flow({2, 4}), flow({3, 4}),
                                     flow({0, 5})};
  CHECK(max_min_rates(flows, cap)[4] == doctest::Approx(7.5));
  const auto pfc = pfc_rates(flows, cap, egress);
  CHECK(pfc[0] == doctest::Approx(2.5));
  CHECK(pfc[4] == doctest::Approx(2.5));
}

TEST_CASE("PFC rates of new flows: solved on their connected component, as on all flows") {
  // Two islands. Island A: the incast-with-victim case above (ports 0..5), with a capped flow in
  // flight. Island B: two flows sharing port 6 (capacity 8), one new. New flows: the victim
  // (island A) and flow 7 (island B); the flows before them are in flight.
  const std::vector<double> cap{10, 10, 10, 10, 10, 10, 8};
  const std::vector<bool> egress{false, false, false, false, true, true, true};
  std::vector<FluidFlow> flows{flow({0, 4}), flow({1, 4}), flow({2, 4}), flow({3, 4}),
                               flow({6}),    flow({0, 5}), flow({6})};
  flows[1].cap = 1.0;  // in flight at a PFC rate set earlier
  const auto fair = max_min_rates(flows, cap);
  const auto pfc = pfc_rates(flows, cap, egress, fair);
  const NewFlowRates only_new = pfc_rates_of_new(flows, cap, egress, 5);
  REQUIRE(only_new.fair.size() == 2);
  REQUIRE(only_new.pfc.size() == 2);
  for (std::size_t k = 0; k < 2; ++k) {
    CHECK(only_new.fair[k] == doctest::Approx(fair[5 + k]));
    CHECK(only_new.pfc[k] == doctest::Approx(pfc[5 + k]));
  }
  CHECK(only_new.fair[0] == doctest::Approx(10.0 - 3.0));  // 3 senders at 3, one capped at 1
  CHECK(only_new.pfc[0] == doctest::Approx(2.5));  // held to flow 0: 10 / 4 ingress ports
  CHECK(only_new.pfc[1] == doctest::Approx(4.0));          // island B: half of port 6
  // With every flow new, the component is everything.
  const NewFlowRates all_new = pfc_rates_of_new(flows, cap, egress, 0);
  for (std::size_t f = 0; f < flows.size(); ++f) CHECK(all_new.pfc[f] == doctest::Approx(pfc[f]));
}

TEST_CASE("PFC without congestion changes nothing") {
  const std::vector<double> cap{10, 10, 10};
  const std::vector<bool> egress{false, true, true};
  const std::vector<FluidFlow> flows{flow({0, 1})};
  CHECK(pfc_rates(flows, cap, egress)[0] == doctest::Approx(10.0));
}

TEST_CASE("lossy RoCE: go-back-N goodput (bdp + buffer) / (n bdp), none with ECN or one flow") {
  const Bytes bdp(100e3), buffer(300e3);
  CHECK(lossy_goodput_fraction(1, bdp, buffer, false) == 1.0);
  CHECK(lossy_goodput_fraction(4, bdp, buffer, false) == 1.0);       // 400 KB fits
  CHECK(lossy_goodput_fraction(8, bdp, buffer, false) == doctest::Approx(0.5));
  CHECK(lossy_goodput_fraction(16, bdp, buffer, false) == doctest::Approx(0.25));
  CHECK(lossy_goodput_fraction(16, bdp, buffer, true) == 1.0);
  CHECK(!lossy_burst_overflows(Bytes(400e3), bdp, buffer));
  CHECK(lossy_burst_overflows(Bytes(400.1e3), bdp, buffer));
}

TEST_CASE("RoCE defaults carry their cited values") {
  const RoceOptions o;
  CHECK(o.pfc);
  CHECK(o.ecn);
  CHECK(o.buffer.bytes() == 1500e3);                                   // NVIDIA ECN Kmax
  CHECK(o.retransmit_timeout.seconds() == doctest::Approx(4.294967296));  // 4.096 us x 2^20
}
