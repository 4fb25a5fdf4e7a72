// The training, sync and parallel sections of a scenario (scenario_sync.hpp).
#include "scenario_sync.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "gradsync/scenario/parallel_layout.hpp"
#include "gradsync/collective/rank_placement.hpp"
#include "gradsync/scenario/step_schedule.hpp"
#include "scenario_keys.hpp"
#include "scenario_model.hpp"
#include "topology_readers.hpp"

namespace gradsync::config {

TrainingSpec read_training(const MapReader& top) {
  TrainingSpec t;
  if (!top.has("training")) return t;
  MapReader r(top.node("training"), top.file(), "training", kTrainingKeys);
  t.accumulation =
      static_cast<std::uint32_t>(r.opt_integer("accumulation", 1, kMaxAccumulation).value_or(1));
  t.steps = static_cast<std::uint32_t>(r.opt_integer("steps", 1, kMaxSteps).value_or(1));
  return t;
}

namespace {

CompressionSpec read_compression(const MapReader& sync) {
  CompressionSpec c;
  const YAML::Node node = sync.node("compression");
  if (node.IsScalar()) {  // compression: int8
    c.method = *compression_method_from_string(sync.choice("compression", kMethods));
    if (c.method == CompressionMethod::TopK)
      sync.fail("compression", "topk needs a ratio: write {method: topk, ratio: 0.01}");
    return c;
  }
  MapReader r(node, sync.file(), "sync.compression", kCompressionKeys);
  c.method = *compression_method_from_string(r.choice("method", kMethods));
  const bool none = c.method == CompressionMethod::None;
  if (c.method == CompressionMethod::TopK) {
    if (!r.has("ratio"))
      throw ConfigError(r.mark(),
                        "missing required key 'ratio' in sync.compression (method: "
                        "topk keeps this share of the elements)");
    c.ratio = r.number("ratio");
    if (!(c.ratio > 0.0 && c.ratio <= 1.0))
      r.fail("ratio", fmt::format("must be in (0, 1], got {}", c.ratio));
  } else if (r.has("ratio")) {
    r.fail("ratio", "applies to method: topk only");
  }
  for (const char* key : {"error_feedback", "encode_rate", "decode_rate"})
    if (none && r.has(key)) r.fail(key, "applies when a compression method is set");
  c.error_feedback = r.opt_boolean("error_feedback").value_or(false);
  if (r.has("encode_rate")) c.encode_rate = positive_rate(r, "encode_rate");
  if (r.has("decode_rate")) c.decode_rate = positive_rate(r, "decode_rate");
  return c;
}

// sync.buckets: [{bytes: 1MiB, ready_at: 2ms}, ...] in the order they become ready.
std::vector<ExplicitBucket> read_explicit_buckets(const MapReader& r) {
  const auto items = config::sequence_of(r.node("buckets"), r.file(), "sync.buckets");
  if (items.empty()) r.fail("buckets", "an explicit bucket list needs at least one bucket");
  if (items.size() > 1000000) r.fail("buckets", "at most 1000000 buckets");
  std::vector<ExplicitBucket> out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const MapReader b(items[i], r.file(), fmt::format("sync.buckets.{}", i), kBucketKeys);
    ExplicitBucket e;
    e.bytes = b.size("bytes");
    if (!(e.bytes.bytes() > 0.0) || e.bytes.bytes() > kMaxBucketBytes)
      b.fail("bytes", fmt::format("must be positive and at most 1 TiB, got {}",
                                  format_size(e.bytes)));
    e.ready_at = b.time("ready_at");
    if (e.ready_at.seconds() < 0.0) b.fail("ready_at", "must be at least 0");
    if (e.ready_at.seconds() > kMaxComputeSeconds)
      b.fail("ready_at", "must be within the backward (at most 1h)");
    if (!out.empty() && e.ready_at < out.back().ready_at)
      b.fail("ready_at", fmt::format("is before sync.buckets.{}.ready_at ({}): buckets are "
                                     "listed in the order they become ready",
                                     i - 1, format_time(out.back().ready_at)));
    out.push_back(e);
  }
  return out;
}

}  // namespace

