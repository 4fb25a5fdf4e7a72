// A training scenario (README.md, Scenario files) as plain structs: the model as a list of layers,
// the compute of one micro-batch on one GPU, the training loop, and how gradients are synchronized.
// No YAML and no SimGrid here: the config layer fills these (scenario_loader.hpp), the pure step
// schedule consumes them (step_schedule.hpp), and the engine-driving runner simulates the
// collectives they ask for.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gradsync/units/config_error.hpp"
#include "gradsync/units/units.hpp"

namespace gradsync {

// ---- model -------------------------------------------------------------------------------

// Element type of the gradients that are synchronized (what DDP all-reduces: the parameters'
// dtype, e.g. fp32 under torch.cuda.amp, bf16 for bf16 models).
enum class GradDtype { Fp32, Fp16, Bf16, Fp8 };
[[nodiscard]] std::string_view to_string(GradDtype dtype);
[[nodiscard]] std::optional<GradDtype> grad_dtype_from_string(std::string_view text);
// Bytes per element: fp32 4, fp16 2, bf16 2, fp8 1.
[[nodiscard]] double bytes_per_element(GradDtype dtype);

// One layer in forward order. Its gradient is ready when its backward has run; backward runs
// the layers in reverse list order (a model with several encoders is listed in the order its
// forward runs them, and its backward is taken as the exact reverse).
struct LayerSpec {
  std::string name;
  double params = 0.0;    // trainable parameters (elements); 0 for parameter-free layers
  Seconds forward{0.0};   // this layer's share of one micro-batch's forward on one GPU
  Seconds backward{0.0};  // ... and of its backward
  std::string group;      // encoder / tower the layer belongs to ("" for single-tower models)
  // Elements of each parameter tensor, in the order the layer registers them (what DDP
  // buckets); they add up to `params`. Empty: the layer is one tensor of `params`.
  std::vector<double> tensors;
  // Forward FLOPs of one sample through the layer, where the model says (a preset or a
  // transformer with seq_len, a layer's `flops:`); 0 when unknown. Backward is twice.
  double flops = 0.0;
};

struct ModelSpec {
  std::vector<LayerSpec> layers;  // forward order, at least one
  GradDtype grad_dtype = GradDtype::Fp32;
  // Transformer dimensions when the scenario gives them (model.hidden, seq_len, vocab), else
  // 0: what tensor and pipeline parallelism move (activations of seq_len × hidden per sample)
  // and what activations take in memory are computed from them.
  double hidden = 0.0;
  double seq_len = 0.0;
  double vocab = 0.0;

