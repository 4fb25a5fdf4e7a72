// One optimizer step of a sharded and/or tensor × pipeline layout (ParallelSpec), composed
// from simulated collective durations. Pure: the runner supplies each collective's duration
// (simulated on the engine, every concurrent group at once) through a CommTimer.
//
// Every pipeline stage runs four serial streams, in the order the framework issues work:
//   compute — per layer, forward and backward of each micro-batch in the pipeline schedule's
//             order (1F1B, GPipe, Megatron's interleaved), the tensor-parallel all-reduces of
//             a block (2 in forward, 2 in backward; Megatron-LM, Shoeybi et al. 2019 §3) inline
//             on the critical path, the optimizer at the end;
//   reduce  — the data-parallel reductions on the DP process group: DDP/ZeRO-1/2 buckets
//             (all-reduce or reduce-scatter when the bucket is ready; ZeRO-1 once per step,
//             ZeRO-2 after every micro-batch); ZeRO-3/FSDP's reduce-scatter of a unit (a layer
//             with parameters) after its backward (HSDP: then an all-reduce of the shard across
//             replicas);
//   gather  — the data-parallel all-gathers, on their own stream as FSDP's unshard stream is
//             apart from its reduce-scatter stream: ZeRO-1/2's all-gather of the updated
//             parameters after the optimizer; ZeRO-3/FSDP's all-gather of a unit before its
//             forward and again before its backward (reshard_after_forward). With prefetch a
//             unit's all-gather is issued when the previous unit's compute starts (FSDP's
//             forward/backward prefetch of one unit), else when it ends;
//   p2p     — activations sent to the next stage after each forward chunk and their gradients
//             back after each backward chunk, S/tensor per tensor rank (Narayanan et al. 2021
//             §4.1 scatter/gather).
// A task starts when its stream is free and its dependencies have ended.
//
// Collectives of different requests that overlap in time (a stage's tensor-parallel
// all-reduces inside its compute with its data-parallel reduce-scatters; pipeline sends with
// the data-parallel traffic of the stages they connect) share links. With a PairTimer, each
// overlapping pair is simulated together once; from its durations together (a', b') and
// alone (a, b), over the time o = min(a', b') both run, X progresses at the rate
// r = 1 − (x' − x)/o of its rate alone. A task whose collective runs over its interval (a
// compute task's tensor-parallel part spread over it) overlapped for o_w of that interval by
// another communicating a fraction dY of its own: a share f = Σ (1 − r)·(o_w/interval)·dY of
// its collective time is lost, so it takes alone/(1 − f). The step is rescheduled with the
// longer tasks until no task changes by 1 ns (at most kContentionRounds times): contention
// moves tasks, which changes what overlaps.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include "gradsync/collective/collective.hpp"
#include "gradsync/scenario/parallel_layout.hpp"
#include "gradsync/scenario/scenario.hpp"
#include "gradsync/scenario/step_schedule.hpp"
#include "gradsync/units/units.hpp"

namespace gradsync {

enum class CommKind { Dp, Tp, Pp };
[[nodiscard]] std::string_view to_string(CommKind kind);

// Which ranks a collective runs over (parallel_layout.hpp), all of a stage's groups at once.
enum class CommGroup {
  Data,       // every tensor rank's data-parallel group of the stage
  Shard,      // HSDP shard groups
  Replica,    // HSDP replica groups
  Tensor,     // tensor groups of the stage
  NextStage,  // point to point: every rank of the stage to its peer in stage + 1
  PrevStage,  // ... and to its peer in stage − 1 (gradients of the activations)
};

struct CommRequest {
  CommKind kind = CommKind::Dp;
  CommGroup group = CommGroup::Data;
  std::uint32_t stage = 0;
  CollectiveOp op = CollectiveOp::AllReduce;  // NextStage: Broadcast (one send)
  Bytes bytes{0.0};                           // S (nccl-tests size)
  [[nodiscard]] std::uint32_t group_ranks(const ParallelLayout& layout) const;
};
using CommTimer = std::function<Seconds(const CommRequest&)>;
// The durations of two collectives started at one instant over the network they share (each
// from the start to its own end; see Simulation::run_together).
using PairTimer =
    std::function<std::pair<Seconds, Seconds>(const CommRequest&, const CommRequest&)>;

struct CommKindStats {
  Bytes bytes_per_gpu{0.0};  // sent per GPU over the step: busbw factor × S per collective
  Seconds time{0.0};         // Σ durations on the critical stage
  Seconds exposed{0.0};      // compute waiting on this kind (the critical stage)
  std::uint32_t collectives = 0;
  Seconds contention{0.0};   // of `time`: added by collectives of other requests at once
};

struct ParallelStep {
  StepTimeline timeline;  // the critical stage's compute (no buckets)
  CommKindStats dp, tp, pp;
  // Idle compute of the critical stage with every communication free: the pipeline bubble
  // ((p−1)/(m+p−1) of the forward and backward for 1F1B over equal stages).
  Seconds bubble{0.0};
  std::uint32_t critical_stage = 0;
  Seconds compute_per_gpu{0.0};  // busy compute of the critical stage (TP comm excluded)
  // Every distinct collective the step ran, with how many times it ran over all stages (for
  // link loads).
  std::vector<std::pair<CommRequest, std::uint32_t>> uses;
};

// The step of `model` under `parallel` (not plain DDP, which compose_step() covers) with
// `accumulation` micro-batches (the pipeline's micro-batches), `layout` from make_layout().
// Compute times of `compute` are one GPU's for the whole model; a GPU runs 1/tensor of its
// stage's layers (activation checkpointing adds a forward to every backward), and the
// optimizer's time scales with the parameters the GPU updates. Throws std::invalid_argument
// for what the layout cannot run (interleaving needs accumulation a multiple of pipeline).
[[nodiscard]] ParallelStep compose_parallel_step(const ModelSpec& model, const ComputeSpec& compute,
                                                 const SyncSpec& sync, const ParallelSpec& parallel,
                                                 const ParallelLayout& layout,
                                                 std::uint32_t accumulation,
                                                 const CommTimer& timer,
                                                 const PairTimer& together = {});

}  // namespace gradsync
