// Sharded and tensor × pipeline layouts, pure (parallel_layout.hpp, memory_model.hpp,
// parallel_step.hpp): rank groups, memory against the ZeRO paper's Table 1, the bytes each data
// mode moves, the 1F1B bubble formula, and plain DDP through the parallel composer equal to
// compose_step(), collectives that overlap slowed at the rates simulated together. Collective
// durations come from closed-form timers, not the engine.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "gradsync/scenario/memory_model.hpp"
#include "gradsync/scenario/parallel_layout.hpp"
#include "gradsync/scenario/parallel_step.hpp"
#include "gradsync/scenario/step_schedule.hpp"

namespace {

using namespace gradsync;
using namespace gradsync::literals;

// `count` transformer-like blocks ("block<i>") of `params` each, fwd/bwd per layer.
ModelSpec blocks(std::size_t count, double params, Seconds fwd = 1_ms, Seconds bwd = 2_ms,
                 GradDtype dtype = GradDtype::Bf16) {
  ModelSpec m;
  m.grad_dtype = dtype;
  for (std::size_t i = 0; i < count; ++i)
    m.layers.push_back(LayerSpec{"block" + std::to_string(i), params, fwd, bwd, {}});
  return m;
}

ComputeSpec parallel_compute_of(const ModelSpec& m, Seconds optimizer = 0_ms) {
  ComputeSpec c;
  for (const auto& l : m.layers) {
    c.forward += l.forward;
    c.backward += l.backward;
  }
  c.optimizer = optimizer;
  return c;
}

// A ring over the group at `bw` bytes/s per rank: factor × S / bw (no latency).
CommTimer ring_timer(const ParallelLayout& layout, double bw) {
  return [layout, bw](const CommRequest& r) {
    const std::uint32_t n = r.group_ranks(layout);
    const double f = r.group == CommGroup::NextStage || r.group == CommGroup::PrevStage
                         ? 1.0 : busbw_factor(r.op, n);
    return Seconds(f * r.bytes.bytes() / bw);
  };
}

CommTimer free_timer() {
  return [](const CommRequest&) { return Seconds(0.0); };
}

double bytes_of(const ParallelStep& s, CommGroup group, CollectiveOp op) {
  double sum = 0.0;
  for (const auto& [r, count] : s.uses)
    if (r.group == group && r.op == op) sum += r.bytes.bytes() * count;
  return sum;
}

}  // namespace

TEST_CASE("layout: Megatron order, tensor innermost; HSDP shard and replica groups") {
  ParallelSpec spec;
  spec.tensor = 2;
  spec.pipeline = 2;
  const ParallelLayout l = make_layout(16, spec, 8);
  CHECK(l.data == 4);
  CHECK(l.rank_of(1, 2, 1) == 1 + 2 * (2 + 4 * 1));
  const auto dp = l.data_groups(0);
  REQUIRE(dp.size() == 2);
  CHECK(dp[1] == std::vector<std::uint32_t>{1, 3, 5, 7});
  CHECK(l.tensor_groups(1)[0] == std::vector<std::uint32_t>{8, 9});
  CHECK_THROWS_AS((void)make_layout(12, [] { ParallelSpec p; p.tensor = 8; return p; }(), 8),
                  std::invalid_argument);

  // order: data innermost puts a DP group on consecutive ranks, the tensor groups across them;
  // every rank appears once.
  ParallelSpec swapped = spec;
  swapped.order = *parallel_order_from_string("dp-tp-pp");
  const ParallelLayout sl = make_layout(16, swapped, 8);
  CHECK(sl.data_groups(0)[1] == std::vector<std::uint32_t>{4, 5, 6, 7});
  CHECK(sl.tensor_groups(1)[0] == std::vector<std::uint32_t>{8, 12});
  std::vector<int> seen(16, 0);
  for (std::uint32_t st = 0; st < 2; ++st)
    for (const auto& g : sl.data_groups(st))
      for (std::uint32_t r : g) ++seen.at(r);
  CHECK(std::count(seen.begin(), seen.end(), 1) == 16);
  CHECK(to_string(swapped.order) == "dp-tp-pp");
  CHECK(!parallel_order_from_string("tp-dp"));
  CHECK(!parallel_order_from_string("tp-tp-pp"));
  CHECK(!parallel_order_from_string("tp-dp-pp-"));

  ParallelSpec h;
  h.data = DataParallelism::Hsdp;
  const ParallelLayout hl = make_layout(32, h, 8);  // default: a server's GPUs
  CHECK(hl.shard_group == 8);
  CHECK(hl.replicas == 4);
  CHECK(hl.shard_groups(0)[1] == std::vector<std::uint32_t>{8, 9, 10, 11, 12, 13, 14, 15});
  CHECK(hl.replica_groups(0)[3] == std::vector<std::uint32_t>{3, 11, 19, 27});
}