  [[nodiscard]] double bytes_per_grad() const { return bytes_per_element(grad_dtype); }
  [[nodiscard]] double total_params() const;
  // Gradient bytes per synchronization: parameters × bytes per gradient element.
  [[nodiscard]] Bytes grad_bytes() const;
};

// ---- compute and training loop -----------------------------------------------------------

// One micro-batch on one GPU. forward/backward are the sums of the layers' times.
struct ComputeSpec {
  Seconds forward{0.0};
  Seconds backward{0.0};
  Seconds optimizer{0.0};  // once per optimizer step, after the gradients are synced
  std::uint32_t samples_per_micro_batch = 1;
};

struct TrainingSpec {
  std::uint32_t accumulation = 1;  // micro-batches per optimizer step; gradients sync once per step
  std::uint32_t steps = 1;         // optimizer steps to simulate
};

// ---- synchronization ---------------------------------------------------------------------

enum class SyncStrategy {
  AllReduce,             // every GPU all-reduces the gradients, then runs the optimizer
  ParameterServer,       // push gradients to k servers, pull parameters back (synchronous)
  AsyncParameterServer,  // push, and start the next step without waiting for the pull
};
// AllReduce only. Nvls: NVLink SHARP, the NVSwitch reduces (one NVSwitch domain, Hopper or later);
// NvlsTree: NVLS in every server and trees of servers between them (NCCL's NVLSTree).
enum class SyncAlgorithm { Auto, Ring, Tree, Hierarchical, Nvls, NvlsTree, CollNetChain, CollNetDirect };
enum class Overlap {
  None,       // every collective starts after backward has finished
  Bucketed,   // DDP: a bucket's collective starts when its last gradient is ready
  Layerwise,  // one collective per layer, started as the layer's gradients are ready
};
enum class CompressionMethod { None, Int8, Fp8, Int4, TopK };

[[nodiscard]] std::string_view to_string(SyncStrategy strategy);
[[nodiscard]] std::string_view to_string(SyncAlgorithm algorithm);
[[nodiscard]] std::string_view to_string(Overlap overlap);
[[nodiscard]] std::string_view to_string(CompressionMethod method);
[[nodiscard]] std::optional<SyncStrategy> sync_strategy_from_string(std::string_view text);
[[nodiscard]] std::optional<SyncAlgorithm> sync_algorithm_from_string(std::string_view text);
// Every spelling each *_from_string() accepts, in a fixed order (the loader's choice lists and
// error messages read these, so a new value is one table row in scenario.cpp).
[[nodiscard]] std::vector<std::string> sync_algorithm_names();
[[nodiscard]] std::vector<std::string> grad_dtype_names();
[[nodiscard]] std::vector<std::string> sync_strategy_names();
[[nodiscard]] std::vector<std::string> overlap_names();
[[nodiscard]] std::vector<std::string> compression_method_names();
[[nodiscard]] std::vector<std::string> data_parallelism_names();
[[nodiscard]] std::vector<std::string> pipeline_schedule_names();
[[nodiscard]] std::optional<Overlap> overlap_from_string(std::string_view text);
[[nodiscard]] std::optional<CompressionMethod> compression_method_from_string(
    std::string_view text);

enum class PsPlacement { Dedicated, Colocated };  // as ServerPlacement in collective.hpp

// sync.ps.hosts: the servers on CPU hosts of their own, each with one NIC on the network
// (server_hosts.hpp); every GPU then trains.
struct PsHostsSpec {
  std::uint32_t count = 1;  // hosts, one server each
  std::optional<BytesPerSecond> nic_bandwidth;  // empty: the GPU servers' NIC rate
  SourceMark origin;        // the `hosts:` value, for errors about the topology
};

struct PsSpec {
  std::uint32_t servers = 1;  // k, 1..256
  PsPlacement placement = PsPlacement::Dedicated;
  std::optional<PsHostsSpec> hosts;
};

struct CompressionSpec {
  CompressionMethod method = CompressionMethod::None;
  double ratio = 1.0;           // topk: share of elements kept, in (0, 1]
  bool error_feedback = false;  // keep the compression error and add it to the next gradient
  // Codec kernel throughput: bytes of input consumed per second (encode: the dense gradient;
  // decode: the bytes received). Unset = free, an optimistic bound.
  std::optional<BytesPerSecond> encode_rate;
  std::optional<BytesPerSecond> decode_rate;
};

// PyTorch DDP defaults (torch.nn.parallel.DistributedDataParallel: bucket_cap_mb=25,
// dist._DEFAULT_FIRST_BUCKET_BYTES = 1 MiB).
inline constexpr Bytes kDdpBucketBytes{25.0 * 1048576.0};
inline constexpr Bytes kDdpFirstBucketBytes{1048576.0};

// A gradient bucket given as it was measured (a profiler trace, `gradsync import-trace`):
// its bytes and when its last gradient was ready, from the start of the micro-batch's backward.
struct ExplicitBucket {
  Bytes bytes{0.0};
  Seconds ready_at{0.0};
};

struct SyncSpec {
  SyncStrategy strategy = SyncStrategy::AllReduce;
  SyncAlgorithm algorithm = SyncAlgorithm::Auto;
  PsSpec ps;
  Bytes bucket = kDdpBucketBytes;
  Bytes first_bucket = kDdpFirstBucketBytes;
  Overlap overlap = Overlap::Bucketed;
  CompressionSpec compression;
  // sync.buckets: when given, these replace DDP's bucket rule (bucket/first_bucket), in order.
  std::vector<ExplicitBucket> buckets;
};

// ---- parallel layout ---------------------------------------------------------------------

// How the data-parallel replicas hold the model (ZeRO, Rajbhandari et al. 2020; PyTorch FSDP):
// Ddp every GPU holds everything and all-reduces the gradients; Zero1 shards the optimizer
// states (reduce-scatter of gradients, all-gather of the updated parameters); Zero2 also the
// gradients; Zero3 / Fsdp also the parameters (all-gathered per unit before its forward and
// backward); Hsdp is FSDP's HYBRID_SHARD: Zero3 inside a shard group, replicas all-reduce.
enum class DataParallelism { Ddp, Zero1, Zero2, Zero3, Fsdp, Hsdp };
enum class PipelineSchedule { OneFOneB, GPipe, Interleaved };
// The three dimensions of a layout's rank order (ParallelSpec::order).
enum class ParallelDim { Tensor, Data, Pipeline };
// "tp-dp-pp" and the other permutations of tp, dp, pp (innermost first).
[[nodiscard]] std::string to_string(const std::array<ParallelDim, 3>& order);
[[nodiscard]] std::optional<std::array<ParallelDim, 3>> parallel_order_from_string(
    std::string_view text);
[[nodiscard]] std::string_view to_string(DataParallelism data);
[[nodiscard]] std::string_view to_string(PipelineSchedule schedule);
[[nodiscard]] std::optional<DataParallelism> data_parallelism_from_string(std::string_view text);
[[nodiscard]] std::optional<PipelineSchedule> pipeline_schedule_from_string(std::string_view text);
// Zero3, Fsdp and Hsdp: parameters are sharded and gathered per unit.
[[nodiscard]] bool shards_parameters(DataParallelism data);

struct ParallelSpec {
  DataParallelism data = DataParallelism::Ddp;
  std::uint32_t shard_group = 0;  // hsdp: GPUs per shard group; 0 = GPUs per server / tensor
  std::uint32_t tensor = 1;       // tensor-parallel degree (Megatron-LM), innermost ranks
  std::uint32_t pipeline = 1;     // pipeline stages, outermost ranks
  // Rank order, innermost first (Megatron-LM's --order spelling "tp-dp-pp"): the default puts
  // tensor groups on consecutive ranks (one server), then data, then pipeline.
  std::array<ParallelDim, 3> order{ParallelDim::Tensor, ParallelDim::Data, ParallelDim::Pipeline};
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
  std::uint32_t virtual_stages = 1;  // interleaved: model chunks per stage
  bool prefetch = true;              // zero3/fsdp: all-gather of the next unit overlaps
  bool reshard_after_forward = true;  // zero3/fsdp: gather again before backward
  // Gradient accumulation: reduce(-scatter) after every micro-batch (FSDP2's default, and
  // what ZeRO-2 does), or keep unsharded gradients and sync once (ZeRO-1 always does).
  bool sync_every_micro_batch = true;
  bool activation_checkpointing = false;  // keep each block's input; recompute in backward