SyncSpec read_sync(const MapReader& top) {
  SyncSpec s;
  if (!top.has("sync")) return s;
  MapReader r(top.node("sync"), top.file(), "sync", kSyncKeys);
  s.strategy =
      *sync_strategy_from_string(r.opt_choice("strategy", kStrategies).value_or("allreduce"));
  s.algorithm =
      *sync_algorithm_from_string(r.opt_choice("algorithm", kAlgorithms).value_or("auto"));
  if (r.has("ps")) {
    MapReader p(r.node("ps"), r.file(), "sync.ps", kPsKeys);
    s.ps.servers = static_cast<std::uint32_t>(p.opt_integer("servers", 1, kMaxServers).value_or(1));
    s.ps.placement = p.opt_choice("placement", kPlacements).value_or("dedicated") == "colocated"
                         ? PsPlacement::Colocated
                         : PsPlacement::Dedicated;
    if (p.has("hosts")) {
      MapReader h(p.node("hosts"), r.file(), "sync.ps.hosts", kPsHostsKeys);
      PsHostsSpec hosts;
      hosts.count = static_cast<std::uint32_t>(h.integer("count", 1, kMaxServers));
      // A link rate: positive and within the topology loader's bound, at the key.
      if (h.has("nic_bandwidth")) hosts.nic_bandwidth = link_rate(h, "nic_bandwidth");
      hosts.origin = h.mark();
      if (p.has("placement") && s.ps.placement == PsPlacement::Colocated)
        p.fail("placement", "colocated servers run on the GPUs; sync.ps.hosts puts them on hosts "
                            "of their own (remove one of the two)");
      if (p.has("servers") && s.ps.servers != hosts.count)
        p.fail("servers", fmt::format("{} servers on {} hosts: with sync.ps.hosts each host runs "
                                      "one server (servers defaults to hosts.count)",
                                      s.ps.servers, hosts.count));
      s.ps.servers = hosts.count;
      s.ps.hosts = hosts;
    }
  }
  s.bucket = bucket_size(r, "bucket", kDdpBucketBytes);
  s.first_bucket = bucket_size(r, "first_bucket", kDdpFirstBucketBytes);
  // overlap: true / false read as bucketed / none (DDP overlaps by default; none turns it off).
  const std::optional<std::string> overlap_text =
      r.has("overlap") ? r.opt_string("overlap") : std::nullopt;
  if (overlap_text == "true" || overlap_text == "false")
    s.overlap = *overlap_text == "true" ? Overlap::Bucketed : Overlap::None;
  else
    s.overlap = *overlap_from_string(r.opt_choice("overlap", kOverlaps).value_or("bucketed"));
  if (r.has("compression")) s.compression = read_compression(r);
  if (r.has("buckets")) s.buckets = read_explicit_buckets(r);
  return s;
}

// Checks of sync.buckets against the model, the compute and the other sync keys: they are the
// gradients of this model, ready during its backward, and they replace DDP's bucket rule.
void check_explicit_buckets(const MapReader& top, const Scenario& sc) {
  if (sc.sync.buckets.empty()) return;
  const MapReader r(top.node("sync"), top.file(), "sync", kSyncKeys);
  for (const char* key : {"bucket", "first_bucket"})
    if (r.has(key))
      r.fail(key, "sync.buckets gives the buckets themselves; remove sync.bucket and "
                  "sync.first_bucket (DDP's rule for building them)");
  if (sc.sync.overlap == Overlap::Layerwise)
    r.fail("overlap", "layerwise makes one bucket per layer; it cannot be used with sync.buckets");
  if (!sc.parallel.plain())
    r.fail("buckets", "applies to plain data parallelism (parallel.data: ddp, tensor and "
                      "pipeline 1)");
  Bytes sum{0.0};
  for (const ExplicitBucket& b : sc.sync.buckets) sum += b.bytes;
  const Bytes grads = sc.model.grad_bytes();
  if (std::abs(sum.bytes() - grads.bytes()) > 0.01 * grads.bytes())
    r.fail("buckets", fmt::format("add up to {}, and the model's gradients are {} ({} parameters "
                                  "× {:g} bytes): they must agree within 1 %",
                                  format_size(sum), format_size(grads),
                                  fmt::format("{:.0f}", sc.model.total_params()),
                                  sc.model.bytes_per_grad()));
  const auto items = config::sequence_of(r.node("buckets"), r.file(), "sync.buckets");
  for (std::size_t i = 0; i < sc.sync.buckets.size(); ++i)
    if (sc.sync.buckets[i].ready_at.seconds() > sc.compute.backward.seconds() + 1e-9)
      throw ConfigError(
          MapReader(items[i], r.file(), fmt::format("sync.buckets.{}", i), kBucketKeys)
              .mark("ready_at"),
          fmt::format("sync.buckets.{}.ready_at: {} is after the backward ends ({})", i,
                      format_time(sc.sync.buckets[i].ready_at), format_time(sc.compute.backward)));
}

