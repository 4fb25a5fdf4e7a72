// The model and compute sections of a scenario (scenario_model.hpp).
#include "scenario_model.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "gradsync/scenario/gpu_catalog.hpp"
#include "gradsync/scenario/model_presets.hpp"
#include "gradsync/scenario/step_schedule.hpp"
#include "scenario_keys.hpp"

namespace gradsync::config {

// A count of parameters: a number, or one with K, M, B or T (parse_param_count: "7B", "350M").
double count_of(const MapReader& r, const std::string& key, bool allow_zero) {
  double v = 0.0;
  try {
    v = parse_param_count(r.string(key));
  } catch (const UnitError& e) {
    r.fail(key, e.what());
  }
  if (v < 0.0 || (!allow_zero && v == 0.0) || v >= kMaxParams)
    r.fail(key, fmt::format("must be {} and below 1e13, got {}",
                            allow_zero ? "at least 0" : "positive", v));
  return v;
}

Bytes bucket_size(const MapReader& r, const std::string& key, Bytes fallback) {
  if (!r.has(key)) return fallback;
  const Bytes b = r.size(key);
  if (b.bytes() < kMinBucketBytes || b.bytes() > kMaxBucketBytes)
    r.fail(key, fmt::format("must be between 1 KiB and 1 TiB, got {}", format_size(b)));
  return b;
}

BytesPerSecond positive_rate(const MapReader& r, const std::string& key) {
  const BytesPerSecond rate = r.rate(key);
  if (!(rate.bytes_per_second() > 0.0)) r.fail(key, "must be positive");
  return rate;
}

std::optional<Seconds> opt_compute_time(const MapReader& r, const std::string& key) {
  const auto t = r.opt_time(key);
  if (t && t->seconds() > kMaxComputeSeconds)
    r.fail(key, fmt::format("{} per micro-batch is too long (at most 1h): a unit typo?",
                            format_time(*t)));
  return t;
}

namespace {

// model.layers.N.tensors: the elements of each parameter tensor in registration order (what
// DDP buckets), adding up to the layer's params.
std::vector<double> read_tensors(const MapReader& l, double params) {
  const YAML::Node node = l.node("tensors");
  const auto items = config::sequence_of(node, l.file(), l.path("tensors"));
  if (items.empty()) l.fail("tensors", "a tensor list needs at least one tensor");
  if (items.size() > 1000000) l.fail("tensors", "at most 1000000 tensors per layer");
  std::vector<double> tensors;
  double sum = 0.0;
  for (std::size_t k = 0; k < items.size(); ++k) {
    const SourceMark at = mark_of(items[k], l.file());
    double n = 0.0;
    try {
      n = items[k].IsScalar() ? parse_param_count(items[k].Scalar()) : -1.0;
    } catch (const UnitError& e) {
      throw ConfigError(at, fmt::format("{}.{}: {}", l.path("tensors"), k, e.what()));
    }
    if (!(n > 0.0) || n >= kMaxParams)
      throw ConfigError(at, fmt::format("{}.{}: expected a positive element count below 1e13",
                                        l.path("tensors"), k));
    tensors.push_back(n);
    sum += n;
  }
  if (std::abs(sum - params) > 1e-9 * std::max(1.0, params))
    l.fail("tensors", fmt::format("add up to {} elements, and the layer's params are {}",
                                  fmt::format("{:.0f}", sum), fmt::format("{:.0f}", params)));
  return tensors;
}

}  // namespace

// A layer's forward FLOPs (a weight for sharing out compute): finite and at most 1e24, so that
// 100000 layers still add up to a finite total.
constexpr double kMaxLayerFlops = 1e24;

ComputeDraft read_compute(const MapReader& top) {
  MapReader r(top.node("compute"), top.file(), "compute", kComputeKeys);
  ComputeDraft d;
  d.forward = opt_compute_time(r, "forward");
  d.backward = opt_compute_time(r, "backward");
  d.spec.optimizer = opt_compute_time(r, "optimizer").value_or(Seconds(0.0));
  d.optimizer_given = r.has("optimizer");
  if (r.has("mfu") && r.has("tflops"))
    r.fail("tflops", "give mfu (a share of the GPU's peak) or tflops (achieved), not both");
  for (const char* key : {"mfu", "tflops"}) {
    if (!r.has(key)) continue;
    for (const char* timed : {"forward", "backward"})
      if (r.has(timed))
        r.fail(key, fmt::format("derives compute.forward and backward from FLOPs; remove "
                                "compute.{} or {}", timed, key));
    const double v = r.number(key);
    if (std::string_view(key) == "mfu" && !(v > 0.0 && v <= 1.0))
      r.fail(key, fmt::format("is a share of the peak in (0, 1], got {}", v));
    if (std::string_view(key) == "tflops" && !(v > 0.0 && v <= 1e6))
      r.fail(key, fmt::format("must be positive TFLOP/s per GPU (at most 1e6), got {}", v));
    (std::string_view(key) == "mfu" ? d.mfu : d.tflops) = v;
  }
  d.spec.samples_per_micro_batch =
      static_cast<std::uint32_t>(r.integer("samples_per_micro_batch", 1, kMaxSamples));
  return d;
}

namespace {

// Preset totals: compute.forward and compute.backward are required.
std::pair<Seconds, Seconds> required_totals(const MapReader& top, const ComputeDraft& c,
                                            const std::string& why) {
  const MapReader r(top.node("compute"), top.file(), "compute", kComputeKeys);
  if (c.from_flops()) return {Seconds(1.0), Seconds(2.0)};  // placeholders, rescaled later
  for (const char* key : {"forward", "backward"})
    if (!r.has(key))
      throw ConfigError(r.mark(),
                        fmt::format("missing required key '{}' in compute ({}; or give "
                                    "compute.mfu to derive them from FLOPs)", key, why));
  return {*c.forward, *c.backward};
}

std::vector<LayerSpec> read_layer_list(const MapReader& model, const MapReader& top,
                                       ComputeDraft& compute) {
  const auto items = config::sequence_of(model.node("layers"), model.file(), "model.layers");
  if (items.empty())
    throw ConfigError(mark_of(model.node("layers"), model.file()),
                      "model.layers: an explicit layer list needs at least one layer");
  struct Entry {
    LayerSpec layer;
    long long repeat = 1;
    bool timed = false;
    std::optional<double> flops;
    SourceMark at;
  };
  std::vector<Entry> entries;
  long long expanded = 0, tensors = 0;
  std::optional<std::size_t> first_timed, first_untimed, first_flops, first_no_flops;
  for (std::size_t i = 0; i < items.size(); ++i) {
    MapReader l(items[i], model.file(), fmt::format("model.layers.{}", i), kLayerKeys);
    Entry e;
    e.at = l.mark();
    e.layer.name = l.opt_string("name").value_or(fmt::format("layer{}", i));
    e.layer.params = count_of(l, "params", true);
    e.layer.group = l.opt_string("group").value_or("");
    e.repeat = l.opt_integer("repeat", 1, kMaxLayers).value_or(1);
    if (l.has("tensors")) e.layer.tensors = read_tensors(l, e.layer.params);
    const auto fwd = opt_compute_time(l, "forward");
    const auto bwd = opt_compute_time(l, "backward");
    if (fwd.has_value() != bwd.has_value())
      l.fail(fwd ? "forward" : "backward", "forward and backward are given together");
    if (fwd) {
      e.timed = true;
      e.layer.forward = *fwd;
      e.layer.backward = *bwd;
    }
    if (l.has("flops")) {
      e.flops = l.number("flops");
      if (*e.flops < 0.0) l.fail("flops", "must be at least 0");
      if (*e.flops > kMaxLayerFlops) l.fail("flops", "must be at most 1e24 (FLOPs per sample)");
      if (e.timed)
        l.fail("flops",
               "shares out compute.forward/backward, but this layer gives "
               "its own forward/backward");
    }
    (e.timed ? first_timed : first_untimed) = (e.timed ? first_timed : first_untimed).value_or(i);
    (e.flops ? first_flops : first_no_flops) = (e.flops ? first_flops : first_no_flops).value_or(i);
    expanded += e.repeat;
    if (expanded > kMaxLayers)
      l.fail(l.has("repeat") ? "repeat" : "params",
             fmt::format("the model would have more than {} layers", kMaxLayers));
    // Each repeated layer copies its tensor list: 2000 tensors x repeat 100000 would be
    // 1.6 GB of doubles from a 6 KB file.
    tensors += e.repeat * static_cast<long long>(std::max<std::size_t>(1, e.layer.tensors.size()));
    if (tensors > kMaxTensors)
      l.fail(l.has("repeat") ? "repeat" : "tensors",
             fmt::format("the model would have more than {} parameter tensors (tensors: times "
                         "repeat:, over all layers)", kMaxTensors));
    entries.push_back(std::move(e));
  }
  if (first_timed && first_untimed)
    throw ConfigError(entries[*first_untimed].at,
                      fmt::format("model.layers.{}: has no forward/backward while "
                                  "model.layers.{} has them; give them for every layer, or for "
                                  "none (then compute.forward/backward are shared out)",
                                  *first_untimed, *first_timed));
  if (first_flops && first_no_flops)
    throw ConfigError(entries[*first_no_flops].at,
                      fmt::format("model.layers.{}: has no flops while model.layers.{} has them; "
                                  "give flops for every layer or for none",
                                  *first_no_flops, *first_flops));

  std::vector<LayerSpec> layers;
  std::vector<double> weights;
  layers.reserve(static_cast<std::size_t>(expanded));
  for (const Entry& e : entries)
    for (long long r = 0; r < e.repeat; ++r) {
      LayerSpec layer = e.layer;
      layer.flops = e.flops.value_or(0.0);
      if (e.repeat > 1) layer.name = fmt::format("{}.{}", e.layer.name, r);
      layers.push_back(std::move(layer));
      weights.push_back(e.flops.value_or(e.layer.params));
    }

  const MapReader c(top.node("compute"), top.file(), "compute", kComputeKeys);
  if (first_timed) {
    Seconds f{0.0}, b{0.0};
    for (const auto& l : layers) {
      f += l.forward;
      b += l.backward;
    }
    for (const char* key : {"forward", "backward", "mfu", "tflops"})
      if (c.has(key))
        c.fail(key, fmt::format("the layers of model.layers give their own times (forward "
                                "{}, backward {}); remove compute.{}",
                                format_time(f), format_time(b), key));
    compute.forward = f;
    compute.backward = b;
    return layers;
  }
  const auto [f, b] =
      required_totals(top, compute, "the layers of model.layers give no forward/backward");
  try {
    split_compute(layers, weights, f, b);
  } catch (const std::invalid_argument&) {
    throw ConfigError(mark_of(model.node("layers"), model.file()),
                      fmt::format("model.layers: the layers' {} add up to 0, so compute.forward "
                                  "cannot be shared out; give forward/backward per layer",
                                  first_flops ? "flops" : "params"));
  }
  return layers;
}

// model: {preset: NAME} (model_presets.hpp), with layers, hidden, vocab, seq_len and params
// overriding the preset's; params rescales the blocks (within kMaxPresetMismatch).
std::vector<LayerSpec> read_named_preset(const MapReader& m, const MapReader& top,
                                         ComputeDraft& compute, ModelSpec& model) {
  std::vector<std::string> names;
  for (const ModelPreset& p : model_presets()) names.emplace_back(p.name);
  const ModelPreset& preset = *find_model_preset(m.choice("preset", names));
  if (m.has("tie_embeddings"))
    m.fail("tie_embeddings", fmt::format("is fixed by the preset's architecture ({})", preset.name));
  PresetDims d = preset_dims(preset);
  if (preset.arch == PresetArch::ResNet)
    for (const char* key : {"layers", "hidden", "vocab", "seq_len", "params"})
      if (m.has(key))
        m.fail(key, fmt::format("{} is a convolutional network with fixed layers; remove {}",
                                preset.name, key));
  if (m.has("layers")) d.blocks = static_cast<std::uint32_t>(m.integer("layers", 1, kMaxLayers - 2));
  if (m.has("hidden")) d.hidden = static_cast<double>(m.integer("hidden", 1, kMaxHidden));
  if (m.has("vocab")) d.vocab = static_cast<double>(m.integer("vocab", 1, kMaxVocab));
  if (m.has("seq_len")) d.seq_len = static_cast<double>(m.integer("seq_len", 1, kMaxSeqLen));
  const auto [f, b] = required_totals(top, compute, "the preset shares them out");
  std::vector<LayerSpec> layers = preset_layers(preset, d, f, b);
  double total = 0.0, blocks = 0.0;
  for (const LayerSpec& l : layers) {
    total += l.params;
    if (l.name.rfind("block", 0) == 0) blocks += l.params;
  }
  if (total >= kMaxParams)
    m.fail("hidden", fmt::format("the model would have {:.4g} parameters (at most 1e13)", total));
  if (m.has("params")) {
    const double params = count_of(m, "params", false);
    const double scale = (params - (total - blocks)) / blocks;
    if (std::abs(total - params) > kMaxPresetMismatch * params || !(scale > 0.0))
      m.fail("params", fmt::format("{:.4g} is more than {:.0f} % away from the {:.4g} parameters "
                                   "of {} with these dimensions; check them, or leave params out",
                                   params, 100 * kMaxPresetMismatch, total, preset.name));
    for (LayerSpec& l : layers)
      if (l.name.rfind("block", 0) == 0) {
        l.params *= scale;
        for (double& n : l.tensors) n *= scale;
      }
  }
  if (preset.arch != PresetArch::ResNet) {  // a CNN has no tokens of a width to move
    model.hidden = d.hidden;
    model.vocab = d.vocab;
    model.seq_len = d.seq_len;
  }
  return layers;
}

std::vector<LayerSpec> read_preset(const MapReader& m, const MapReader& top,
                                   ComputeDraft& compute) {
  const bool has_hidden = m.has("hidden");
  if (has_hidden != m.has("vocab"))
    throw ConfigError(m.mark(), fmt::format("missing required key '{}' in model (hidden: and "
                                            "vocab: size the embedding and head together)",
                                            has_hidden ? "vocab" : "hidden"));
  std::vector<LayerSpec> layers;
  if (has_hidden) {
    TransformerShape shape;
    shape.blocks = static_cast<std::uint32_t>(m.integer("layers", 1, kMaxLayers - 2));
    shape.hidden = static_cast<double>(m.integer("hidden", 1, kMaxHidden));
    shape.vocab = static_cast<double>(m.integer("vocab", 1, kMaxVocab));
    shape.seq_len = static_cast<double>(m.opt_integer("seq_len", 1, kMaxSeqLen).value_or(0));
    shape.tie_embeddings = m.opt_boolean("tie_embeddings").value_or(false);
    std::optional<double> params;
    const double formula = transformer_params(shape);
    if (m.has("params")) {
      params = count_of(m, "params", false);
      if (std::abs(formula - *params) > kMaxPresetMismatch * *params)
        m.fail("params",
               fmt::format("{:.4g} is more than {:.0f} % away from the {:.4g} "
                           "parameters of layers: {}, hidden: {}, vocab: {}{}; check "
                           "them, or leave params out",
                           *params, 100 * kMaxPresetMismatch, formula, shape.blocks, shape.hidden,
                           shape.vocab, shape.tie_embeddings ? ", tied embeddings" : ""));
    } else if (formula >= kMaxParams) {
      m.fail("hidden",
             fmt::format("the model would have {:.4g} parameters (at most 1e13)", formula));
    }
    const auto [f, b] = required_totals(top, compute, "the transformer preset shares them out");
    try {
      return transformer_layers(shape, params, f, b);
    } catch (const std::invalid_argument& e) {
      m.fail("params", e.what());
    }
  }
  for (const char* key : {"seq_len", "tie_embeddings"})
    if (m.has(key)) m.fail(key, "applies to the transformer preset (hidden:, vocab:)");
  const double params = count_of(m, "params", false);
  const auto count = static_cast<std::uint32_t>(m.opt_integer("layers", 1, kMaxLayers).value_or(1));
  const auto [f, b] = required_totals(top, compute, "the params preset shares them out");
  return equal_layers(params, count, f, b);
}

}  // namespace

ModelSpec read_model(const MapReader& top, ComputeDraft& compute) {
  MapReader m(top.node("model"), top.file(), "model", kModelKeys);
  ModelSpec model;
  const bool named = m.has("preset");
  model.grad_dtype = *grad_dtype_from_string(
      named ? m.opt_choice("grad_dtype", kDtypes).value_or("bf16") : m.choice("grad_dtype", kDtypes));
  const YAML::Node layers = m.self()["layers"];
  if (named) {
    if (layers.IsDefined() && layers.IsSequence())
      m.fail("layers", "with a preset, layers: is the number of blocks");
    model.layers = read_named_preset(m, top, compute, model);
  } else if (layers.IsDefined() && layers.IsSequence()) {
    for (const char* key : {"params", "hidden", "vocab", "seq_len", "tie_embeddings"})
      if (m.has(key))
        m.fail(key,
               "applies to a preset (layers: N); an explicit layer list gives each "
               "layer's params");
    model.layers = read_layer_list(m, top, compute);
  } else {
    model.layers = read_preset(m, top, compute);
  }
  if (!named && m.has("hidden") && !(layers.IsDefined() && layers.IsSequence())) {
    model.hidden = static_cast<double>(m.integer("hidden", 1, kMaxHidden));
    model.vocab = static_cast<double>(m.integer("vocab", 1, kMaxVocab));
    model.seq_len = static_cast<double>(m.opt_integer("seq_len", 1, kMaxSeqLen).value_or(0));
  }
  const double total = model.total_params();
  if (!(total > 0.0)) throw ConfigError(m.mark(), "model: the layers hold no parameters");
  if (total >= kMaxParams)
    throw ConfigError(m.mark(), fmt::format("model: {:.4g} parameters; at most 1e13", total));
  return model;
}

// compute: {mfu | tflops}: one micro-batch's forward = its FLOPs (Σ LayerSpec::flops × samples)
// over the achieved rate (mfu × the GPU's dense peak for the gradient dtype, gpu_catalog.hpp, or
// tflops), backward twice that (Kaplan et al. 2020 §2.1), the layers rescaled from their
// placeholder split; without compute.optimizer, the fused AdamW step from memory traffic
// (kAdamBytesPerParam × parameters / bandwidth). What was derived goes to sc.notes.
void derive_compute(const MapReader& top, const ComputeDraft& c, const Topology& topo, Scenario& sc) {
  const MapReader r(top.node("compute"), top.file(), "compute", kComputeKeys);
  const char* key = c.mfu ? "mfu" : "tflops";
  double per_sample = 0.0;
  for (const LayerSpec& l : sc.model.layers) per_sample += l.flops;
  if (!(per_sample > 0.0))
    r.fail(key, "needs the model's FLOPs: a preset (model.preset), a transformer with "
                "model.seq_len, or flops: on every layer of model.layers");
  const GpuSpec* gpu = find_gpu(topo.gpu_model());
  double rate = 0.0;
  std::string how;
  if (c.mfu) {
    if (gpu == nullptr)
      r.fail(key, fmt::format("the topology's gpu: '{}' is not in the GPU catalog (v100, a100, "
                              "h100, h200, b200, gb200, l40s, rtx4090); give compute.tflops",
                              topo.gpu_model()));
    const std::optional<double> peak = peak_flops(*gpu, sc.model.grad_dtype);
    if (!peak)
      r.fail(key, fmt::format("{} has no dense {} tensor-core peak; give compute.tflops",
                              gpu->name, to_string(sc.model.grad_dtype)));
    rate = *c.mfu * *peak;
    how = fmt::format("{:g} × {} {:g} TFLOP/s dense {} peak ({})", *c.mfu, gpu->name,
                      *peak / 1e12, to_string(sc.model.grad_dtype), gpu->source);
  } else {
    rate = *c.tflops * 1e12;
    how = fmt::format("{:g} TFLOP/s achieved", *c.tflops);
  }
  const double samples = sc.compute.samples_per_micro_batch;
  const Seconds forward(per_sample * samples / rate);
  if (forward.seconds() > kMaxComputeSeconds)
    r.fail(key, fmt::format("gives a forward of {} per micro-batch ({:.4g} FLOP at {:.4g} "
                            "FLOP/s); more than an hour is a unit or model mistake",
                            format_time(forward), per_sample * samples, rate));
  const double f_scale = forward.seconds() / sc.compute.forward.seconds();
  const double b_scale = 2.0 * forward.seconds() / sc.compute.backward.seconds();
  for (LayerSpec& l : sc.model.layers) {
    l.forward = l.forward * f_scale;
    l.backward = l.backward * b_scale;
  }
  sc.compute.forward = forward;
  sc.compute.backward = forward * 2.0;
  sc.notes.push_back(fmt::format("compute derived: forward {} = {:.4g} FLOP per micro-batch "
                                 "({:g} sample{}) / {}; backward 2 × forward",
                                 format_time(forward), per_sample * samples, samples,
                                 samples == 1 ? "" : "s", how));
  if (!c.optimizer_given) {
    if (gpu == nullptr)
      r.fail(key, fmt::format("cannot derive compute.optimizer: the topology's gpu: '{}' is not "
                              "in the GPU catalog; give compute.optimizer",
                              topo.gpu_model()));
    const double params = sc.model.total_params();
    sc.compute.optimizer = Seconds(kAdamBytesPerParam * params / (gpu->memory_tbps * 1e12));
    sc.notes.push_back(fmt::format("compute derived: optimizer {} = {:g} B × {:.4g} parameters / "
                                   "{:g} TB/s (fused AdamW)", format_time(sc.compute.optimizer),
                                   kAdamBytesPerParam, params, gpu->memory_tbps));
  }
}

}  // namespace gradsync::config
