// Model presets (model_presets.hpp): parameter counts as the published checkpoints hold them,
// every layer's tensors adding up to its parameters.
#include <doctest/doctest.h>

#include <string_view>

#include "gradsync/scenario/model_presets.hpp"

namespace {
using namespace gradsync;
using namespace gradsync::literals;
}  // namespace

TEST_CASE("presets: parameter counts of the published checkpoints, exactly") {
  auto params = [](std::string_view name) {
    const ModelPreset* p = find_model_preset(name);
    REQUIRE(p != nullptr);
    double sum = 0.0;
    for (const LayerSpec& l : preset_layers(*p, preset_dims(*p), 1_s, 2_s)) {
      double tensors = 0.0;
      for (double n : l.tensors) tensors += n;
      CHECK(tensors == doctest::Approx(l.params));
      sum += l.params;
    }
    return sum;
  };
  // Hugging Face checkpoints' parameter counts (model.num_parameters()).
  CHECK(params("llama-2-7b") == 6'738'415'616.0);
  CHECK(params("llama-2-13b") == 13'015'864'320.0);
  CHECK(params("llama-2-70b") == 68'976'648'192.0);
  CHECK(params("llama-3-8b") == 8'030'261'248.0);
  CHECK(params("llama-3-70b") == 70'553'706'496.0);
  CHECK(params("llama-3-405b") == 405'853'388'800.0);
  CHECK(params("mistral-7b") == 7'241'732'096.0);
  CHECK(params("mixtral-8x7b") == 46'702'792'704.0);  // every expert: DDP syncs them all
  // The papers' rounded figures: GPT-3 "175.0B" (Table 2.1), BERT-large "340M" (§3).
  CHECK(params("gpt-3-175b") == doctest::Approx(175.0e9).epsilon(0.005));
  CHECK(params("bert-large") == doctest::Approx(340e6).epsilon(0.015));
  // CLIP ViT-L/14's image encoder: OpenCLIP's profile, 303.97M; torchvision resnet50:
  // sum(p.numel() for p in resnet50().parameters()) = 25,557,032.
  CHECK(params("vit-l/14") == 303'966'208.0);
  CHECK(params("resnet-50") == 25'557'032.0);
  CHECK(find_model_preset("llama-2-7") == nullptr);
}

TEST_CASE("presets: forward FLOPs of the vision models per image") {
  auto flops = [](std::string_view name) {
    const ModelPreset* p = find_model_preset(name);
    REQUIRE(p != nullptr);
    double sum = 0.0;
    for (const LayerSpec& l : preset_layers(*p, preset_dims(*p), 1_s, 2_s)) sum += l.flops;
    return sum;
  };
  // ResNet-50 v1.5 at 224x224: 4.09 GMAC (torchvision's model card: 4.09 GFLOPS counted as
  // multiply-adds); ViT-L/14 at 224 px: OpenCLIP's model profile of ViT-L-14, image tower
  // 162.03 GFLOP (attention included).
  CHECK(flops("resnet-50") == doctest::Approx(2 * 4.09e9).epsilon(0.01));
  CHECK(flops("vit-l/14") == doctest::Approx(162.03e9).epsilon(0.02));
}
