// Memory per GPU (memory_model.hpp).
#include "gradsync/scenario/memory_model.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

namespace gradsync {

double optimizer_bytes_per_param(GradDtype dtype) {
  return bytes_per_element(dtype) >= 4.0 ? 8.0 : 12.0;
}

double block_activation_bytes(double seq_len, double hidden, double samples,
                              std::uint32_t tensor) {
  return seq_len * hidden * samples * (10.0 + 24.0 / std::max<std::uint32_t>(tensor, 1));
}

namespace {

// Transformer blocks among a stage's layers: the preset's "block<i>" layers.
std::size_t blocks_in(const ModelSpec& model, const StageLayers& stage) {
  std::size_t n = 0;
  for (const auto& [first, last] : stage.chunks)
    for (std::size_t i = first; i < last; ++i)
      if (model.layers[i].name.rfind("block", 0) == 0) ++n;
  return n;
}

bool holds_head(const ModelSpec& model, const StageLayers& stage) {
  for (const auto& [first, last] : stage.chunks)
    if (last == model.layers.size()) return true;
  return false;
}

// Micro-batches whose activations stage `s` holds at its peak.
double in_flight(const ParallelSpec& spec, std::uint32_t s, std::uint32_t accumulation) {
  const double p = spec.pipeline;
  const double m = accumulation;
  if (spec.pipeline <= 1) return 1.0;
  switch (spec.schedule) {
    case PipelineSchedule::GPipe:
      return m;
    case PipelineSchedule::Interleaved: {
      const double v = std::max<std::uint32_t>(spec.virtual_stages, 1);
      return std::min(m, p * (1.0 + (p - 1.0) / (p * v)));  // in whole-stage units
    }
    case PipelineSchedule::OneFOneB:
      return std::min(m, p - s);
  }
  return 1.0;
}

}  // namespace

MemoryBreakdown memory_per_gpu(const ModelSpec& model, const ParallelSpec& spec,
                               const ParallelLayout& layout,
                               std::uint32_t samples_per_micro_batch,
                               std::uint32_t accumulation) {
  const std::vector<StageLayers> stages = stage_layers(model, spec);
  const double b = model.bytes_per_grad();
  const double k = optimizer_bytes_per_param(model.grad_dtype);
  const double t = layout.tensor;
  const double shard = layout.shard_group;
  const bool sharded_params = shards_parameters(spec.data);
  const bool sharded_grads = spec.data == DataParallelism::Zero2 || sharded_params;
  const bool known = model.hidden > 0.0 && model.seq_len > 0.0;
  MemoryBreakdown worst;
  for (std::uint32_t s = 0; s < stages.size(); ++s) {
    const StageLayers& stage = stages[s];
    const double psi = stage.params(model) / t;
    MemoryBreakdown m;
    m.stage = s;
    m.activations_known = known;
    m.optimizer = Bytes(spec.data == DataParallelism::Ddp ? k * psi : k * psi / shard);
    if (sharded_params) {
      // The current unit and the prefetched one are gathered whole.
      std::array<double, 2> largest{0.0, 0.0};
      for (const auto& [first, last] : stage.chunks)
        for (std::size_t i = first; i < last; ++i) {
          const double u = model.layers[i].params / t;
          if (u > largest[0]) largest = {u, largest[0]};
          else if (u > largest[1]) largest[1] = u;
        }
      // Without resharding after forward every unit stays gathered until its backward.
      const double gathered = !spec.reshard_after_forward ? psi
                              : spec.prefetch             ? largest[0] + largest[1]
                                                          : largest[0];
      m.params = Bytes(b * (psi / shard + gathered));
    } else {
      m.params = Bytes(b * psi);
    }
    const bool keeps_full_grads = !spec.sync_every_micro_batch && accumulation > 1;
    m.grads = Bytes(sharded_grads && !keeps_full_grads ? b * psi / shard : b * psi);
    if (known) {
      const double mb = samples_per_micro_batch;
      const double full = block_activation_bytes(model.seq_len, model.hidden, mb, layout.tensor);
      const double blocks = static_cast<double>(blocks_in(model, stage));
      const double per_micro_batch =
          spec.activation_checkpointing ? blocks * 2.0 * model.seq_len * model.hidden * mb
                                        : blocks * full;
      double act = per_micro_batch * in_flight(spec, s, accumulation);
      if (spec.activation_checkpointing && blocks > 0) act += full;  // one block recomputed
      if (holds_head(model, stage) && model.vocab > 0.0)
        act += model.seq_len * mb * model.vocab * (2.0 + 4.0) / t;
      m.activations = Bytes(act);
    }
    if (s == 0 || m.total() > worst.total()) worst = m;
  }
  return worst;
}

std::optional<Bytes> gpu_memory_of(std::string_view model) {
  // Datasheet HBM/GDDR capacities (NVIDIA product pages).
  static constexpr std::array<std::pair<std::string_view, double>, 28> kMemory{{
      {"v100", 32},  {"t4", 16},     {"rtx2080ti", 11}, {"titan-rtx", 24}, {"a100", 80},
      {"a800", 80},  {"a30", 24},    {"a10", 24},       {"a40", 48},       {"a6000", 48},
      {"rtx3090", 24}, {"l4", 24},   {"l40", 48},       {"l40s", 48},      {"rtx4090", 24},
      {"h100", 80},  {"h800", 80},   {"h20", 96},       {"h200", 141},     {"gh200", 96},
      {"b100", 192}, {"b200", 180},  {"gb200", 186},    {"b300", 288},     {"gb300", 288},
      {"rtx5090", 32}, {"rtx-pro-6000", 96}, {"gb10", 128},
  }};
  for (const auto& [name, gib] : kMemory)
    if (name == model) return Bytes(gib * 1073741824.0);
  return std::nullopt;
}

}  // namespace gradsync