  [[nodiscard]] bool plain() const {
    return data == DataParallelism::Ddp && tensor == 1 && pipeline == 1;
  }
};

// ---- the scenario ------------------------------------------------------------------------

struct TopologySource {
  // The topology file (resolved against the scenario file's folder), or the scenario file
  // itself when the topology is an inline mapping.
  std::filesystem::path path;
  bool inline_mapping = false;
};

struct Scenario {
  std::string name;
  std::filesystem::path file;  // the scenario file
  TopologySource topology;
  // Applied to the topology before it was expanded, in order, as "dotted.key=value"
  // (the scenario's topology_overrides:, then --set topology_overrides.*).
  std::vector<std::string> topology_overrides;
  std::vector<std::string> sets;      // the --set overrides applied to the scenario
  std::optional<std::uint32_t> gpus;  // use the first N GPUs (default: all)
  ModelSpec model;
  ComputeSpec compute;
  TrainingSpec training;
  SyncSpec sync;
  ParallelSpec parallel;
  std::optional<Bytes> memory;  // HBM per GPU (`memory:`); default: the topology's gpu:
  // What the loader set aside, for reports: keys of the file that a --set made inapplicable
  // (parallel.prefetch when --set parallel.data=ddp), with why.
  std::vector<std::string> notes;
};

// Data-parallel ranks (workers) among `gpus` GPUs: dedicated parameter servers take
// ps.servers GPUs (spread over the machines: spread_dedicated_servers in rank_placement.hpp), so they
// are not workers; servers on hosts of their own (ps.hosts) take none.
[[nodiscard]] std::uint32_t data_parallel_ranks(std::uint32_t gpus, const SyncSpec& sync);

}  // namespace gradsync
