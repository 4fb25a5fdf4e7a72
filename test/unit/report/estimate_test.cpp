// `gradsync estimate`'s model: the closed forms of estimate.hpp evaluated exactly. Each number
// below is worked out by hand from the formula, so a wrong factor (bits for bytes, n for n−1,
// log2 without the ceiling, efficiency applied twice) changes it.
#include <doctest/doctest.h>

#include <cstddef>
#include <stdexcept>
#include <string>

#include "gradsync/report/estimate.hpp"
#include "gradsync/scenario/step_schedule.hpp"  // with estimate.hpp: one 30 % rule (communication_rule.hpp)
#include "gradsync/units/units.hpp"

namespace {

using namespace gradsync;
using namespace gradsync::literals;

// The README's example: 7e9 fp16 over 10 Gbps, 50 us, 8 GPUs, efficiency 0.6.
EstimateRequest readme_example() {
  EstimateRequest r;
  r.params = 7e9;
  r.dtype = GradDtype::Fp16;
  r.bandwidth = 10_Gbps;  // 1.25e9 B/s
  r.latency = 50_us;
  r.gpus = 8;
  return r;
}

constexpr double kEffective = 1.25e9 * 0.6;  // 7.5e8 B/s
constexpr double kAlpha = 50e-6;

}  // namespace

TEST_CASE("gradient bytes per sync: params x bytes per element") {
  EstimateRequest r = readme_example();
  CHECK(estimate_sync(r).grad_bytes.bytes() == doctest::Approx(14e9));
  r.dtype = GradDtype::Fp32;
  CHECK(estimate_sync(r).grad_bytes.bytes() == doctest::Approx(28e9));
  r.dtype = GradDtype::Bf16;
  CHECK(estimate_sync(r).grad_bytes.bytes() == doctest::Approx(14e9));
  r.dtype = GradDtype::Fp8;
  CHECK(estimate_sync(r).grad_bytes.bytes() == doctest::Approx(7e9));
}

TEST_CASE("naive: 14 GB at 10 Gbps x 0.6 + 50 us = 18.667 s, range at 70 % and 50 %") {
  const SyncEstimate e = estimate_sync(readme_example());
  CHECK(e.effective_bandwidth.bytes_per_second() == doctest::Approx(kEffective));
  CHECK(e.naive_range.point.seconds() == doctest::Approx(14e9 / 7.5e8 + kAlpha).epsilon(1e-12));
  CHECK(e.naive_range.point.seconds() == doctest::Approx(18.66671667).epsilon(1e-9));
  CHECK(e.naive_range.low.seconds() == doctest::Approx(14e9 / (1.25e9 * 0.7) + kAlpha));  // 16 s
  CHECK(e.naive_range.high.seconds() == doctest::Approx(14e9 / (1.25e9 * 0.5) + kAlpha));  // 22.4 s
  CHECK(e.naive_range.low < e.naive_range.point);
  CHECK(e.naive_range.point < e.naive_range.high);
  CHECK(e.naive.time == e.naive_range.point);
}

TEST_CASE("ring n=8: 2(n-1)a + 2(n-1)/n S/B") {
  const SyncEstimate e = estimate_sync(readme_example());
  // 14 steps of 50 us = 0.7 ms; 1.75 × 14e9 / 7.5e8 = 32.6667 s.
  CHECK(e.ring.time.seconds() == doctest::Approx(0.7e-3 + 1.75 * 14e9 / kEffective).epsilon(1e-12));
  CHECK(e.ring.time.seconds() == doctest::Approx(32.66736667).epsilon(1e-9));
  // busbw of a ring is the effective bandwidth less the latency share: nccl-tests' convention
  // makes the two comparable.
  REQUIRE(e.ring.busbw);
  CHECK(e.ring.algbw->bytes_per_second() == doctest::Approx(14e9 / e.ring.time.seconds()));
  CHECK(e.ring.busbw->bytes_per_second() ==
        doctest::Approx(14e9 / e.ring.time.seconds() * 1.75));
  CHECK(e.ring.busbw->bytes_per_second() < kEffective);
  CHECK(e.ring.busbw->bytes_per_second() > 0.9999 * kEffective);
}

TEST_CASE("tree n=8: 2 ceil(log2 n) a + 2S/B, and the ceiling for n not a power of two") {
  const SyncEstimate e = estimate_sync(readme_example());
  CHECK(e.tree.time.seconds() == doctest::Approx(6 * kAlpha + 2 * 14e9 / kEffective).epsilon(1e-12));
  CHECK(e.tree.time.seconds() == doctest::Approx(37.33363333).epsilon(1e-9));
  const Bytes s(1e6);
  const BytesPerSecond b(1e9);
  CHECK(closed_form::tree_allreduce_time(9, s, 1_us, b).seconds() ==
        doctest::Approx(2 * 4 * 1e-6 + 2e-3));
  CHECK(closed_form::tree_allreduce_time(2, s, 1_us, b).seconds() ==
        doctest::Approx(2 * 1 * 1e-6 + 2e-3));
  // Small messages: tree's latency term beats the ring's 2(n-1)a at scale.
  CHECK(closed_form::tree_allreduce_time(1024, Bytes(8), 1_us, b) <
        closed_form::ring_allreduce_time(1024, Bytes(8), 1_us, b));
}

