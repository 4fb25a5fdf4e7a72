// Published models as presets (model_presets.hpp).
#include "gradsync/model_presets.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

#include "gradsync/step_schedule.hpp"

namespace gradsync {
namespace {

// Dimensions as the papers give them; the Hugging Face config.json of each checkpoint gives
// the MLP width and key/value heads where the paper does not.
constexpr std::array<ModelPreset, 10> kPresets{{
    {"llama-2-7b", PresetArch::Llama, 32, 4096, 11008, 32, 32, 32000, 4096, 0, 0,
     "Touvron et al. 2023, Llama 2, Table 1; HF meta-llama/Llama-2-7b-hf config.json"},
    {"llama-2-13b", PresetArch::Llama, 40, 5120, 13824, 40, 40, 32000, 4096, 0, 0,
     "Touvron et al. 2023, Llama 2, Table 1; HF meta-llama/Llama-2-13b-hf config.json"},
    {"llama-2-70b", PresetArch::Llama, 80, 8192, 28672, 64, 8, 32000, 4096, 0, 0,
     "Touvron et al. 2023, Llama 2, Table 1 (GQA); HF meta-llama/Llama-2-70b-hf config.json"},
    {"llama-3-8b", PresetArch::Llama, 32, 4096, 14336, 32, 8, 128256, 8192, 0, 0,
     "Meta Llama 3 model card; HF meta-llama/Meta-Llama-3-8B config.json"},
    {"llama-3-70b", PresetArch::Llama, 80, 8192, 28672, 64, 8, 128256, 8192, 0, 0,
     "Meta Llama 3 model card; HF meta-llama/Meta-Llama-3-70B config.json"},
    {"llama-3-405b", PresetArch::Llama, 126, 16384, 53248, 128, 8, 128256, 8192, 0, 0,
     "Dubey et al. 2024, The Llama 3 Herd of Models, Table 3 and §3.4 (8K pre-training context)"},
    {"mistral-7b", PresetArch::Llama, 32, 4096, 14336, 32, 8, 32000, 8192, 0, 0,
     "Jiang et al. 2023, Mistral 7B, Table 1"},
    {"mixtral-8x7b", PresetArch::Mixtral, 32, 4096, 14336, 32, 8, 32000, 32768, 8, 2,
     "Jiang et al. 2024, Mixtral of Experts, Table 1 (8 experts, top 2, 32K context)"},
    {"gpt-3-175b", PresetArch::Gpt, 96, 12288, 4 * 12288, 96, 96, 50257, 2048, 0, 0,
     "Brown et al. 2020, Language Models are Few-Shot Learners, Table 2.1; GPT-2's 50,257 BPE tokens"},
    {"bert-large", PresetArch::Bert, 24, 1024, 4 * 1024, 16, 16, 30522, 512, 0, 0,
     "Devlin et al. 2019, BERT, §3 (L=24, H=1024, A=16; bert-large-uncased vocabulary, 512 "
     "positions, MLM and NSP heads)"},
}};

struct Widths {
  double h, f, kv;
};
Widths widths(const ModelPreset& p, double hidden) {
  const double scale = hidden / p.hidden;  // a wider or narrower variant keeps the ratios
  return {hidden, p.ffn * scale, p.kv_heads * (p.hidden / p.heads) * scale};
}

std::vector<double> block_tensors(const ModelPreset& p, const Widths& w) {
  const double h = w.h, f = w.f, kv = w.kv;
  switch (p.arch) {
    case PresetArch::Gpt:
    case PresetArch::Bert: return transformer_block_tensors(h);
    case PresetArch::Llama: return {h * h, h * kv, h * kv, h * h, h * f, h * f, f * h, h, h};
    case PresetArch::Mixtral: {
      std::vector<double> t{h * h, h * kv, h * kv, h * h, h * p.experts};
      for (std::uint32_t e = 0; e < p.experts; ++e) t.insert(t.end(), {f * h, h * f, f * h});
      t.insert(t.end(), {h, h});
      return t;
    }
  }
  return {};
}

// Parameters one token's forward multiplies by (routed experts only).
double active_block_params(const ModelPreset& p, const Widths& w) {
  const std::vector<double> t = block_tensors(p, w);
  const double all = std::accumulate(t.begin(), t.end(), 0.0);
  if (p.arch != PresetArch::Mixtral) return all;
  return all - (p.experts - p.active_experts) * 3.0 * w.h * w.f;
}

}  // namespace

std::span<const ModelPreset> model_presets() { return kPresets; }

const ModelPreset* find_model_preset(std::string_view name) {
  for (const ModelPreset& p : kPresets)
    if (p.name == name) return &p;
  return nullptr;
}

PresetDims preset_dims(const ModelPreset& p) { return {p.blocks, p.hidden, p.vocab, p.seq_len}; }

std::vector<LayerSpec> preset_layers(const ModelPreset& p, const PresetDims& d, Seconds forward,
                                     Seconds backward) {
  if (d.blocks == 0 || !(d.hidden > 0.0) || !(d.vocab > 0.0))
    throw std::invalid_argument("preset_layers: blocks, hidden and vocab must be positive");
  const Widths w = widths(p, d.hidden);
  const double h = w.h, v = d.vocab, s = d.seq_len;
  auto layer = [](std::string name, std::vector<double> tensors) {
    LayerSpec l;
    l.name = std::move(name);
    l.params = std::accumulate(tensors.begin(), tensors.end(), 0.0);
    l.tensors = std::move(tensors);
    return l;
  };
  std::vector<LayerSpec> layers;
  std::vector<double> flops;
  switch (p.arch) {
    case PresetArch::Gpt: layers.push_back(layer("embedding", {v * h, s * h})); break;
    case PresetArch::Bert: layers.push_back(layer("embedding", {v * h, s * h, 2 * h, h, h})); break;
    case PresetArch::Llama:
    case PresetArch::Mixtral: layers.push_back(layer("embedding", {v * h})); break;
  }
  flops.push_back(0.0);
  const std::vector<double> block = block_tensors(p, w);
  const double block_flops = 2.0 * active_block_params(p, w) + 4.0 * s * h;
  for (std::uint32_t i = 0; i < d.blocks; ++i) {
    layers.push_back(layer(fmt::format("block{}", i), block));
    flops.push_back(block_flops);
  }
  switch (p.arch) {
    case PresetArch::Gpt: layers.push_back(layer("head", {h, h})); break;  // tied to wte
    case PresetArch::Bert:  // pooler, MLM transform and norm, MLM bias (decoder tied), NSP
      layers.push_back(layer("head", {h * h, h, h * h, h, h, h, v, 2 * h, 2}));
      break;
    case PresetArch::Llama:
    case PresetArch::Mixtral: layers.push_back(layer("head", {h, v * h})); break;
  }
  flops.push_back(2.0 * h * v);
  split_compute(layers, flops, forward, backward);
  for (std::size_t i = 0; i < layers.size(); ++i) layers[i].flops = flops[i] * s;  // per sample
  return layers;
}

}  // namespace gradsync
