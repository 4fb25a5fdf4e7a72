// The pure step schedule (step_schedule.hpp) on models small enough to work out by hand: DDP
// buckets (first 1 MiB, then the cap, reverse layer order), wire sizes after compression, the
// timeline of one optimizer step on a serial comm stream, and the metrics built on it.
// Links gradsync_model only.
#include <doctest/doctest.h>

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "gradsync/scenario/scenario.hpp"
#include "gradsync/scenario/step_schedule.hpp"

namespace {

using namespace gradsync;
using namespace gradsync::literals;

constexpr double kMiB = 1048576.0;

// `count` layers of `params` each, 1 ms forward and 2 ms backward per layer.
ModelSpec uniform_model(std::size_t count, double params, GradDtype dtype = GradDtype::Fp32) {
  ModelSpec m;
  m.grad_dtype = dtype;
  for (std::size_t i = 0; i < count; ++i)
    m.layers.push_back(LayerSpec{"l" + std::to_string(i), params, 1_ms, 2_ms, {}});
  return m;
}

ComputeSpec compute_of(const ModelSpec& m, Seconds optimizer = 0_ms, std::uint32_t samples = 8) {
  ComputeSpec c;
  for (const auto& l : m.layers) {
    c.forward += l.forward;
    c.backward += l.backward;
  }
  c.optimizer = optimizer;
  c.samples_per_micro_batch = samples;
  return c;
}

double seconds(Seconds s) { return s.seconds(); }

}  // namespace

