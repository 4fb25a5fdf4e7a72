// Memory per GPU of a training layout: model states as the ZeRO paper counts them
// (Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion Parameter
// Models", §3.1 and Table 1: mixed-precision Adam keeps 2Ψ of fp16/bf16 parameters, 2Ψ of
// gradients and KΨ = 12Ψ of fp32 master weights, momentum and variance) and activations of
// transformer blocks as Korthikanti et al. 2022 count them ("Reducing Activation Recomputation
// in Large Transformer Models", §4.1: s·b·h·(10 + 24/t + 5·a·s/(h·t)) bytes per block with
// tensor parallelism t and no sequence parallelism). Pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gradsync/scenario/parallel_layout.hpp"
#include "gradsync/scenario/scenario.hpp"
#include "gradsync/units/units.hpp"

namespace gradsync {

struct MemoryBreakdown {
  Bytes params{0.0};       // the GPU's parameters (sharded: its shard + the gathered units)
  Bytes grads{0.0};
  Bytes optimizer{0.0};    // fp32 master weights, Adam momentum and variance
  Bytes activations{0.0};  // kept for backward at the peak (in-flight micro-batches)
  bool activations_known = false;  // false without model.hidden / seq_len: counted as 0
  std::uint32_t stage = 0;         // the pipeline stage this is (the fullest one)
  [[nodiscard]] Bytes total() const { return params + grads + optimizer + activations; }
};

// Optimizer bytes per parameter (K): 12 with 16-bit parameters (fp32 master copy, Adam m and
// v), 8 with fp32 parameters (Adam m and v; the parameters are their own master copy).
[[nodiscard]] double optimizer_bytes_per_param(GradDtype dtype);

// Activation bytes one transformer block keeps for backward, per micro-batch of `samples`
// sequences of `seq_len` tokens of width `hidden`, tensor parallel `tensor`: Korthikanti et
// al.'s 34·s·b·h at t = 1, (10 + 24/t)·s·b·h with t, without their 5·a·s²·b term: attention
// scores are not stored by fused (flash) attention, the default of PyTorch's SDPA and of
// Megatron-LM. With activation checkpointing only the block input is kept (2·s·b·h) and one
// block's full activations exist at a time, during its recomputation.
[[nodiscard]] double block_activation_bytes(double seq_len, double hidden, double samples,
                                            std::uint32_t tensor);

// The largest per-GPU memory over the pipeline stages of `model` under `spec` and `layout`:
// model states of the stage's layers divided over tensor ranks, sharded as `spec.data` says
// (zero1: optimizer over the shard group; zero2: + gradients; zero3/fsdp/hsdp: + parameters,
// plus the two largest units gathered at once, the current and the prefetched one; unsharded
// gradients again when sync_every_micro_batch is false with accumulation > 1), and
// activations of the micro-batches a stage holds at once (1 without a pipeline; 1F1B: pipeline
// − stage; GPipe: all `accumulation`; interleaved: pipeline·(1 + (pipeline−1)/(pipeline·v)),
// Korthikanti et al. §4.2.3), plus the logits (bf16 and fp32 for the loss, over the tensor
// ranks) on the last stage.
[[nodiscard]] MemoryBreakdown memory_per_gpu(const ModelSpec& model, const ParallelSpec& spec,
                                             const ParallelLayout& layout,
                                             std::uint32_t samples_per_micro_batch,
                                             std::uint32_t accumulation);

// HBM per GPU of a GPU model as the topology's `gpu:` names it (datasheet capacity, taken in
// GiB: an "80 GB" H100 reports 81,559 MiB), for the common part of each model (a100: the
// 80 GB part, v100: 32 GB); nullopt for a generation name or an unknown model.
[[nodiscard]] std::optional<Bytes> gpu_memory_of(std::string_view model);

}  // namespace gradsync
