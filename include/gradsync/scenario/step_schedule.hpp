// The step schedule of data-parallel training, as pure functions (no SimGrid): how a model's
// layers are laid out (presets), which gradient buckets backward fills and when, what each
// bucket puts on the wire after compression, and — given how long each bucket's collective
// took in the simulation — the timeline of one optimizer step and its metrics.
//
//   micro-batch 1 … k-1          micro-batch k (the one that syncs)
//   ┌─────┬─────────┐ … ┌─────┬──────────────────┐          ┌─────────┐
//   │ fwd │   bwd   │   │ fwd │ bwd (reverse)    │  (wait)  │optimizer│      compute stream
//   └─────┴─────────┘   └─────┴──────────────────┘          └─────────┘
//                                   ▲ready_1 ▲ready_2  ▲ready_3
//                                   ├─enc─┤  ├─enc─┤   ├─enc─┤               codec streams
//                                         ├──coll 1──┤──coll 2──┤─coll 3─┤   comm stream
//                                                    ├dec┤      ├dec┤    ├dec┤
// start_k = max(ready_k + encode_k, end_{k-1}) on one serial comm stream (PyTorch DDP's
// reducer: Li et al., "PyTorch Distributed", VLDB 2020).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gradsync/scenario/communication_rule.hpp"
#include "gradsync/collective/collective.hpp"
#include "gradsync/scenario/scenario.hpp"
#include "gradsync/units/units.hpp"

