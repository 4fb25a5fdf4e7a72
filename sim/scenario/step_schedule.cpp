// The step schedule (include/gradsync/scenario/step_schedule.hpp): model presets, DDP buckets, wire
// sizes after compression, the timeline of one optimizer step and its metrics. Pure functions
// of their arguments; the runner feeds compose_step() the simulated collective times.
#include "gradsync/scenario/step_schedule.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

namespace gradsync {

// ---- model presets -------------------------------------------------------------------------

double transformer_block_params(double hidden) { return 12.0 * hidden * hidden + 13.0 * hidden; }

std::vector<double> transformer_block_tensors(double h, double scale) {
  std::vector<double> t{h, h, 3 * h * h, 3 * h, h * h, h, h, h, 4 * h * h, 4 * h, 4 * h * h, h};
  for (double& x : t) x *= scale;
  return t;
}

std::vector<double> synthetic_tensors(double params) {
  if (!(params > 0.0)) return {};
  constexpr double kWidthPerBlock = 128.0;  // GPT-3 6.7B-175B: d_model / n_layers = 128
  const double blocks =
      std::max(1.0, std::round(std::cbrt(params / (12.0 * kWidthPerBlock * kWidthPerBlock))));
  const double h = kWidthPerBlock * blocks;
  const double scale = params / (blocks * transformer_block_params(h));
  std::vector<double> out;
  for (double b = 0; b < blocks; ++b) {
    const auto t = transformer_block_tensors(h, scale);
    out.insert(out.end(), t.begin(), t.end());
  }
  return out;
}

namespace {

double embedding_params(const TransformerShape& s) { return s.vocab * s.hidden; }
// The head's matrix (unless tied to the embedding) plus the final layer norm (2h).
double head_params(const TransformerShape& s) {
  return (s.tie_embeddings ? 0.0 : s.vocab * s.hidden) + 2.0 * s.hidden;
}

}  // namespace

double transformer_params(const TransformerShape& s) {
  return s.blocks * transformer_block_params(s.hidden) + embedding_params(s) + head_params(s);
}

void split_compute(std::vector<LayerSpec>& layers, std::span<const double> weights, Seconds forward,
                   Seconds backward) {
  if (weights.size() != layers.size())
    throw std::invalid_argument("split_compute: one weight per layer is needed");
  const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
  if (!(total > 0.0) || !std::isfinite(total))
    throw std::invalid_argument("split_compute: the weights must add up to a positive number");
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const double share = weights[i] / total;
    layers[i].forward = forward * share;
    layers[i].backward = backward * share;
  }
}

std::vector<LayerSpec> transformer_layers(const TransformerShape& shape,
                                          std::optional<double> params, Seconds forward,
                                          Seconds backward) {
  if (shape.blocks == 0 || !(shape.hidden > 0.0) || !(shape.vocab > 0.0))
    throw std::invalid_argument("transformer_layers: blocks, hidden and vocab must be positive");
  const double h = shape.hidden;
  double block = transformer_block_params(h);
  if (params) {
    const double blocks_total = *params - embedding_params(shape) - head_params(shape);
    if (!(blocks_total > 0.0))
      throw std::invalid_argument(
          fmt::format("{} parameters do not cover the embedding and head ({} parameters)", *params,
                      embedding_params(shape) + head_params(shape)));
    block = blocks_total / shape.blocks;
  }
  std::vector<LayerSpec> layers;
  std::vector<double> flops;
  layers.reserve(shape.blocks + 2);
  layers.push_back(LayerSpec{"embedding", embedding_params(shape), {}, {}, {},
                             {embedding_params(shape)}});
  flops.push_back(0.0);
  const double block_flops = 24.0 * h * h + 4.0 * shape.seq_len * h;
  const std::vector<double> block_tensors =
      transformer_block_tensors(h, block / transformer_block_params(h));
  for (std::uint32_t i = 0; i < shape.blocks; ++i) {
    layers.push_back(LayerSpec{fmt::format("block{}", i), block, {}, {}, {}, block_tensors});
    flops.push_back(block_flops);
  }
  // The final norm's weight and bias, then the head's matrix (none when tied).
  std::vector<double> head_tensors{h, h};
  if (!shape.tie_embeddings) head_tensors.push_back(shape.vocab * h);
  layers.push_back(LayerSpec{"head", head_params(shape), {}, {}, {}, head_tensors});
  flops.push_back(2.0 * h * shape.vocab);
  split_compute(layers, flops, forward, backward);
  // FLOPs per sample, known with the sequence length: 2 per parameter of a block (its matmuls;
  // 24h² for the 12h² weights) plus the attention scores, the head's matmul.
  if (shape.seq_len > 0.0)
    for (std::size_t i = 1; i < layers.size(); ++i)
      layers[i].flops = (i + 1 < layers.size() ? 2.0 * layers[i].params + 4.0 * shape.seq_len * h
                                               : flops[i]) * shape.seq_len;
  return layers;
}