TEST_CASE("layers: split by compute, one layer per chunk at least, interleaved round robin") {
  const ModelSpec m = blocks(8, 1.0);
  const auto parts = split_layers(m, 4);
  REQUIRE(parts.size() == 4);
  for (std::size_t k = 0; k < 4; ++k) CHECK(parts[k].second - parts[k].first == 2);
  CHECK_THROWS_AS((void)split_layers(m, 9), std::invalid_argument);
  ParallelSpec spec;
  spec.pipeline = 2;
  spec.schedule = PipelineSchedule::Interleaved;
  spec.virtual_stages = 2;
  const auto stages = stage_layers(m, spec);
  REQUIRE(stages[0].chunks.size() == 2);
  CHECK(stages[0].chunks[1].first == 4);  // chunks 0 and 2 on stage 0
}

TEST_CASE("memory: the ZeRO paper's Table 1 (7.5B parameters, 64 GPUs, K = 12)") {
  // 120 GB for DDP; 31.4, 16.6 and 1.9 GB for stages 1, 2 and 3 (Rajbhandari et al. 2020).
  const ModelSpec m = blocks(1000, 7.5e6, 1_ms, 2_ms, GradDtype::Fp16);
  const auto gb = [&](DataParallelism d) {
    ParallelSpec spec;
    spec.data = d;
    return memory_per_gpu(m, spec, make_layout(64, spec, 8), 1, 1).total().bytes() / 1e9;
  };
  CHECK(gb(DataParallelism::Ddp) == doctest::Approx(120.0).epsilon(0.005));
  CHECK(gb(DataParallelism::Zero1) == doctest::Approx(31.4).epsilon(0.005));
  CHECK(gb(DataParallelism::Zero2) == doctest::Approx(16.6).epsilon(0.005));
  CHECK(gb(DataParallelism::Zero3) == doctest::Approx(1.9).epsilon(0.03));  // + 2 gathered units
  // Unknown dimensions: no activations counted.
  ParallelSpec ddp;
  CHECK_FALSE(memory_per_gpu(m, ddp, make_layout(64, ddp, 8), 1, 1).activations_known);
}

TEST_CASE("memory: activations per Korthikanti et al., 1F1B holds p micro-batches on stage 0") {
  ModelSpec m = blocks(8, 1e6);
  m.hidden = 1024;
  m.seq_len = 2048;
  ParallelSpec spec;
  const double block = 34.0 * 2048 * 1024;  // s·b·h·34 at t = 1
  CHECK(block_activation_bytes(2048, 1024, 1, 1) == doctest::Approx(block));
  CHECK(block_activation_bytes(2048, 1024, 1, 8) == doctest::Approx(2048.0 * 1024 * 13));
  const auto one = memory_per_gpu(m, spec, make_layout(8, spec, 8), 1, 4);
  CHECK(one.activations.bytes() == doctest::Approx(8 * block));
  spec.pipeline = 4;
  const auto pp = memory_per_gpu(m, spec, make_layout(8, spec, 8), 1, 8);
  CHECK(pp.stage == 0);
  CHECK(pp.activations.bytes() == doctest::Approx(2 * block * 4));  // 2 blocks x 4 in flight
  spec.activation_checkpointing = true;
  const auto ckpt = memory_per_gpu(m, spec, make_layout(8, spec, 8), 1, 8);
  CHECK(ckpt.activations.bytes() ==
        doctest::Approx(2 * 2.0 * 2048 * 1024 * 4 + block));  // inputs + one block recomputed
}