// `data_from_set`: parallel.data comes from a --set (a what-if), so the file's keys of its
// other mode (shard_group for hsdp; prefetch, resharding and micro-batch syncs for sharded
// modes) are set aside with a note instead of rejected.
ParallelSpec read_parallel(const MapReader& top, bool data_from_set, std::vector<std::string>& notes) {
  ParallelSpec p;
  if (!top.has("parallel")) return p;
  MapReader r(top.node("parallel"), top.file(), "parallel", kParallelKeys);
  p.data = *data_parallelism_from_string(r.opt_choice("data", kDataModes).value_or("ddp"));
  auto set_aside = [&](const char* key, std::string_view applies_to) {
    if (!data_from_set || !r.has(key)) return false;
    notes.push_back(fmt::format("parallel.{} of {} set aside: it applies to data: {}, and --set "
                                "made data: {}", key, top.file(), applies_to, to_string(p.data)));
    return true;
  };
  p.tensor = static_cast<std::uint32_t>(r.opt_integer("tensor", 1, kMaxModelParallel).value_or(1));
  p.pipeline =
      static_cast<std::uint32_t>(r.opt_integer("pipeline", 1, kMaxModelParallel).value_or(1));
  p.schedule = *pipeline_schedule_from_string(r.opt_choice("schedule", kSchedules).value_or("1f1b"));
  p.virtual_stages = static_cast<std::uint32_t>(
      r.opt_integer("virtual_stages", 1, kMaxVirtualStages).value_or(1));
  if (r.has("order")) {
    const std::string text = r.string("order");
    const auto order = parallel_order_from_string(text);
    if (!order)
      r.fail("order", fmt::format("'{}' is not an order of tp, dp and pp, innermost first (the "
                                  "default: tp-dp-pp)", text));
    p.order = *order;
  }
  const bool sharded = shards_parameters(p.data);
  if (r.has("shard_group") &&
      !(p.data != DataParallelism::Hsdp && set_aside("shard_group", "hsdp"))) {
    if (p.data != DataParallelism::Hsdp) r.fail("shard_group", "applies to data: hsdp only");
    p.shard_group = static_cast<std::uint32_t>(r.integer("shard_group", 1, kMaxScenarioGpus));
  }
  bool use_sharded_keys = true;
  for (const char* key : {"prefetch", "reshard_after_forward", "sync_every_micro_batch"}) {
    if (sharded || !r.has(key)) continue;
    if (set_aside(key, "zero3, fsdp or hsdp")) {
      use_sharded_keys = false;
      continue;
    }
    r.fail(key, fmt::format("applies to data: zero3, fsdp or hsdp (they gather parameters "
                              "per unit); {} {}",
                              to_string(p.data),
                              p.data == DataParallelism::Zero1
                                  ? "syncs once per step (it keeps unsharded gradients)"
                              : p.data == DataParallelism::Zero2
                                  ? "reduce-scatters after every micro-batch (its gradients are "
                                    "sharded)"
                                  : "all-reduces once per step"));
  }
  if (use_sharded_keys) {
    p.prefetch = r.opt_boolean("prefetch").value_or(true);
    p.reshard_after_forward = r.opt_boolean("reshard_after_forward").value_or(true);
    p.sync_every_micro_batch = r.opt_boolean("sync_every_micro_batch").value_or(true);
  }
  p.activation_checkpointing = r.opt_boolean("activation_checkpointing").value_or(false);
  if (p.virtual_stages > 1 && p.schedule != PipelineSchedule::Interleaved)
    r.fail("virtual_stages", "applies to schedule: interleaved");
  if (p.schedule == PipelineSchedule::Interleaved && p.pipeline < 2)
    r.fail("schedule", "interleaved needs pipeline: 2 or more");
  return p;
}

// Checks of parallel: against the model, the training loop, the sync and the GPUs used.
void check_parallel(const MapReader& top, const Scenario& sc, std::uint32_t gpus,
                    const Topology& topo) {
  const ParallelSpec& p = sc.parallel;
  if (p.plain()) return;
  const std::uint32_t gpus_per_server = ranks_per_node(topo, place_ranks(topo, gpus));
  const MapReader r(top.node("parallel"), top.file(), "parallel", kParallelKeys);
  const std::string first_key = r.has("data") ? "data" : r.has("tensor") ? "tensor" : "pipeline";
  if (sc.sync.strategy != SyncStrategy::AllReduce)
    r.fail(first_key, fmt::format("needs sync.strategy: allreduce ({} is a parameter server)",
                                  to_string(sc.sync.strategy)));
  if (sc.sync.compression.method != CompressionMethod::None)
    r.fail(first_key, "compression is modelled for plain DDP only (data: ddp, tensor: 1, "
                      "pipeline: 1)");
  if ((p.tensor > 1 || p.pipeline > 1) && !(sc.model.hidden > 0.0 && sc.model.seq_len > 0.0))
    r.fail(p.tensor > 1 ? "tensor" : "pipeline",
           "needs model.hidden and model.seq_len (the transformer preset): they size the "
           "activations that tensor and pipeline parallelism move");
  try {
    const ParallelLayout layout = make_layout(gpus, p, gpus_per_server);
    (void)stage_layers(sc.model, p);
    (void)layout;
  } catch (const std::invalid_argument& e) {
    const std::string key = r.has("shard_group") && std::string(e.what()).find("shard_group") == 0
                                ? "shard_group"
                            : r.has("tensor") ? "tensor"
                                              : "pipeline";
    r.fail(key, fmt::format("{} ({} GPUs used)", e.what(), gpus));
  }
  if (p.schedule == PipelineSchedule::Interleaved && sc.training.accumulation % p.pipeline != 0)
    r.fail("schedule", fmt::format("interleaved needs training.accumulation (micro-batches, {}) "
                                   "a multiple of pipeline ({})",
                                   sc.training.accumulation, p.pipeline));
}

}  // namespace gradsync::config