std::vector<LayerSpec> equal_layers(double params, std::uint32_t count, Seconds forward,
                                    Seconds backward) {
  if (count == 0) throw std::invalid_argument("equal_layers: at least one layer");
  std::vector<LayerSpec> layers;
  layers.reserve(count);
  for (std::uint32_t i = 0; i < count; ++i)
    layers.push_back(LayerSpec{count == 1 ? "model" : fmt::format("layer{}", i),
                               params / count,
                               forward / count,
                               backward / count,
                               {},
                               synthetic_tensors(params / count)});
  return layers;
}

// ---- buckets -------------------------------------------------------------------------------

std::vector<Bucket> build_buckets(const ModelSpec& model, const SyncSpec& sync) {
  const double bpg = model.bytes_per_grad();
  std::vector<Bucket> buckets;
  if (!sync.buckets.empty()) {
    for (const ExplicitBucket& b : sync.buckets)
      buckets.push_back(Bucket{b.bytes, b.bytes.bytes() / bpg, {}, b.ready_at});
    return buckets;
  }
  Bucket current;
  Bytes limit = sync.first_bucket;
  auto close = [&] {
    if (current.layers.empty()) return;
    buckets.push_back(std::move(current));
    current = Bucket{};
    limit = sync.bucket;
  };
  // Backward runs the layers in reverse: layer i's gradients are produced while it runs.
  Seconds elapsed{0.0};
  for (std::size_t i = model.layers.size(); i-- > 0;) {
    const LayerSpec& layer = model.layers[i];
    const Seconds start = elapsed;
    elapsed += layer.backward;
    if (!(layer.params > 0.0)) continue;
    if (sync.overlap == Overlap::Layerwise) {
      buckets.push_back(Bucket{Bytes(layer.params * bpg), layer.params, {i}, elapsed});
      continue;
    }
    const std::vector<double> one{layer.params};
    const std::vector<double>& tensors = layer.tensors.empty() ? one : layer.tensors;
    double done = 0.0;  // of the layer's parameters, in backward order
    for (std::size_t k = tensors.size(); k-- > 0;) {
      const double n = tensors[k];
      done += n;
      if (!(n > 0.0)) continue;
      current.bytes += Bytes(n * bpg);
      current.params += n;
      if (current.layers.empty() || current.layers.back() != i) current.layers.push_back(i);
      current.ready_offset = k == 0 ? elapsed : start + layer.backward * (done / layer.params);
      if (current.bytes >= limit) close();
    }
  }
  close();
  return buckets;
}

// ---- wire ----------------------------------------------------------------------------------

namespace {

// Bytes per element on the wire after quantization, or nullopt for Top-K / none.
std::optional<double> quantized_element_bytes(CompressionMethod m) {
  switch (m) {
    case CompressionMethod::Int8:
      return 1.0;
    case CompressionMethod::Fp8:
      return 1.0;
    case CompressionMethod::Int4:
      return 0.5;
    case CompressionMethod::None:
    case CompressionMethod::TopK:
      return std::nullopt;
  }
  return std::nullopt;
}

Seconds codec_time(Bytes bytes, const std::optional<BytesPerSecond>& rate) {
  if (!rate || !(rate->bytes_per_second() > 0.0)) return Seconds(0.0);
  return bytes / *rate;
}

}  // namespace

