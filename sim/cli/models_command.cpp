// `gradsync models [--json]`: the model presets a scenario can name (`model: {preset: NAME}`),
// with their dimensions, their parameter count as gradsync lays them out and the source of
// each (include/gradsync/scenario/model_presets.hpp).
#include <iostream>
#include <memory>
#include <numeric>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "gradsync/scenario/model_presets.hpp"

namespace gradsync::cli {
namespace {

std::string_view arch_name(PresetArch a) {
  switch (a) {
    case PresetArch::Gpt: return "gpt";
    case PresetArch::Bert: return "bert";
    case PresetArch::Llama: return "llama";
    case PresetArch::Mixtral: return "mixtral";
    case PresetArch::Vit: return "vit";
    case PresetArch::ResNet: return "resnet";
  }
  return "";
}

// A dimension for the table: "-" where the architecture has none (ResNet's heads, context).
std::string dim(double v) { return v > 0.0 ? fmt::format("{:.0f}", v) : "-"; }

double params_of(const ModelPreset& p) {
  const auto layers = preset_layers(p, preset_dims(p), Seconds(1.0), Seconds(2.0));
  return std::accumulate(layers.begin(), layers.end(), 0.0,
                         [](double sum, const LayerSpec& l) { return sum + l.params; });
}

void run_models(bool json) {
  if (json) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const ModelPreset& p : model_presets())
      out.push_back({{"name", p.name},
                     {"architecture", arch_name(p.arch)},
                     {"params", params_of(p)},
                     {"layers", p.blocks},
                     {"hidden", p.hidden},
                     {"ffn", p.ffn},
                     {"heads", p.heads},
                     {"kv_heads", p.kv_heads},
                     {"vocab", p.vocab},
                     {"seq_len", p.seq_len},
                     {"experts", p.experts},
                     {"active_experts", p.active_experts},
                     {"source", p.source}});
    std::cout << out.dump(1) << '\n';
    return;
  }
  std::cout << fmt::format("{:<14} {:<8} {:>17} {:>6} {:>6} {:>6} {:>5} {:>4} {:>7} {:>6}  {}\n",
                           "preset", "arch", "parameters", "layers", "hidden", "ffn", "heads",
                           "kv", "vocab", "seq", "source");
  for (const ModelPreset& p : model_presets()) {
    std::cout << fmt::format("{:<14} {:<8} {:>17} {:>6} {:>6} {:>6} {:>5} {:>4} {:>7} {:>6}  {}\n",
                             p.name, arch_name(p.arch),
                             fmt::format("{:.0f}", params_of(p)), p.blocks, dim(p.hidden),
                             dim(p.ffn), dim(p.heads), dim(p.kv_heads), dim(p.vocab),
                             dim(p.seq_len), p.source);
  }
  std::cout << "use: model: {preset: NAME}; layers, hidden, vocab, seq_len and params override "
               "a transformer preset's (ViT's vocab: its projection width; resnet-50 is fixed)\n";
}

}  // namespace

void add_models_command(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "models", "List the model presets (model: {preset: NAME}) with their dimensions and sources");
  cmd->add_flag("--json", *json, "print them as a JSON array");
  cmd->callback([json] { run_models(*json); });
}

}  // namespace gradsync::cli
