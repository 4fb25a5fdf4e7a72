// Published models as presets (model_presets.hpp).
#include "gradsync/scenario/model_presets.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

#include "gradsync/scenario/step_schedule.hpp"

namespace gradsync {
namespace {

// Dimensions as the papers give them; the Hugging Face config.json of each checkpoint gives
// the MLP width and key/value heads where the paper does not.
constexpr std::array<ModelPreset, 12> kPresets{{
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
    {"vit-l/14", PresetArch::Vit, 24, 1024, 4 * 1024, 16, 16, 768, 257, 0, 0,
     "Dosovitskiy et al. 2021, ViT, Table 1 (ViT-L: 24 layers, width 1024, MLP 4096, 16 heads); "
     "Radford et al. 2021, CLIP, ViT-L/14 image encoder at 224 px (256 patches + class token, "
     "768-wide projection)"},
    {"resnet-50", PresetArch::ResNet, 16, 2048, 0, 0, 0, 1000, 0, 0, 0,
     "He et al. 2016, Deep Residual Learning, Table 1 (50-layer); torchvision resnet50 (v1.5: "
     "stride on the 3x3 conv), 25,557,032 parameters"},
}};

constexpr double kVitPatch = 14.0;  // ViT-L/14: 14 x 14 pixel patches

// torchvision resnet50: per layer (stem, 16 bottlenecks, fc) its tensors in registration order
// and its forward FLOPs per 224x224 image (2 x the convs' and fc's multiply-adds).
struct CnnLayer {
  std::string name;
  std::vector<double> tensors;
  double flops = 0.0;
};
std::vector<CnnLayer> resnet50() {
  std::vector<CnnLayer> out;
  // stem: conv 7x7/2, 3 -> 64, output 112 x 112; BN
  out.push_back({"stem", {64.0 * 3 * 7 * 7, 64, 64}, 2.0 * 64 * 3 * 49 * 112 * 112});
  const std::array<int, 4> blocks{3, 4, 6, 3};
  double inplanes = 64.0, size = 56.0;  // after the 3x3/2 max pool
  for (int stage = 0; stage < 4; ++stage) {
    const double planes = 64.0 * (1 << stage);
    for (int b = 0; b < blocks[static_cast<std::size_t>(stage)]; ++b) {
      const bool first = b == 0;
      const double in_size = size;
      const double out_size = first && stage > 0 ? size / 2.0 : size;
      const double out4 = 4.0 * planes;
      CnnLayer l;
      l.name = fmt::format("layer{}.{}", stage + 1, b);
      l.tensors = {planes * inplanes, planes, planes, planes * planes * 9, planes, planes,
                   out4 * planes, out4, out4};
      double macs = planes * inplanes * in_size * in_size + planes * planes * 9 * out_size * out_size +
                    out4 * planes * out_size * out_size;
      if (first) {
        l.tensors.insert(l.tensors.end(), {out4 * inplanes, out4, out4});
        macs += out4 * inplanes * out_size * out_size;
      }
      l.flops = 2.0 * macs;
      out.push_back(std::move(l));
      inplanes = out4;
      size = out_size;
    }
  }
  out.push_back({"fc", {1000.0 * 2048, 1000}, 2.0 * 2048 * 1000});
  return out;
}

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
    case PresetArch::Bert:
    case PresetArch::Vit: return transformer_block_tensors(h);
    case PresetArch::ResNet: return {};
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
  auto layer = [](std::string name, std::vector<double> tensors) {
    LayerSpec l;
    l.name = std::move(name);
    l.params = std::accumulate(tensors.begin(), tensors.end(), 0.0);
    l.tensors = std::move(tensors);
    return l;
  };
  std::vector<LayerSpec> layers;
  std::vector<double> flops;
  if (p.arch == PresetArch::ResNet) {  // fixed dimensions
    for (CnnLayer& c : resnet50()) {
      layers.push_back(layer(c.name, std::move(c.tensors)));
      flops.push_back(c.flops);
    }
    split_compute(layers, flops, forward, backward);
    for (std::size_t i = 0; i < layers.size(); ++i) layers[i].flops = flops[i];  // per sample
    return layers;
  }
  if (d.blocks == 0 || !(d.hidden > 0.0) || !(d.vocab > 0.0))
    throw std::invalid_argument("preset_layers: blocks, hidden and vocab must be positive");
  const Widths w = widths(p, d.hidden);
  const double h = w.h, v = d.vocab, s = d.seq_len;
  switch (p.arch) {
    case PresetArch::Gpt: layers.push_back(layer("embedding", {v * h, s * h})); break;
    case PresetArch::Bert: layers.push_back(layer("embedding", {v * h, s * h, 2 * h, h, h})); break;
    case PresetArch::Llama:
    case PresetArch::Mixtral: layers.push_back(layer("embedding", {v * h})); break;
    case PresetArch::Vit:
      layers.push_back(layer("embedding", {3.0 * kVitPatch * kVitPatch * h, h, s * h, h, h}));
      break;
    case PresetArch::ResNet: break;
  }
  // The patch embedding is a matmul per patch (the class token is not one); a lookup is free.
  flops.push_back(p.arch == PresetArch::Vit && s > 0.0
                      ? 2.0 * 3.0 * kVitPatch * kVitPatch * h * (s - 1.0) / s
                      : 0.0);
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
    case PresetArch::Vit: layers.push_back(layer("head", {h, h, h * v})); break;  // ln_post, proj
    case PresetArch::ResNet: break;
  }
  // The head runs on every token, except ViT's projection (the class token only).
  flops.push_back(p.arch == PresetArch::Vit && s > 0.0 ? 2.0 * h * v / s : 2.0 * h * v);
  split_compute(layers, flops, forward, backward);
  for (std::size_t i = 0; i < layers.size(); ++i) layers[i].flops = flops[i] * s;  // per sample
  return layers;
}

}  // namespace gradsync