SyncPlan plan_sync(std::span<const Bucket> buckets, const ModelSpec& model, const SyncSpec& sync,
                   std::uint32_t ranks) {
  if (ranks == 0) throw std::invalid_argument("plan_sync: at least one rank");
  const CompressionSpec& c = sync.compression;
  const double bpg = model.bytes_per_grad();
  const bool allreduce = sync.strategy == SyncStrategy::AllReduce;
  const double ef_factor = c.error_feedback && c.method != CompressionMethod::None ? 3.0 : 1.0;
  constexpr double kIndexBytes = 4.0;  // int32 element index of a Top-K pair
  SyncPlan plan;
  plan.buckets.reserve(buckets.size());
  for (const Bucket& b : buckets) {
    BucketWire w;
    const double elements = b.params;
    if (c.method == CompressionMethod::TopK) {
      const double k = std::ceil(c.ratio * elements);
      const Bytes part(k * (bpg + kIndexBytes));
      w.per_rank_bytes = part;
      if (allreduce) {
        w.op = CollectiveOp::AllGather;
        w.bytes = part * static_cast<double>(ranks);
      } else {
        w.op = CollectiveOp::AllReduce;
        w.bytes = part;
      }
    } else {
      const double element = quantized_element_bytes(c.method).value_or(bpg);
      w.bytes = Bytes(elements * std::min(element, bpg));
      w.per_rank_bytes = w.bytes;
    }
    if (c.method != CompressionMethod::None) {
      w.encode = codec_time(b.bytes * ef_factor, c.encode_rate);
      w.decode = codec_time(w.bytes, c.decode_rate);
    }
    plan.grad_bytes += b.bytes;
    plan.wire_bytes += w.bytes;
    plan.buckets.push_back(w);
  }
  if (c.error_feedback && c.method != CompressionMethod::None)
    plan.error_feedback_bytes = plan.grad_bytes;

  const double ratio = plan.grad_bytes.bytes() > 0.0 ? plan.wire_bytes / plan.grad_bytes : 1.0;
  if (c.method == CompressionMethod::TopK && allreduce)
    plan.notes.push_back(fmt::format(
        "top-k (index, value) pairs cannot be summed in a ring: each bucket is an AllGather of "
        "{} ranks x {:.3g}% of its elements x {} bytes per pair (size {:.3g}% of the dense "
        "bytes); each rank receives {:.3g}% of what a ring AllReduce of the dense gradients "
        "moves, not {:.3g}%",
        ranks, 100.0 * c.ratio, bpg + kIndexBytes, 100.0 * ratio, 100.0 * ratio / 2.0,
        100.0 * c.ratio));
  if (c.method == CompressionMethod::TopK && !allreduce)
    plan.notes.push_back(fmt::format(
        "top-k under a parameter server: servers sum the sparse pushes and return the top-k of "
        "the sum, so push and pull carry {:.3g}% of the elements as (index, value) pairs",
        100.0 * c.ratio));
  if (const auto q = quantized_element_bytes(c.method); q && *q >= bpg)
    plan.notes.push_back(fmt::format("{} does not shrink {}-byte gradients; sent as they are",
                                     to_string(c.method), bpg));
  if (c.method != CompressionMethod::None && !c.encode_rate && !c.decode_rate)
    plan.notes.emplace_back("no encode_rate/decode_rate given: compression is taken as free");
  return plan;
}

// ---- one optimizer step --------------------------------------------------------------------

StepOptions step_options(const Scenario& scenario) {
  StepOptions o;
  o.overlap = scenario.sync.overlap;
  o.accumulation = scenario.training.accumulation;
  o.asynchronous = scenario.sync.strategy == SyncStrategy::AsyncParameterServer;
  return o;
}

std::string_view to_string(ComputePhase phase) {
  switch (phase) {
    case ComputePhase::Forward:
      return "forward";
    case ComputePhase::Backward:
      return "backward";
    case ComputePhase::Optimizer:
      return "optimizer";
  }
  return "?";
}