TEST_CASE("parameter server: 2a + 2 S n / (k B), dedicated servers, incast") {
  EstimateRequest r = readme_example();
  SyncEstimate e = estimate_sync(r);
  CHECK(e.ps.time.seconds() == doctest::Approx(2 * kAlpha + 2 * 14e9 * 8 / kEffective).epsilon(1e-12));
  CHECK(e.ps.time.seconds() == doctest::Approx(298.6667667).epsilon(1e-9));
  r.ps_servers = 4;
  e = estimate_sync(r);
  CHECK(e.ps.time.seconds() == doctest::Approx(2 * kAlpha + 2 * 14e9 * 8 / (4 * kEffective)));
  // k = n servers: each moves 2S, the same bandwidth term as a tree.
  r.ps_servers = 8;
  e = estimate_sync(r);
  CHECK(e.ps.time.seconds() - 2 * kAlpha == doctest::Approx(e.tree.time.seconds() - 6 * kAlpha));
}

TEST_CASE("hierarchical: intra ring on S plus inter ring on S/g per rail") {
  EstimateRequest r = readme_example();
  r.gpus = 32;
  SyncEstimate e = estimate_sync(r);
  CHECK_FALSE(e.hierarchical);  // no --gpus-per-node / --intra-bandwidth: row skipped
  r.gpus_per_node = 8;
  e = estimate_sync(r);
  CHECK_FALSE(e.hierarchical);  // --intra-bandwidth still missing
  r.intra_bandwidth = 450_GBps;
  e = estimate_sync(r);
  REQUIRE(e.hierarchical);
  REQUIRE(e.nodes);
  CHECK(*e.nodes == 4);
  const double intra = 450e9 * 0.6;
  const double want = 2 * 7 * kAlpha + 2.0 * 7 / 8 * 14e9 / intra +  // inside the node, g = 8
                      2 * 3 * kAlpha + 2.0 * 3 / 4 * 14e9 / (8 * kEffective);  // N = 4 nodes
  CHECK(e.hierarchical->time.seconds() == doctest::Approx(want).epsilon(1e-12));
  CHECK(e.hierarchical->time < e.ring.time);

  // Degenerate shapes reduce to the ring: one GPU per node, or one node at the same bandwidth.
  const Bytes s(1e9);
  const BytesPerSecond b(1e10);
  CHECK(closed_form::hierarchical_allreduce_time(16, 1, s, 2_us, b, b).seconds() ==
        doctest::Approx(closed_form::ring_allreduce_time(16, s, 2_us, b).seconds()));
  CHECK(closed_form::hierarchical_allreduce_time(16, 16, s, 2_us, b, b).seconds() ==
        doctest::Approx(closed_form::ring_allreduce_time(16, s, 2_us, b).seconds()));
  CHECK_THROWS_AS((void)closed_form::hierarchical_allreduce_time(12, 8, s, 2_us, b, b),
                  std::invalid_argument);
}

TEST_CASE("one GPU: nothing to synchronize, except to a parameter server") {
  EstimateRequest r = readme_example();
  r.gpus = 1;
  r.gpus_per_node = 1;
  r.intra_bandwidth = 450_GBps;
  const SyncEstimate e = estimate_sync(r);
  CHECK(e.naive.time.seconds() == 0.0);
  CHECK(e.naive_range.low.seconds() == 0.0);
  CHECK(e.naive_range.high.seconds() == 0.0);
  CHECK(e.ring.time.seconds() == 0.0);
  CHECK(e.tree.time.seconds() == 0.0);
  REQUIRE(e.hierarchical);
  CHECK(e.hierarchical->time.seconds() == 0.0);
  CHECK_FALSE(e.ring.algbw);  // no bandwidth for a zero-time sync
  CHECK_FALSE(e.ring.busbw);
  CHECK(e.ps.time.seconds() == doctest::Approx(2 * kAlpha + 2 * 14e9 / kEffective));
  REQUIRE(e.ps.busbw);
  CHECK(e.ps.busbw->bytes_per_second() == 0.0);  // 2(n-1)/n = 0
}

