// Published models as presets (`model: {preset: llama-2-7b}`): their dimensions with
// a source each, and their layers with the parameter tensors their reference implementation
// registers, so parameter counts come out exact (Llama 2 7B: 6,738,415,616, as its Hugging Face
// checkpoint) and DDP's buckets (build_buckets) see the real tensors. Pure functions.
//
// Architectures, per block, in registration order:
//   Gpt     GPT-2/GPT-3 (pre-norm): ln_1 h, h; attention QKV 3h², 3h; projection h², h; ln_2 h, h;
//           MLP up 4h², 4h, down 4h², h (12h² + 13h); token and learned position embeddings,
//           final norm 2h, head tied to the token embedding.
//   Bert    BERT (post-norm): the same block tensors; embeddings word V·h, position S·h,
//           token type 2h, norm 2h; pre-training heads pooler h² + h, MLM transform h² + h and
//           norm 2h, MLM bias V (decoder tied), NSP 2h + 2.
//   Llama   Llama / Mistral (pre-RMSNorm, SwiGLU, no biases): q h², k and v h·kv, o h²; gate,
//           up h·f, down f·h; two norms h (kv = kv_heads · h/heads); untied embedding and
//           head V·h, final norm h.
//   Mixtral Llama's attention, a router h·E and E experts of gate, up, down (h·f each).
//   Vit     Vision Transformer (pre-norm): GPT-2's block tensors; patch embedding conv
//           3·p²·h (no bias), class token h, position embeddings s·h (s = patches + 1), ln_pre
//           2h; ln_post 2h and a projection h·V (`vocab` = the projection's width).
//   ResNet  torchvision ResNet-50 v1.5: stem conv 7×7 + BN, 16 bottlenecks (1×1, 3×3 with
//           the stride, 1×1 convs without biases, a BN of weight and bias after each, a 1×1 +
//           BN downsample opening each stage), fc 2048·1000 + 1000; its dimensions are fixed
//           (no layers/hidden/vocab/seq_len overrides), forward FLOPs from each conv's
//           multiply-adds at 224×224.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "gradsync/scenario/scenario.hpp"
#include "gradsync/units/units.hpp"

namespace gradsync {

enum class PresetArch { Gpt, Bert, Llama, Mixtral, Vit, ResNet };

struct ModelPreset {
  std::string_view name;
  PresetArch arch = PresetArch::Gpt;
  std::uint32_t blocks = 0;
  double hidden = 0.0;
  double ffn = 0.0;        // MLP width (Llama, Mixtral; 4·hidden for Gpt and Bert)
  double heads = 0.0;
  double kv_heads = 0.0;   // key/value heads (grouped-query attention); = heads without it
  double vocab = 0.0;
  double seq_len = 0.0;    // the context it was trained at
  std::uint32_t experts = 0;         // Mixtral: experts per block
  std::uint32_t active_experts = 0;  // ... routed per token
  std::string_view source;
};

// Every preset, in the order `gradsync models` lists them.
[[nodiscard]] std::span<const ModelPreset> model_presets();
[[nodiscard]] const ModelPreset* find_model_preset(std::string_view name);

// The preset's dimensions as the scenario may override them.
struct PresetDims {
  std::uint32_t blocks = 0;
  double hidden = 0.0;
  double vocab = 0.0;
  double seq_len = 0.0;
};
[[nodiscard]] PresetDims preset_dims(const ModelPreset& preset);

// Layers in forward order ("embedding", "block0" … "head") with their tensors, for `dims`
// (the preset's unless overridden; ffn and kv width scale with hidden), compute shared out by
// forward FLOPs per token (a block 2·active block parameters + 4·s·h, the head 2·h·V, the
// embedding 0), as transformer_layers() does; LayerSpec::flops holds them per sample (× s).
[[nodiscard]] std::vector<LayerSpec> preset_layers(const ModelPreset& preset, const PresetDims& dims,
                                                   Seconds forward, Seconds backward);

}  // namespace gradsync