StepTimeline compose_step(std::span<const Bucket> buckets, const SyncPlan& plan,
                          std::span<const Seconds> collective_times, const ComputeSpec& compute,
                          const StepOptions& options) {
  if (plan.buckets.size() != buckets.size() || collective_times.size() != buckets.size())
    throw std::invalid_argument(
        fmt::format("compose_step: {} buckets, {} wire entries and {} collective times must match",
                    buckets.size(), plan.buckets.size(), collective_times.size()));
  if (options.accumulation == 0)
    throw std::invalid_argument("compose_step: accumulation must be at least 1");

  StepTimeline t;
  Seconds now{0.0};
  for (std::uint32_t m = 0; m < options.accumulation; ++m) {
    t.compute.push_back({ComputePhase::Forward, m, now, now + compute.forward});
    now += compute.forward;
    t.compute.push_back({ComputePhase::Backward, m, now, now + compute.backward});
    now += compute.backward;
  }
  t.backward_end = now;
  const Seconds backward_start = now - compute.backward;

  Seconds encode_free{0.0}, comm_free{0.0}, decode_free{0.0};
  t.sync_end = t.backward_end;
  for (std::size_t k = 0; k < buckets.size(); ++k) {
    BucketInterval b;
    b.bucket = k;
    b.ready = options.overlap == Overlap::None ? t.backward_end
                                               : backward_start + buckets[k].ready_offset;
    b.encode_start = std::max(b.ready, encode_free);
    b.encode_end = b.encode_start + plan.buckets[k].encode;
    encode_free = b.encode_end;
    b.start = std::max(b.encode_end, comm_free);
    b.end = b.start + collective_times[k];
    comm_free = b.end;
    b.decode_start = std::max(b.end, decode_free);
    b.decode_end = b.decode_start + plan.buckets[k].decode;
    decode_free = b.decode_end;
    t.sync_end = std::max(t.sync_end, b.decode_end);
    t.comm_time += collective_times[k];
    t.codec_time += plan.buckets[k].encode + plan.buckets[k].decode;
    t.buckets.push_back(b);
  }

  const Seconds lag = t.sync_end - t.backward_end;
  if (!options.asynchronous) {
    // The optimizer waits for every synced gradient.
    t.exposed_comm = lag;
    t.compute.push_back({ComputePhase::Optimizer, options.accumulation - 1, t.sync_end,
                         t.sync_end + compute.optimizer});
    t.compute_time = t.backward_end + compute.optimizer;
    t.step_time = t.compute_time + t.exposed_comm;
    return t;
  }
  // async-ps: the worker starts its next step at once; the servers apply the update. In steady
  // state a step lasts as long as its busiest stream: compute, or the comm / codec streams
  // that must carry every step's buckets (pushes queue when the network is slower).
  t.compute_time = t.backward_end;
  Seconds encode_busy{0.0}, decode_busy{0.0};
  for (const BucketWire& w : plan.buckets) {
    encode_busy += w.encode;
    decode_busy += w.decode;
  }
  t.step_time = std::max({t.compute_time, t.comm_time, encode_busy, decode_busy});
  t.exposed_comm = t.step_time - t.compute_time;
  // (1e-9 relative: a lag of exactly n steps, summed from parts, is n, not n + 1.)
  if (lag.seconds() > 0.0 && t.step_time.seconds() > 0.0)
    t.staleness_steps = static_cast<std::uint32_t>(std::ceil(lag / t.step_time - 1e-9));
  return t;
}

// ---- metrics -------------------------------------------------------------------------------

std::string_view to_string(Verdict verdict) {
  return verdict == Verdict::CommunicationBound ? "communication-bound" : "compute-bound";
}

Verdict verdict_of(Seconds exposed_comm, Seconds step_time) {
  if (step_time.seconds() > 0.0 && exposed_comm / step_time > kCommunicationBoundShare)
    return Verdict::CommunicationBound;
  return Verdict::ComputeBound;
}

double samples_per_step(const ComputeSpec& compute, std::uint32_t accumulation,
                        std::uint32_t ranks) {
  return static_cast<double>(compute.samples_per_micro_batch) * accumulation * ranks;
}

double single_gpu_samples_per_s(const ComputeSpec& compute, std::uint32_t accumulation) {
  const Seconds step = accumulation * (compute.forward + compute.backward) + compute.optimizer;
  if (!(step.seconds() > 0.0)) return 0.0;
  return samples_per_step(compute, accumulation, 1) / step.seconds();
}

StepMetrics step_metrics(const StepTimeline& timeline, const ComputeSpec& compute,
                         std::uint32_t accumulation, std::uint32_t ranks) {
  StepMetrics m;
  m.step_time = timeline.step_time;
  m.compute_time = timeline.compute_time;
  m.comm_time = timeline.comm_time;
  m.exposed_comm = timeline.exposed_comm;
  if (timeline.compute_time.seconds() > 0.0)
    m.comm_compute_ratio = timeline.comm_time / timeline.compute_time;
  if (timeline.step_time.seconds() > 0.0) {
    m.gpu_utilization = timeline.compute_time / timeline.step_time;
    m.samples_per_step = samples_per_step(compute, accumulation, ranks);
    m.samples_per_s = m.samples_per_step / timeline.step_time.seconds();
  }
  const double alone = single_gpu_samples_per_s(compute, accumulation);
  if (alone > 0.0 && ranks > 0) m.scaling_efficiency = m.samples_per_s / (ranks * alone);
  m.verdict = verdict_of(timeline.exposed_comm, timeline.step_time);
  m.staleness_steps = timeline.staleness_steps;
  if (timeline.staleness_steps > 0 && ranks > 0)
    m.staleness_updates = ranks * timeline.staleness_steps - 1;
  return m;
}

}  // namespace gradsync
