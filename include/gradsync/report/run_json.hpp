// The keys of `gradsync run --json` that other commands read back (docs/reference.md lists
// them all): written by run_result_json() (run_report.hpp), read by advise (its what-if
// outcomes), sweep's regression gate and report. One spelling each, here; a test compares them
// with a real run's output (cli: run --json has every key its readers use).
#pragma once

namespace gradsync::run_json {

inline constexpr const char* kGpus = "gpus";
inline constexpr const char* kNodes = "nodes";
inline constexpr const char* kStepTime = "step_time_s";
inline constexpr const char* kComputeTime = "compute_time_s";
inline constexpr const char* kCommTime = "comm_time_s";
inline constexpr const char* kExposedComm = "exposed_comm_s";
inline constexpr const char* kSamplesPerS = "samples_per_s";
inline constexpr const char* kGradBytes = "grad_bytes_per_sync";
inline constexpr const char* kWireBytes = "wire_bytes_per_sync";
inline constexpr const char* kBottleneck = "bottleneck";  // {link, ...}
inline constexpr const char* kBottleneckLink = "link";
inline constexpr const char* kVerdict = "verdict";
inline constexpr const char* kMemoryPerGpu = "memory_per_gpu_bytes";  // {..., total}
inline constexpr const char* kMemoryTotal = "total";
inline constexpr const char* kGpuMemory = "gpu_memory_bytes";
inline constexpr const char* kFitsInMemory = "fits_in_memory";
inline constexpr const char* kClusterCost = "cluster_cost";
inline constexpr const char* kCostPerHour = "cost_per_hour";
inline constexpr const char* kCostPerSample = "cost_per_sample";

}  // namespace gradsync::run_json
