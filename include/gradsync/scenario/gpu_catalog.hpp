// GPUs' dense tensor-core peaks and memory bandwidth, from their datasheets, for compute
// derived from FLOPs (`compute: {mfu: 0.4}`) and the optimizer step from memory traffic.
// Capacities are gpu_memory_of() (memory_model.hpp). Pure data.
#pragma once

#include <optional>
#include <string_view>

#include "gradsync/scenario/scenario.hpp"
#include "gradsync/units/units.hpp"

namespace gradsync {

struct GpuSpec {
  std::string_view name;   // as a topology's `gpu:` names it
  double bf16_tflops = 0;  // dense (no sparsity), TFLOP/s; 0: no such tensor-core format
  double fp16_tflops = 0;
  double fp8_tflops = 0;
  double tf32_tflops = 0;  // what fp32 training runs on
  double memory_tbps = 0;  // HBM/GDDR bandwidth, TB/s
  std::string_view source;
};

[[nodiscard]] const GpuSpec* find_gpu(std::string_view name);

// The dense peak for math in `dtype` (fp32: TF32), FLOP/s; nullopt when the GPU has none.
[[nodiscard]] std::optional<double> peak_flops(const GpuSpec& gpu, GradDtype dtype);

// Bytes a fused AdamW step moves per parameter: read and write the fp32 master weight and both
// moments (24 B), read the gradient and write the 16-bit weight (4 B).
inline constexpr double kAdamBytesPerParam = 28.0;

}  // namespace gradsync