TEST_CASE("bytes: ZeRO-3 moves 1.5x DDP's bytes per step, ZeRO-1/2 the same as DDP") {
  const ModelSpec m = blocks(16, 4e6);
  const ComputeSpec c = parallel_compute_of(m);
  const SyncSpec sync;
  const auto dp_bytes = [&](DataParallelism d) {
    ParallelSpec spec;
    spec.data = d;
    const ParallelLayout l = make_layout(32, spec, 8);
    return compose_parallel_step(m, c, sync, spec, l, 1, ring_timer(l, 1e11)).dp.bytes_per_gpu.bytes();
  };
  const double ddp = dp_bytes(DataParallelism::Ddp);
  CHECK(ddp == doctest::Approx(2.0 * 31 / 32 * 16 * 4e6 * 2));
  CHECK(dp_bytes(DataParallelism::Zero1) == doctest::Approx(ddp));
  CHECK(dp_bytes(DataParallelism::Zero2) == doctest::Approx(ddp));
  CHECK(dp_bytes(DataParallelism::Zero3) == doctest::Approx(1.5 * ddp));
  CHECK(dp_bytes(DataParallelism::Fsdp) == doctest::Approx(1.5 * ddp));
}

TEST_CASE("bytes: accumulation - ZeRO-2 and FSDP sync every micro-batch, ZeRO-1 once") {
  const ModelSpec m = blocks(8, 1e6);
  const ComputeSpec c = parallel_compute_of(m);
  const SyncSpec sync;
  const auto rs = [&](DataParallelism d, bool every) {
    ParallelSpec spec;
    spec.data = d;
    spec.sync_every_micro_batch = every;
    const ParallelLayout l = make_layout(16, spec, 8);
    return bytes_of(compose_parallel_step(m, c, sync, spec, l, 4, ring_timer(l, 1e11)),
                    CommGroup::Data, CollectiveOp::ReduceScatter);
  };
  const double s = 8 * 1e6 * 2;
  CHECK(rs(DataParallelism::Zero1, true) == doctest::Approx(s));
  CHECK(rs(DataParallelism::Zero2, true) == doctest::Approx(4 * s));
  CHECK(rs(DataParallelism::Fsdp, true) == doctest::Approx(4 * s));
  CHECK(rs(DataParallelism::Fsdp, false) == doctest::Approx(s));
}

TEST_CASE("bytes: HSDP all-reduces S / shard_group across replicas; TP 8 divides DP bytes by 8") {
  const ModelSpec m = blocks(8, 1e6);
  const ComputeSpec c = parallel_compute_of(m);
  const SyncSpec sync;
  const double s = 8 * 1e6 * 2;
  ParallelSpec h;
  h.data = DataParallelism::Hsdp;
  h.shard_group = 8;
  const ParallelLayout hl = make_layout(32, h, 8);
  const ParallelStep hs = compose_parallel_step(m, c, sync, h, hl, 1, ring_timer(hl, 1e11));
  CHECK(bytes_of(hs, CommGroup::Replica, CollectiveOp::AllReduce) == doctest::Approx(s / 8));
  CHECK(bytes_of(hs, CommGroup::Shard, CollectiveOp::ReduceScatter) == doctest::Approx(s));

  ModelSpec tm = m;
  tm.hidden = 1024;
  tm.seq_len = 1024;
  ParallelSpec ddp;
  const ParallelLayout dl = make_layout(64, ddp, 8);
  const double ddp_bytes =
      compose_parallel_step(tm, c, sync, ddp, dl, 1, ring_timer(dl, 1e11)).dp.bytes_per_gpu.bytes();
  ParallelSpec tp;
  tp.tensor = 8;
  const ParallelLayout tl = make_layout(64, tp, 8);
  const ParallelStep ts = compose_parallel_step(tm, c, sync, tp, tl, 1, ring_timer(tl, 1e11));
  // DP degree 8 instead of 64: factor 2·7/8 instead of 2·63/64, on 1/8 of the bytes.
  CHECK(ts.dp.bytes_per_gpu.bytes() ==
        doctest::Approx(ddp_bytes / 8 * (7.0 / 8) / (63.0 / 64)));
  // 2 all-reduces per block in forward and 2 in backward, of s·b·h·2 bytes each.
  CHECK(ts.tp.collectives == 4 * 8);
  CHECK(ts.tp.exposed.seconds() == doctest::Approx(ts.tp.time.seconds()));
  CHECK(ts.tp.time.seconds() ==
        doctest::Approx(32 * 2.0 * 7 / 8 * 1024 * 1024 * 2 / 1e11));
}

