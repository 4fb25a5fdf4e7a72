// Internal to sim/config: the scenario file's schema — the keys each mapping accepts, the
// choices of its enumerations and the bounds of its numbers — shared by the section readers
// (scenario_model.cpp, scenario_sync.cpp), the --set check and the loader.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "gradsync/collective/collective.hpp"
#include "gradsync/scenario/scenario.hpp"

namespace gradsync::config {

// ---- limits and keys -----------------------------------------------------------------------

inline constexpr double kMaxParams = 1e13;        // ~50x today's largest dense models
inline constexpr long long kMaxLayers = 100'000;  // after `repeat:` expansion
inline constexpr long long kMaxTensors = 1'000'000;  // parameter tensors of model.layers, after `repeat:`
inline constexpr long long kMaxHidden = 1 << 20;
inline constexpr long long kMaxVocab = 100'000'000;
inline constexpr long long kMaxSeqLen = 10'000'000;
inline constexpr long long kMaxSteps = 10'000;
inline constexpr long long kMaxAccumulation = 1'000'000;
inline constexpr long long kMaxSamples = 1'000'000'000;
inline constexpr long long kMaxServers = 256;   // ParameterServerOptions::servers
inline constexpr long long kMaxScenarioGpus = 262'144;  // as the topology loader
inline constexpr double kMinBucketBytes = 1024.0;
inline constexpr double kMaxBucketBytes = 1099511627776.0;  // 1 TiB
// A transformer preset's `params:` may differ from its formula (SwiGLU, no biases, ...), but
// not by more than this: beyond, hidden/vocab/layers are probably wrong.
inline constexpr double kMaxPresetMismatch = 0.25;

inline const std::vector<std::string> kTopKeys{"name",     "topology", "topology_overrides",
                                        "gpus",     "model",    "compute",
                                        "training", "sync",     "parallel",
                                        "memory"};
inline const std::vector<std::string> kModelKeys{"params", "grad_dtype", "layers",         "hidden",
                                          "vocab",  "seq_len",    "tie_embeddings", "preset"};
inline const std::vector<std::string> kLayerKeys{"name",  "params", "forward", "backward",
                                          "flops", "group",  "repeat",  "tensors"};
inline const std::vector<std::string> kComputeKeys{"forward", "backward", "optimizer",
                                            "samples_per_micro_batch", "mfu", "tflops"};
inline const std::vector<std::string> kTrainingKeys{"accumulation", "steps"};
inline const std::vector<std::string> kSyncKeys{"strategy",     "algorithm", "ps",         "bucket",
                                         "first_bucket", "overlap",   "compression", "buckets"};
inline const std::vector<std::string> kBucketKeys{"bytes", "ready_at"};
inline const std::vector<std::string> kPsKeys{"servers", "placement", "hosts"};
inline const std::vector<std::string> kPsHostsKeys{"count", "nic_bandwidth"};
inline const std::vector<std::string> kParallelKeys{
    "data",     "shard_group",           "tensor",   "pipeline",
    "schedule", "virtual_stages",        "prefetch", "reshard_after_forward",
    "sync_every_micro_batch", "activation_checkpointing", "order"};
inline const std::vector<std::string> kDataModes = data_parallelism_names();
inline const std::vector<std::string> kSchedules = pipeline_schedule_names();
inline constexpr long long kMaxModelParallel = 4096;
inline constexpr long long kMaxVirtualStages = 64;
inline constexpr double kMaxGpuMemoryBytes = 1099511627776.0 * 16;  // 16 TiB
inline const std::vector<std::string> kCompressionKeys{"method", "ratio", "error_feedback", "encode_rate",
                                                "decode_rate"};

inline const std::vector<std::string> kDtypes = grad_dtype_names();
inline const std::vector<std::string> kStrategies = sync_strategy_names();
inline const std::vector<std::string> kAlgorithms = sync_algorithm_names();
inline const std::vector<std::string> kPlacements = server_placement_names();
inline const std::vector<std::string> kOverlaps = overlap_names();
inline const std::vector<std::string> kMethods = compression_method_names();

// The keys a scenario mapping accepts, by dotted path ("model.layers.#" is any list entry);
// nullptr where the scenario does not fix the keys (inline topology, overrides).
inline const std::vector<std::string>* scenario_keys_at(const std::string& path) {
  if (path.empty()) return &kTopKeys;
  if (path == "model") return &kModelKeys;
  if (path == "model.layers.#") return &kLayerKeys;
  if (path == "compute") return &kComputeKeys;
  if (path == "training") return &kTrainingKeys;
  if (path == "sync") return &kSyncKeys;
  if (path == "sync.ps") return &kPsKeys;
  if (path == "sync.ps.hosts") return &kPsHostsKeys;
  if (path == "parallel") return &kParallelKeys;
  if (path == "sync.compression") return &kCompressionKeys;
  if (path == "sync.buckets.#") return &kBucketKeys;
  return nullptr;
}

inline std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += sep;
    out += parts[i];
  }
  return out;
}

inline bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace gradsync::config