TEST_CASE("buckets: first bucket 1 MiB, then 25 MiB, closed once reached (DDP), bytes conserved") {
  // 100 layers of 100k fp32 parameters = 400 kB each. DDP closes a bucket as soon as it holds
  // its limit: 3 layers reach the first 1 MiB (1.2 MB >= 1,048,576), 66 reach 25 MiB (26.4 MB
  // >= 26,214,400; 65 would be 26.0 MB), the last 31 remain.
  const ModelSpec model = uniform_model(100, 100'000);
  const SyncSpec sync;  // DDP defaults
  const auto buckets = build_buckets(model, sync);
  REQUIRE(buckets.size() == 3);
  CHECK(buckets[0].bytes.bytes() == doctest::Approx(1.2e6));
  CHECK(buckets[0].layers == std::vector<std::size_t>{99, 98, 97});
  CHECK(buckets[1].layers.size() == 66);
  CHECK(buckets[2].layers.size() == 31);
  for (const auto& b : buckets) CHECK(b.bytes.bytes() < 25 * kMiB + 400e3);  // by < one tensor

  double sum = 0.0;
  std::size_t expected_layer = 99;
  Seconds previous_ready{0.0};
  for (const auto& b : buckets) {
    sum += b.bytes.bytes();
    for (std::size_t layer : b.layers) CHECK(layer == expected_layer--);  // reverse order
    CHECK(b.ready_offset >= previous_ready);
    previous_ready = b.ready_offset;
  }
  CHECK(sum == doctest::Approx(model.grad_bytes().bytes()));
  CHECK(model.grad_bytes().bytes() == doctest::Approx(100 * 100'000 * 4.0));
  // A bucket is ready when backward has produced its last (lowest-index) layer: layers 99 … 97
  // take 3 × 2 ms; the last bucket ends with layer 0, at the end of backward (200 ms).
  CHECK(seconds(buckets[0].ready_offset) == doctest::Approx(6e-3));
  CHECK(seconds(buckets[2].ready_offset) == doctest::Approx(200e-3));
}

TEST_CASE("buckets: a tensor larger than the cap closes a bucket alone, layerwise is one per layer") {
  ModelSpec model;
  model.grad_dtype = GradDtype::Fp32;
  model.layers = {{"small", 2.5e6, 1_ms, 2_ms, {}},  // 10 MB
                  {"huge", 25e6, 1_ms, 2_ms, {}},    // 100 MB > 25 MiB
                  {"relu", 0.0, 1_ms, 2_ms, {}},     // no parameters, no gradient
                  {"head", 2.5e6, 1_ms, 2_ms, {}}};  // 10 MB > the 1 MiB first bucket
  SyncSpec sync;
  const auto buckets = build_buckets(model, sync);
  REQUIRE(buckets.size() == 3);
  CHECK(buckets[0].layers == std::vector<std::size_t>{3});
  CHECK(buckets[1].layers == std::vector<std::size_t>{1});
  CHECK(buckets[1].bytes.bytes() == doctest::Approx(100e6));
  CHECK(buckets[2].layers == std::vector<std::size_t>{0});

  sync.overlap = Overlap::Layerwise;
  const auto per_layer = build_buckets(uniform_model(5, 1000), sync);
  REQUIRE(per_layer.size() == 5);
  for (std::size_t k = 0; k < 5; ++k) {
    CHECK(per_layer[k].layers == std::vector<std::size_t>{4 - k});
    CHECK(seconds(per_layer[k].ready_offset) == doctest::Approx(2e-3 * static_cast<double>(k + 1)));
  }
  CHECK(build_buckets(model, sync).size() == 3);  // the parameter-free layer gets none
}

TEST_CASE("wire: int8 halves fp16 gradients, int4 quarters them, fp8 grads stay as they are") {
  const ModelSpec fp16 = uniform_model(10, 1e6, GradDtype::Fp16);
  SyncSpec sync;
  const auto buckets = build_buckets(fp16, sync);
  sync.compression.method = CompressionMethod::Int8;
  const SyncPlan int8 = plan_sync(buckets, fp16, sync, 8);
  CHECK(int8.grad_bytes.bytes() == doctest::Approx(20e6));
  CHECK(int8.wire_bytes.bytes() == doctest::Approx(10e6));
  for (const auto& w : int8.buckets) {
    CHECK(w.op == CollectiveOp::AllReduce);
    CHECK(w.bytes == w.per_rank_bytes);
  }
  sync.compression.method = CompressionMethod::Int4;
  CHECK(plan_sync(buckets, fp16, sync, 8).wire_bytes.bytes() == doctest::Approx(5e6));

  const ModelSpec fp8 = uniform_model(10, 1e6, GradDtype::Fp8);
  sync.compression.method = CompressionMethod::Int8;
  const SyncPlan same = plan_sync(build_buckets(fp8, sync), fp8, sync, 8);
  CHECK(same.wire_bytes.bytes() == doctest::Approx(10e6));
  CHECK_FALSE(same.notes.empty());
}

TEST_CASE("wire: top-k under allreduce is an AllGather of n·k (index, value) pairs") {
  // fp32 values + int32 indices = 8 bytes per pair; ratio 1 % of 1e6 elements = 10,000 pairs.
  const ModelSpec model = uniform_model(4, 1e6);
  SyncSpec sync;
  sync.overlap = Overlap::Layerwise;
  sync.compression.method = CompressionMethod::TopK;
  sync.compression.ratio = 0.01;
  const auto buckets = build_buckets(model, sync);
  const std::uint32_t n = 16;
  const SyncPlan plan = plan_sync(buckets, model, sync, n);
  REQUIRE(plan.buckets.size() == 4);
  for (const auto& w : plan.buckets) {
    CHECK(w.op == CollectiveOp::AllGather);
    CHECK(w.per_rank_bytes.bytes() == doctest::Approx(10'000 * 8.0));
    CHECK(w.bytes.bytes() == doctest::Approx(n * 10'000 * 8.0));
  }
  // 16 ranks × 1 % × 8/4 bytes: 32 % of the dense bytes, not 1 %.
  CHECK(plan.wire_bytes / plan.grad_bytes == doctest::Approx(0.32));
  REQUIRE_FALSE(plan.notes.empty());
  CHECK(plan.notes.front().find("AllGather") != std::string::npos);

  // Under a parameter server the servers sum sparse pushes: k pairs each way.
  sync.strategy = SyncStrategy::ParameterServer;
  for (const auto& w : plan_sync(buckets, model, sync, n).buckets) {
    CHECK(w.op == CollectiveOp::AllReduce);
    CHECK(w.bytes.bytes() == doctest::Approx(10'000 * 8.0));
  }
}

TEST_CASE("wire: codec time per byte, error feedback triples the encoder's memory traffic") {
  const ModelSpec model = uniform_model(1, 25e6, GradDtype::Fp16);  // 50 MB
  SyncSpec sync;
  sync.compression.method = CompressionMethod::Int8;
  sync.compression.encode_rate = 100_GBps;
  sync.compression.decode_rate = 50_GBps;
  const auto buckets = build_buckets(model, sync);
  SyncPlan plan = plan_sync(buckets, model, sync, 4);
  CHECK(seconds(plan.buckets[0].encode) == doctest::Approx(50e6 / 100e9));
  CHECK(seconds(plan.buckets[0].decode) == doctest::Approx(25e6 / 50e9));
  CHECK(plan.error_feedback_bytes.bytes() == 0.0);
  sync.compression.error_feedback = true;
  plan = plan_sync(buckets, model, sync, 4);
  CHECK(seconds(plan.buckets[0].encode) == doctest::Approx(3 * 50e6 / 100e9));
  CHECK(plan.error_feedback_bytes.bytes() == doctest::Approx(50e6));
}

TEST_CASE("step: serial comm stream, start_k = max(ready_k, end_k-1), worked by hand") {
  // Three layers, 10 ms backward each, one bucket per layer (layerwise); collectives of 5, 20
  // and 5 ms. Ready at 10, 20, 30 ms into backward: 10→15, max(20,15)=20→40, max(30,40)=40→45.
  ModelSpec model;
  for (int i = 0; i < 3; ++i) model.layers.push_back({"l", 1e6, 5_ms, 10_ms, {}});
  SyncSpec sync;
  sync.overlap = Overlap::Layerwise;
  const auto buckets = build_buckets(model, sync);
  const SyncPlan plan = plan_sync(buckets, model, sync, 2);
  const std::vector<Seconds> times{5_ms, 20_ms, 5_ms};
  const ComputeSpec compute = compute_of(model, 4_ms);
  const StepTimeline t =
      compose_step(buckets, plan, times, compute, {Overlap::Layerwise, 1, false});
  REQUIRE(t.buckets.size() == 3);
  const double bwd0 = 15e-3;  // forward 3 × 5 ms
  CHECK(seconds(t.buckets[0].start) == doctest::Approx(bwd0 + 10e-3));
  CHECK(seconds(t.buckets[1].start) == doctest::Approx(bwd0 + 20e-3));
  CHECK(seconds(t.buckets[2].start) == doctest::Approx(bwd0 + 40e-3));
  CHECK(seconds(t.buckets[2].end) == doctest::Approx(bwd0 + 45e-3));
  CHECK(seconds(t.backward_end) == doctest::Approx(45e-3));
  CHECK(seconds(t.exposed_comm) == doctest::Approx(15e-3));
  CHECK(seconds(t.comm_time) == doctest::Approx(30e-3));
  CHECK(seconds(t.compute_time) == doctest::Approx(49e-3));
  CHECK(seconds(t.step_time) == doctest::Approx(64e-3));
  CHECK(t.compute.back().phase == ComputePhase::Optimizer);
  CHECK(seconds(t.compute.back().start) == doctest::Approx(60e-3));
}

TEST_CASE("step: no overlap costs compute + comm, bucketed overlap hides part of it") {
  const ModelSpec model = uniform_model(40, 1e6);  // 4 MB per layer
  SyncSpec sync;
  const auto buckets = build_buckets(model, sync);
  const SyncPlan plan = plan_sync(buckets, model, sync, 8);
  std::vector<Seconds> times;
  for (const auto& b : buckets) times.push_back(Seconds(b.bytes.bytes() / 10e9));  // 10 GB/s
  const ComputeSpec compute = compute_of(model, 3_ms);

  const StepTimeline none = compose_step(buckets, plan, times, compute, {Overlap::None, 1, false});
  CHECK(none.step_time >= none.compute_time + none.comm_time);
  CHECK(seconds(none.step_time) == doctest::Approx(seconds(compute.forward + compute.backward +
                                                           compute.optimizer + none.comm_time)));
  CHECK(seconds(none.exposed_comm) == doctest::Approx(seconds(none.comm_time)));

  const StepTimeline bucketed =
      compose_step(buckets, plan, times, compute, {Overlap::Bucketed, 1, false});
  CHECK(bucketed.comm_time == none.comm_time);
  CHECK(bucketed.exposed_comm < none.exposed_comm);
  CHECK(bucketed.step_time < none.step_time);
  // Each collective starts no earlier than its bucket is ready, in order, without overlapping.
  for (std::size_t k = 0; k < bucketed.buckets.size(); ++k) {
    CHECK(bucketed.buckets[k].start >= bucketed.buckets[k].ready);
    if (k > 0) CHECK(bucketed.buckets[k].start >= bucketed.buckets[k - 1].end);
  }
}

TEST_CASE("step: accumulation over k micro-batches divides the syncs per sample by k") {
  const ModelSpec model = uniform_model(8, 1e6);
  SyncSpec sync;
  const auto buckets = build_buckets(model, sync);
  const SyncPlan plan = plan_sync(buckets, model, sync, 4);
  const std::vector<Seconds> times(buckets.size(), 7_ms);
  const ComputeSpec compute = compute_of(model, 2_ms, 16);
  const StepTimeline one = compose_step(buckets, plan, times, compute, {Overlap::None, 1, false});
  const StepTimeline four = compose_step(buckets, plan, times, compute, {Overlap::None, 4, false});
  const double per_sample_1 = seconds(one.comm_time) / samples_per_step(compute, 1, 4);
  const double per_sample_4 = seconds(four.comm_time) / samples_per_step(compute, 4, 4);
  CHECK(per_sample_4 == doctest::Approx(per_sample_1 / 4));
  CHECK(seconds(four.compute_time) == doctest::Approx(4 * 24e-3 + 2e-3));
  CHECK(seconds(four.exposed_comm) == doctest::Approx(seconds(one.exposed_comm)));
  std::size_t backwards = 0;
  for (const auto& c : four.compute) backwards += c.phase == ComputePhase::Backward ? 1 : 0;
  CHECK(backwards == 4);
}

TEST_CASE("step: async parameter server never waits, staleness counts steps started meanwhile") {
  const ModelSpec model = uniform_model(4, 1e6);
  SyncSpec sync;
  const auto buckets = build_buckets(model, sync);
  const SyncPlan plan = plan_sync(buckets, model, sync, 4);
  const ComputeSpec compute = compute_of(model, 5_ms);  // 4 + 8 ms per micro-batch
  // Comm shorter than compute: the step is the worker's compute (no optimizer on the worker).
  std::vector<Seconds> fast(buckets.size(), Seconds(1e-3));
  StepTimeline t = compose_step(buckets, plan, fast, compute, {Overlap::None, 1, true});
  CHECK(seconds(t.step_time) == doctest::Approx(12e-3));
  CHECK(t.exposed_comm.seconds() == 0.0);
  CHECK(t.staleness_steps == 1);
  // Comm of 40 ms per step: pushes queue, the step stretches to 40 ms; the pull of a step's
  // update lands 40 ms after its backward, i.e. 1 step of 40 ms later.
  std::vector<Seconds> slow(buckets.size(), Seconds(40e-3 / static_cast<double>(buckets.size())));
  t = compose_step(buckets, plan, slow, compute, {Overlap::None, 1, true});
  CHECK(seconds(t.step_time) == doctest::Approx(40e-3));
  CHECK(seconds(t.exposed_comm) == doctest::Approx(28e-3));
  CHECK(t.staleness_steps == 1);
  // One serial comm stream paces the worker: even a 100 ms pull lag against 12 ms of compute
  // stretches the step to 100 ms, so the worker runs one step ahead of its own update, and
  // with 4 workers in lockstep 3 other updates land in between (staleness in server updates).
  std::vector<Seconds> lagging(buckets.size(), Seconds(0.0));
  lagging.back() = 100_ms;
  StepTimeline b = compose_step(buckets, plan, lagging, compute, {Overlap::Bucketed, 1, true});
  CHECK(seconds(b.step_time) == doctest::Approx(100e-3));
  CHECK(b.staleness_steps == 1);
  const StepMetrics m = step_metrics(b, compute, 1, 4);
  CHECK(m.staleness_steps == 1);
  CHECK(m.staleness_updates == 3);
  b = compose_step(buckets, plan, std::vector<Seconds>(buckets.size(), Seconds(0.0)), compute,
                   {Overlap::None, 1, true});
  CHECK(b.staleness_steps == 0);
}

TEST_CASE("metrics: samples, scaling efficiency and the 30 % verdict") {
  ComputeSpec compute;
  compute.forward = 10_ms;
  compute.backward = 20_ms;
  compute.optimizer = 10_ms;
  compute.samples_per_micro_batch = 32;
  CHECK(samples_per_step(compute, 4, 8) == 32 * 4 * 8);
  CHECK(single_gpu_samples_per_s(compute, 1) == doctest::Approx(32 / 40e-3));

  StepTimeline t;
  t.compute_time = 40_ms;
  t.comm_time = 30_ms;
  t.exposed_comm = Seconds(0.0);
  t.step_time = 40_ms;
  StepMetrics m = step_metrics(t, compute, 1, 8);
  CHECK(m.scaling_efficiency == doctest::Approx(1.0));
  CHECK(m.gpu_utilization == doctest::Approx(1.0));
  CHECK(m.comm_compute_ratio == doctest::Approx(0.75));
  CHECK(m.verdict == Verdict::ComputeBound);

  t.exposed_comm = 20_ms;  // 20 / 60 = 33 % > 30 %
  t.step_time = 60_ms;
  m = step_metrics(t, compute, 1, 8);
  CHECK(m.scaling_efficiency == doctest::Approx(40.0 / 60.0));
  CHECK(m.samples_per_s == doctest::Approx(32 * 8 / 60e-3));
  CHECK(m.verdict == Verdict::CommunicationBound);
  CHECK(to_string(m.verdict) == "communication-bound");
  CHECK(verdict_of(Seconds(0.3), Seconds(1.0)) == Verdict::ComputeBound);  // exactly 30 %: not over
}

TEST_CASE("transformer sizing: 32 × (12h² + 13h) + 2·vocab·h (+2h final norm) ≈ 6.7e9 for 7B") {
  // What is counted: per block QKV 3h²+3h, attention output h²+h, MLP 4h²+4h and 4h²+h, two
  // layer norms 4h; an untied embedding and head of vocab × h each; the final norm 2h.
  // No position embeddings (RoPE).
  TransformerShape shape;
  shape.blocks = 32;
  shape.hidden = 4096;
  shape.vocab = 32000;
  const double h = 4096, v = 32000;
  const double expected = 32 * (12 * h * h + 13 * h) + 2 * v * h + 2 * h;
  CHECK(transformer_block_params(h) == 12 * h * h + 13 * h);
  CHECK(transformer_params(shape) == doctest::Approx(expected));
  CHECK(transformer_params(shape) == doctest::Approx(6.7e9).epsilon(0.01));

  const auto layers = transformer_layers(shape, std::nullopt, 100_ms, 200_ms);
  REQUIRE(layers.size() == 34);
  CHECK(layers.front().name == "embedding");
  CHECK(layers.back().name == "head");
  double params = 0.0;
  Seconds forward{0.0}, backward{0.0};
  for (const auto& l : layers) {
    params += l.params;
    forward += l.forward;
    backward += l.backward;
  }
  CHECK(params == doctest::Approx(expected));
  CHECK(seconds(forward) == doctest::Approx(0.1));
  CHECK(seconds(backward) == doctest::Approx(0.2));
  // The embedding holds vocab·h parameters but no compute; the head's share is
  // 2hV / (32·24h² + 2hV) without the attention term (seq_len 0).
  CHECK(layers.front().params == v * h);
  CHECK(layers.front().forward.seconds() == 0.0);
  const double head_share = 2 * h * v / (32 * 24 * h * h + 2 * h * v);
  CHECK(seconds(layers.back().forward) == doctest::Approx(0.1 * head_share));

  // A stated parameter count scales the blocks only.
  const auto scaled = transformer_layers(shape, 6.74e9, 100_ms, 200_ms);
  double total = 0.0;
  for (const auto& l : scaled) total += l.params;
  CHECK(total == doctest::Approx(6.74e9));
  CHECK(scaled.front().params == v * h);
  CHECK_THROWS_AS((void)transformer_layers(shape, 1e8, 100_ms, 200_ms), std::invalid_argument);

  // Tied embeddings: the head keeps its compute and only the final norm's parameters.
  shape.tie_embeddings = true;
  CHECK(transformer_params(shape) == doctest::Approx(expected - v * h));
}

TEST_CASE("presets: params only is one layer, layers: N gives N equal layers") {
  const auto one = equal_layers(25e6, 1, 30_ms, 60_ms);
  REQUIRE(one.size() == 1);
  CHECK(one[0].params == 25e6);
  const auto four = equal_layers(25e6, 4, 40_ms, 80_ms);
  REQUIRE(four.size() == 4);
  CHECK(four[3].params == doctest::Approx(6.25e6));
  CHECK(seconds(four[3].backward) == doctest::Approx(20e-3));
  std::vector<LayerSpec> layers(2);
  const std::vector<double> zero{0.0, 0.0};
  CHECK_THROWS_AS(split_compute(layers, zero, 1_ms, 2_ms), std::invalid_argument);
}

TEST_CASE("dedicated parameter servers are not data-parallel workers") {
  SyncSpec sync;
  CHECK(data_parallel_ranks(32, sync) == 32);
  sync.strategy = SyncStrategy::ParameterServer;
  sync.ps.servers = 4;
  CHECK(data_parallel_ranks(32, sync) == 28);
  sync.ps.placement = PsPlacement::Colocated;
  CHECK(data_parallel_ranks(32, sync) == 32);
  CHECK(to_string(SyncStrategy::AsyncParameterServer) == "async-ps");
  CHECK(sync_algorithm_from_string("hierarchical") == SyncAlgorithm::Hierarchical);
  CHECK_FALSE(overlap_from_string("sometimes").has_value());
}