TEST_CASE("pipeline: with free communication the 1F1B bubble is (p-1)/(m+p-1) of the step") {
  const ModelSpec m = blocks(8, 1e6, 1_ms, 2_ms);
  ModelSpec tm = m;
  tm.hidden = 64;
  tm.seq_len = 64;
  const ComputeSpec c = parallel_compute_of(tm);
  const SyncSpec sync;
  for (PipelineSchedule sched : {PipelineSchedule::OneFOneB, PipelineSchedule::GPipe})
    for (std::uint32_t micro : {1u, 4u, 8u}) {
      ParallelSpec spec;
      spec.pipeline = 4;
      spec.schedule = sched;
      const ParallelLayout l = make_layout(4, spec, 8);
      const ParallelStep st = compose_parallel_step(tm, c, sync, spec, l, micro, free_timer());
      const double p = 4, mb = micro;
      CAPTURE(micro);
      CHECK(st.bubble.seconds() / st.timeline.step_time.seconds() ==
            doctest::Approx((p - 1) / (mb + p - 1)));
      CHECK(st.timeline.step_time.seconds() == doctest::Approx((mb + p - 1) * 6e-3));
    }
  // Interleaving v = 2 halves the bubble (Narayanan et al. 2021 §2.2: (p-1)/v stage-times).
  ParallelSpec one;
  one.pipeline = 4;
  ParallelSpec inter = one;
  inter.schedule = PipelineSchedule::Interleaved;
  inter.virtual_stages = 2;
  const ParallelLayout l = make_layout(4, one, 8);
  const double b1 = compose_parallel_step(tm, c, sync, one, l, 8, free_timer()).bubble.seconds();
  const double b2 = compose_parallel_step(tm, c, sync, inter, l, 8, free_timer()).bubble.seconds();
  CHECK(b2 == doctest::Approx(b1 / 2));
  CHECK_THROWS_AS((void)compose_parallel_step(tm, c, sync, inter, l, 6, free_timer()),
                  std::invalid_argument);
}

TEST_CASE("plain DDP through the parallel composer equals compose_step") {
  const ModelSpec m = blocks(40, 3e6, 1_ms, 2_ms);
  const ComputeSpec c = parallel_compute_of(m, 5_ms);
  for (Overlap overlap : {Overlap::Bucketed, Overlap::None})
    for (std::uint32_t acc : {1u, 3u}) {
      SyncSpec sync;
      sync.overlap = overlap;
      ParallelSpec spec;
      const ParallelLayout l = make_layout(16, spec, 8);
      const CommTimer timer = ring_timer(l, 2e9);
      const ParallelStep ps = compose_parallel_step(m, c, sync, spec, l, acc, timer);
      const auto buckets = build_buckets(m, sync);
      const SyncPlan plan = plan_sync(buckets, m, sync, 16);
      std::vector<Seconds> times;
      for (const BucketWire& w : plan.buckets)
        times.push_back(timer({CommKind::Dp, CommGroup::Data, 0, w.op, w.bytes}));
      StepOptions o;
      o.overlap = overlap;
      o.accumulation = acc;
      const StepTimeline t = compose_step(buckets, plan, times, c, o);
      CAPTURE(acc);
      CHECK(ps.timeline.step_time.seconds() == doctest::Approx(t.step_time.seconds()));
      CHECK(ps.timeline.exposed_comm.seconds() == doctest::Approx(t.exposed_comm.seconds()));
      CHECK(ps.dp.time.seconds() == doctest::Approx(t.comm_time.seconds()));
    }
}