TEST_CASE("accumulation amortizes one sync over k micro-batches, compute gives the step share") {
  EstimateRequest r = readme_example();
  r.accumulation = 4;
  r.compute = Seconds(10.0);  // per micro-batch: 40 s of compute per optimizer step
  const SyncEstimate e = estimate_sync(r);
  CHECK(e.ring.time.seconds() == doctest::Approx(32.66736667).epsilon(1e-9));  // unchanged
  CHECK(e.ring.per_micro_batch.seconds() == doctest::Approx(32.66736667 / 4).epsilon(1e-9));
  REQUIRE(e.step_compute);
  CHECK(e.step_compute->seconds() == doctest::Approx(40.0));
  REQUIRE(e.naive.step_share);
  CHECK(*e.naive.step_share == doctest::Approx(18.66671667 / (40 + 18.66671667)));  // 31.8 %
  CHECK(e.naive.communication_bound);
  r.accumulation = 8;  // 80 s of compute: 18.9 %
  const SyncEstimate more = estimate_sync(r);
  CHECK(*more.naive.step_share == doctest::Approx(18.66671667 / (80 + 18.66671667)));
  CHECK_FALSE(more.naive.communication_bound);
  CHECK(more.ps.communication_bound);

  // Without compute there is no share.
  CHECK_FALSE(estimate_sync(readme_example()).naive.step_share);
}

TEST_CASE("parameter counts: plain numbers and K/M/B/T suffixes") {
  CHECK(parse_param_count("7e9") == doctest::Approx(7e9));
  CHECK(parse_param_count("7000000000") == doctest::Approx(7e9));
  CHECK(parse_param_count("7B") == doctest::Approx(7e9));
  CHECK(parse_param_count("7b") == doctest::Approx(7e9));
  CHECK(parse_param_count("1.5T") == doctest::Approx(1.5e12));
  CHECK(parse_param_count("350M") == doctest::Approx(3.5e8));
  CHECK(parse_param_count("25k") == doctest::Approx(2.5e4));
  CHECK(parse_param_count(" 70 B ") == doctest::Approx(7e10));
  CHECK_THROWS_AS((void)parse_param_count(""), UnitError);
  CHECK_THROWS_AS((void)parse_param_count("-7B"), UnitError);
  CHECK_THROWS_AS((void)parse_param_count("7G"), UnitError);
  CHECK_THROWS_AS((void)parse_param_count("7BB"), UnitError);
  CHECK_THROWS_AS((void)parse_param_count("B"), UnitError);
  CHECK_THROWS_AS((void)parse_param_count("inf"), UnitError);
  CHECK_THROWS_AS((void)parse_param_count("nan"), UnitError);
}

TEST_CASE("requests outside the documented ranges are rejected") {
  auto rejects = [](auto change) {
    EstimateRequest r = readme_example();
    change(r);
    CHECK_THROWS_AS((void)estimate_sync(r), std::invalid_argument);
  };
  rejects([](EstimateRequest& r) { r.params = 0; });
  rejects([](EstimateRequest& r) { r.params = 2e14; });
  rejects([](EstimateRequest& r) { r.efficiency = 0; });
  rejects([](EstimateRequest& r) { r.efficiency = 1.01; });
  rejects([](EstimateRequest& r) { r.gpus = 0; });
  rejects([](EstimateRequest& r) { r.gpus = kMaxEstimateGpus + 1; });
  rejects([](EstimateRequest& r) { r.bandwidth = BytesPerSecond(0.0); });
  rejects([](EstimateRequest& r) { r.accumulation = 0; });
  rejects([](EstimateRequest& r) { r.ps_servers = 0; });
  rejects([](EstimateRequest& r) { r.gpus_per_node = 3; });
  EstimateRequest ok = readme_example();
  ok.efficiency = 1.0;
  ok.params = kMaxEstimateParams;
  CHECK_NOTHROW((void)estimate_sync(ok));
}

TEST_CASE("the text report: every number with its unit") {
  EstimateRequest r = readme_example();
  r.compute = Seconds(0.36);
  const std::string text = format_estimate(estimate_sync(r));
  CHECK(text.find("14 GB per sync") != std::string::npos);
  CHECK(text.find("18.67 s") != std::string::npos);
  CHECK(text.find("16 s at 70 %") != std::string::npos);
  CHECK(text.find("22.4 s at 50 %") != std::string::npos);
  CHECK(text.find("32.67 s") != std::string::npos);
  CHECK(text.find("37.33 s") != std::string::npos);
  CHECK(text.find("4.978 min") != std::string::npos);  // 298.7 s
  CHECK(text.find("skipped: give --gpus-per-node and --intra-bandwidth") != std::string::npos);
  CHECK(text.find("communication-bound") != std::string::npos);
  std::size_t non_ascii = 0;
  for (char c : text) non_ascii += static_cast<unsigned char>(c) >= 128 ? 1 : 0;
  CHECK(non_ascii == 0);  // output must survive any terminal
}