namespace gradsync {

// ---- model presets ------------------------------------------------------------------------

// A GPT/BERT-style transformer: `blocks` blocks of width `hidden`, a token embedding and an
// output head over `vocab` tokens.
struct TransformerShape {
  std::uint32_t blocks = 1;
  double hidden = 0.0;
  double vocab = 0.0;
  double seq_len = 0.0;         // tokens per sample; 0 = ignore the attention-score FLOPs
  bool tie_embeddings = false;  // the head reuses the embedding matrix (BERT, GPT-2)
};

// Parameters of one block: QKV 3h²+3h, attention output h²+h, MLP 4h²+4h and 4h²+h, two
// layer norms 4h: 12h² + 13h (Kaplan et al. 2020, "Scaling Laws for Neural Language Models",
// §2.1, counts the 12h² weights; the 13h are the biases and norms of a GPT-2 block).
[[nodiscard]] double transformer_block_params(double hidden);
// The tensors of that block in GPT-2's registration order (ln_1 weight, bias; attention QKV
// weight 3h², bias 3h; output projection h², h; ln_2 weight, bias; MLP up 4h², 4h; down 4h², h),
// each scaled by `scale` (a block resized to a model's parameter count).
[[nodiscard]] std::vector<double> transformer_block_tensors(double hidden, double scale = 1.0);
// Tensors for `params` elements known only by their count: the blocks of a GPT-3-shaped
// transformer of that size (width 128 per block, as GPT-3's 6.7B-175B models, Brown et al.
// 2020 Table 2.1: blocks = round(cbrt(params / (12·128²))), width = 128·blocks), scaled to add
// up to `params`.
[[nodiscard]] std::vector<double> synthetic_tensors(double params);
// The whole model as transformer_layers() lays it out: blocks · (12h²+13h) + vocab·h
// (embedding) + vocab·h (head, unless tied) + 2h (final norm, counted with the head).
// No learned position embeddings (RoPE models have none).
[[nodiscard]] double transformer_params(const TransformerShape& shape);

// Layers in forward order: "embedding", "block0" … "block{L-1}", "head". With `params`, the
// blocks are scaled so the total equals it (embedding and head are exact, the block formula is
// not: Llama's SwiGLU MLP and bias-free layers differ from 12h²+13h). Callers check the result
// stays positive and close (the loader rejects a formula total more than 25 % off).
//
// Compute split: total forward/backward times are shared in proportion to each layer's forward
// FLOPs per token — a block 24h² + 4·s·h (Narayanan et al. 2021, "Efficient Large-Scale
// Language Model Training on GPU Clusters Using Megatron-LM": the forward FLOPs behind their
// eq. 3, 24·B·s·h² + 4·B·s²·h per layer), the head 2·h·vocab (its matmul), the embedding 0 (a
// lookup; its backward is a scatter-add). Backward gets the same shares (≈ 2× forward for
// every matmul).
[[nodiscard]] std::vector<LayerSpec> transformer_layers(const TransformerShape& shape,
                                                        std::optional<double> params,
                                                        Seconds forward, Seconds backward);

// `count` equal layers "layer0" … sharing `params` and the compute evenly, each holding the
// synthetic_tensors() of its parameters. A `params`-only preset without `layers:` is one layer
// whose tensors become ready one after another through its backward (build_buckets), so
// buckets still overlap the backward.
[[nodiscard]] std::vector<LayerSpec> equal_layers(double params, std::uint32_t count,
                                                  Seconds forward, Seconds backward);

// Sets each layer's forward/backward to its share weights[i]/Σweights of the totals. Throws
// std::invalid_argument when the sizes differ or the weights do not sum to a positive number.
void split_compute(std::vector<LayerSpec>& layers, std::span<const double> weights, Seconds forward,
                   Seconds backward);

// ---- buckets ------------------------------------------------------------------------------

struct Bucket {
  Bytes bytes{0.0};  // gradient bytes: params × bytes per gradient element
  double params = 0.0;
  std::vector<std::size_t> layers;  // indices into ModelSpec::layers, in the order filled
  // When its last gradient is produced, measured from the start of the micro-batch's backward.
  Seconds ready_offset{0.0};
};

// DDP's buckets as its reducer rebuilds them after the first iteration (torch/csrc/distributed/
// c10d/reducer.cpp, compute_bucket_assignment_by_size over the order gradients became ready):
// parameter tensors in the order backward produces their gradients (layers in reverse, each
// layer's tensors in reverse registration order) are added to the current bucket, which
// closes as soon as it holds at least its limit — sync.first_bucket for the first, sync.bucket
// for the others — so a bucket overflows its limit by up to one tensor and a tensor larger
// than the cap closes a bucket on its own. A tensor's gradient is ready when its layer's
// backward has run through it: the layer's backward time is shared by its tensors in
// proportion to their sizes. Layers without parameters get no bucket. Overlap::Layerwise
// gives one bucket per layer at its end; Overlap::None keeps the DDP buckets (they run back to
// back after backward), so none vs bucketed isolates the effect of overlap. test/data/
// ddp_buckets holds the sizes PyTorch's DDP built for a GPT-2 model at two caps.
// sync.buckets, when given, are returned as they are (no layers; params = bytes / bytes per
// gradient element), whatever the overlap.
[[nodiscard]] std::vector<Bucket> build_buckets(const ModelSpec& model, const SyncSpec& sync);

// ---- what goes on the wire ----------------------------------------------------------------

struct BucketWire {
  CollectiveOp op = CollectiveOp::AllReduce;  // AllGather for Top-K under allreduce
  Bytes bytes{0.0};           // the collective's size S (nccl-tests "size"; AllGather: n × part)
  Bytes per_rank_bytes{0.0};  // each rank's contribution (AllReduce: = bytes)
  Seconds encode{0.0};        // before the collective
  Seconds decode{0.0};        // after it
};

struct SyncPlan {
  std::vector<BucketWire> buckets;  // one per Bucket, same order
  Bytes grad_bytes{0.0};            // dense gradient bytes, all buckets
  Bytes wire_bytes{0.0};            // Σ BucketWire::bytes
  Bytes error_feedback_bytes{0.0};  // residual buffers each GPU keeps (error feedback)
  std::vector<std::string> notes;   // what the compression really does, for reports
};

// Compressed sizes: int8 and fp8 1 byte per element, int4 0.5 (scales per block of elements
// are not counted, ~1 %); a method that does not shrink the gradient dtype sends it as is.
// Quantized buckets stay AllReduces (re-quantization at each reduction hop is folded into the
// codec cost). Top-K keeps k = ceil(ratio · elements) (index, value) pairs per rank: a 4-byte
// index plus the gradient dtype's value. Pairs cannot be summed in a ring, so under allreduce
// the bucket becomes an AllGather of n·k pairs (S = n · k · pair bytes): each rank receives
// (n−1)·k pairs, n·ratio·(pair/element)/2 of the 2(n−1)/n·dense bytes a ring AllReduce moves per
// rank — not `ratio`, and more than dense once n·ratio·pair/element > 2. Under ps/async-ps the
// servers sum the sparse pushes and return the top-k of the sum (global top-k), so push and
// pull carry k pairs.
// Codec time: encode = dense bytes × (1 + 2·error_feedback) / encode_rate (error feedback reads
// and writes a residual as large as the gradient); decode = bytes received / decode_rate.
// `ranks` = data-parallel ranks (workers).
[[nodiscard]] SyncPlan plan_sync(std::span<const Bucket> buckets, const ModelSpec& model,
                                 const SyncSpec& sync, std::uint32_t ranks);

// ---- one optimizer step -------------------------------------------------------------------

struct StepOptions {
  Overlap overlap = Overlap::Bucketed;
  std::uint32_t accumulation = 1;
  bool asynchronous = false;  // async-ps: the worker never waits for the pull
};
[[nodiscard]] StepOptions step_options(const Scenario& scenario);

enum class ComputePhase { Forward, Backward, Optimizer };
[[nodiscard]] std::string_view to_string(ComputePhase phase);

struct ComputeInterval {
  ComputePhase phase = ComputePhase::Forward;
  std::uint32_t micro_batch = 0;
  Seconds start{0.0};
  Seconds end{0.0};
};

// Times from the start of the step.
struct BucketInterval {
  std::size_t bucket = 0;
  Seconds ready{0.0};  // last gradient produced
  Seconds encode_start{0.0}, encode_end{0.0};
  Seconds start{0.0}, end{0.0};  // the collective, on the serial comm stream
  Seconds decode_start{0.0}, decode_end{0.0};
};

struct StepTimeline {
  // Period of one optimizer step: compute_time + exposed_comm.
  Seconds step_time{0.0};
  // Busy time of the compute stream: accumulation × (forward + backward) + optimizer. Under
  // async-ps the servers apply the update, so the worker's step has no optimizer.
  Seconds compute_time{0.0};
  Seconds comm_time{0.0};   // Σ collective durations
  Seconds codec_time{0.0};  // Σ encode + decode
  // Time the compute stream idles waiting for synchronization (collectives and the codec work
  // they wait on): synchronous strategies max(0, sync_end − backward_end); async-ps the excess
  // of the busiest stream over the worker's compute (pushes queue up when the network is slower).
  Seconds exposed_comm{0.0};
  Seconds backward_end{0.0};  // end of the last micro-batch's backward
  Seconds sync_end{0.0};      // last gradient synced (last decode or collective end)
  // async-ps: steps a worker starts before the parameters with its own update arrive,
  // ceil((sync_end − backward_end) / step_time); 0 for synchronous strategies.
  std::uint32_t staleness_steps = 0;
  std::vector<ComputeInterval> compute;
  std::vector<BucketInterval> buckets;
};

// One optimizer step: accumulation − 1 micro-batches of forward + backward with no sync, then
// the last micro-batch, whose buckets become ready during its backward (their ready_offset);
// encode and decode each run in bucket order on their own stream beside compute (their
// contention for the GPU with backward is not modelled); collectives run in bucket order on one
// serial comm stream, start_k = max(encode_end_k, end_{k−1}); the optimizer starts when
// backward and every decode are done. Overlap::None starts the first encode/collective at the
// end of backward. `collective_times` are the simulated durations, one per bucket.
// Throws std::invalid_argument when the sizes of buckets, plan and times differ.
[[nodiscard]] StepTimeline compose_step(std::span<const Bucket> buckets, const SyncPlan& plan,
                                        std::span<const Seconds> collective_times,
                                        const ComputeSpec& compute, const StepOptions& options);

// ---- metrics ------------------------------------------------------------------------------

enum class Verdict { ComputeBound, CommunicationBound };
[[nodiscard]] std::string_view to_string(
    Verdict verdict);  // "compute-bound", "communication-bound"
[[nodiscard]] Verdict verdict_of(Seconds exposed_comm, Seconds step_time);

// samples_per_micro_batch × accumulation × data-parallel ranks.
[[nodiscard]] double samples_per_step(const ComputeSpec& compute, std::uint32_t accumulation,
                                      std::uint32_t ranks);
// One GPU training alone, no communication: samples per step / (k·(F+B) + optimizer).
[[nodiscard]] double single_gpu_samples_per_s(const ComputeSpec& compute,
                                              std::uint32_t accumulation);

struct StepMetrics {
  Seconds step_time{0.0};
  Seconds compute_time{0.0};
  Seconds comm_time{0.0};
  Seconds exposed_comm{0.0};
  double comm_compute_ratio = 0.0;  // comm_time / compute_time
  double gpu_utilization = 0.0;     // compute_time / step_time
  double samples_per_step = 0.0;
  double samples_per_s = 0.0;
  double scaling_efficiency = 0.0;  // samples_per_s / (ranks × single_gpu_samples_per_s)
  Verdict verdict = Verdict::ComputeBound;
  // async-ps: the worker's own steps ahead of its update (StepTimeline::staleness_steps), and
  // the server updates from all workers applied between the parameters a gradient was computed
  // on and that gradient's update, workers in lockstep: ranks × staleness_steps − 1 (the
  // classic n − 1 of asynchronous SGD with n equal workers). 0 for synchronous strategies.
  std::uint32_t staleness_steps = 0;
  std::uint32_t staleness_updates = 0;
};
[[nodiscard]] StepMetrics step_metrics(const StepTimeline& timeline, const ComputeSpec& compute,
                                       std::uint32_t accumulation, std::uint32_t ranks);

}  // namespace gradsync