TEST_CASE("fsdp: prefetch hides all-gathers; without it every unit waits for its own") {
  const ModelSpec m = blocks(16, 2e6, 1_ms, 2_ms);
  const ComputeSpec c = parallel_compute_of(m);
  const SyncSpec sync;
  ParallelSpec spec;
  spec.data = DataParallelism::Fsdp;
  const ParallelLayout l = make_layout(8, spec, 8);
  // A gather of one unit (4 MB, 7/8 of it received) takes 0.5 ms at 7e9 B/s: shorter than a
  // unit's forward, so with prefetch only the first one is exposed.
  const CommTimer timer = ring_timer(l, 7e9);
  const ParallelStep pre = compose_parallel_step(m, c, sync, spec, l, 1, timer);
  spec.prefetch = false;
  const ParallelStep none = compose_parallel_step(m, c, sync, spec, l, 1, timer);
  const double gather = 7.0 / 8 * 4e6 / 7e9;
  CHECK(none.dp.exposed.seconds() > pre.dp.exposed.seconds() + 16 * gather);
  CHECK(pre.dp.exposed.seconds() < 4 * gather + 2 * gather);  // first gather + the tail RS
}

TEST_CASE("contention: collectives that overlap share links at the rates simulated together") {
  ModelSpec m = blocks(8, 1e6);
  m.hidden = 1024;
  m.seq_len = 1024;
  const ComputeSpec c = parallel_compute_of(m);
  SyncSpec sync;
  sync.bucket = Bytes(1.0);  // a bucket per layer: DP starts after the first backward layer
  sync.first_bucket = Bytes(1.0);
  ParallelSpec tp;
  tp.tensor = 2;
  const ParallelLayout l = make_layout(8, tp, 4);
  const CommTimer ring = ring_timer(l, 1e11);
  // DP buckets far longer than the step's compute: one covers every later backward layer.
  const CommTimer timer = [&](const CommRequest& r) {
    return r.group == CommGroup::Data ? Seconds(1000.0) : ring(r);
  };
  const Seconds a = ring({CommKind::Tp, CommGroup::Tensor, 0, CollectiveOp::AllReduce,
                          Bytes(1024.0 * 1024 * 2)});
  // Two collectives on one link, fair share: each loses min(x, y) while both run (r = 1/2).
  const PairTimer fair = [&](const CommRequest& x, const CommRequest& y) {
    const Seconds tx = timer(x), ty = timer(y);
    const Seconds both = std::min(tx, ty);
    return std::make_pair(tx + both, ty + both);
  };
  const PairTimer apart = [&](const CommRequest& x, const CommRequest& y) {
    return std::make_pair(timer(x), timer(y));
  };
  const ParallelStep alone = compose_parallel_step(m, c, sync, tp, l, 1, timer);
  CHECK(alone.tp.time.seconds() == doctest::Approx(32 * a.seconds()));
  CHECK(alone.tp.contention.seconds() == 0.0);

  // Links not shared: the same step.
  const ParallelStep disjoint = compose_parallel_step(m, c, sync, tp, l, 1, timer, apart);
  CHECK(disjoint.timeline.step_time.seconds() == doctest::Approx(alone.timeline.step_time.seconds()));
  CHECK(disjoint.tp.contention.seconds() == doctest::Approx(0.0));

  // Shared: forward (16 all-reduces) and the first backward layer (2) run alone; the 7 later
  // layers' 14 all-reduces run under the DP bucket at half rate.
  const ParallelStep shared = compose_parallel_step(m, c, sync, tp, l, 1, timer, fair);
  CHECK(shared.tp.time.seconds() == doctest::Approx((16 + 2 + 2 * 14) * a.seconds()));
  CHECK(shared.tp.contention.seconds() == doctest::Approx(14 * a.seconds()));
  CHECK(shared.tp.collectives == 32);
  CHECK(shared.dp.contention.seconds() > 0.0);  // the bucket loses what TP takes
  CHECK(shared.timeline.step_time > alone.timeline.step_time);

  // Buckets after the whole backward (overlap: none): nothing overlaps, nothing shared.
  SyncSpec serial = sync;
  serial.overlap = Overlap::None;
  const ParallelStep after = compose_parallel_step(m, c, serial, tp, l, 1, timer, fair);
  CHECK(after.tp.contention.seconds() == 0.0);
  CHECK(after.dp.contention.seconds() == 0.0);
  CHECK(after.tp.time.seconds() == doctest::Approx(32 * a.seconds()));
}
