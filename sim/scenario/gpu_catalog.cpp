// GPU datasheet figures (gpu_catalog.hpp).
#include "gradsync/scenario/gpu_catalog.hpp"

#include <array>

namespace gradsync {
namespace {

// Dense tensor-core peaks (the datasheets' "with sparsity" figures halved) and bandwidth. Where
// one name covers SXM and PCIe boards the SXM figures are given (the boards the shipped
// multi-GPU servers hold); give compute.tflops for another board.
constexpr std::array<GpuSpec, 8> kGpus{{
    {"v100", 0, 125, 0, 0, 0.9, "NVIDIA V100 datasheet (SXM2: 125 TFLOP/s fp16 tensor, 900 GB/s)"},
    {"a100", 312, 312, 0, 156, 2.039,
     "NVIDIA A100 datasheet (SXM4 80GB: 312 bf16/fp16, 156 TF32 dense, 2,039 GB/s)"},
    {"h100", 989.4, 989.4, 1978.9, 494.7, 3.35,
     "NVIDIA H100 datasheet (SXM5: 1,979 bf16 and 3,958 fp8 with sparsity, 3.35 TB/s)"},
    {"h200", 989.4, 989.4, 1978.9, 494.7, 4.8,
     "NVIDIA H200 datasheet (SXM: H100's tensor cores, 4.8 TB/s HBM3e)"},
    {"b200", 2250, 2250, 4500, 1100, 8.0,
     "NVIDIA DGX B200 datasheet, per GPU (72 PFLOP/s fp8 training for 8 GPUs with sparsity; 64 "
     "TB/s HBM3e for 8)"},
    {"gb200", 2500, 2500, 5000, 1250, 8.0,
     "NVIDIA GB200 NVL72 datasheet, per GPU (360 PFLOP/s dense fp8 and 576 TB/s for 72 GPUs)"},
    {"l40s", 362.05, 362.05, 733, 183, 0.864,
     "NVIDIA L40S datasheet (733 bf16 and 1,466 fp8 with sparsity, 864 GB/s)"},
    {"rtx4090", 165.2, 165.2, 330.3, 82.6, 1.008,
     "NVIDIA Ada Lovelace architecture whitepaper, Table 2 (RTX 4090, FP32 accumulate; 1,008 GB/s)"},
}};

}  // namespace

const GpuSpec* find_gpu(std::string_view name) {
  for (const GpuSpec& g : kGpus)
    if (g.name == name) return &g;
  return nullptr;
}

std::optional<double> peak_flops(const GpuSpec& gpu, GradDtype dtype) {
  double tflops = 0.0;
  switch (dtype) {
    case GradDtype::Bf16: tflops = gpu.bf16_tflops; break;
    case GradDtype::Fp16: tflops = gpu.fp16_tflops; break;
    case GradDtype::Fp8: tflops = gpu.fp8_tflops; break;
    case GradDtype::Fp32: tflops = gpu.tf32_tflops; break;
  }
  if (!(tflops > 0.0)) return std::nullopt;
  return tflops * 1e12;
}

}  // namespace gradsync
