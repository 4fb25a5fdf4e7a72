// RoCE fabric math (fabric_model.hpp): max-min, PFC per-ingress-port sharing with head-of-line
// victims, lossy go-back-N goodput. Expected values are worked out by hand from the model's
// definitions in sim/fabric/README.md.
#include <doctest/doctest.h>

#include "gradsync/fabric_model.hpp"

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
  const auto r = max_min_rates({flow({0}), flow({0, 1}), flow({0})}, {10.0, 2.0});
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
