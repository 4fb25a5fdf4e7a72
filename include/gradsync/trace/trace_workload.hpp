// What one rank's PyTorch profiler trace says about a data-parallel (DDP) training step, as
// gradsync replays it: compute per backward stretch ("layer"), forward and optimizer time, and
// the gradient buckets — their sizes, when each was launched, how long each all-reduce took.
// Pure functions of a ProfilerTrace; `gradsync import-trace` writes the result as a scenario.
//
// Event names read (main thread = the thread of the ProfilerStep#N spans, else of
// DistributedDataParallel.forward):
//   steps      ProfilerStep#N (cat user_annotation in Kineto), else one step from each
//              DistributedDataParallel.forward to the next
//   forward    DistributedDataParallel.forward start → first backward function (includes the loss);
//              per layer through "Sequence number" (Kineto): a forward op belongs to the layer
//              whose backward holds the function with its sequence number (the fwdbwd link)
//   backward   "autograd::engine::evaluate_function: X" spans (bare XBackward0 /
//              torch::autograd::AccumulateGrad where a trace has no such wrappers)
//   gradients  AccumulateGrad: one parameter tensor's gradient ready; its "Input Dims"
//              (record_shapes=True) give the tensor's elements
//   buckets    c10d::allreduce_ on the main thread: DDP launches a bucket; record_param_comms
//              inside it (torch 2.x) gives "In msg nelems", "dtype", "Group size"
//   measured   the all-reduce's execution: NCCL kernels (cat kernel, ncclDevKernel_AllReduce* /
//              ncclKernel_AllReduce*) or gloo:all_reduce on gloo's threads, matched in order
//   optimizer  Optimizer.step#… and Optimizer.zero_grad#… spans
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gradsync/trace/profiler_trace.hpp"
#include "gradsync/scenario/scenario.hpp"

namespace gradsync {

struct TraceImportOptions {
  std::optional<std::uint32_t> world_size;  // when the trace does not say (legacy format)
  std::optional<GradDtype> grad_dtype;      // when the trace does not say
  // The model's parameter tensors in the order DDP's backward produces their gradients (its
  // layers in reverse, each layer's tensors in reverse registration order), in elements: the
  // sizes when the trace has none (legacy format, or Kineto without record_shapes).
  std::vector<double> model_tensors;
};

// A stretch of backward that ends when one or more gradients are ready.
struct TraceLayer {
  std::string name;             // its longest backward function, e.g. "AddmmBackward0"
  std::vector<double> tensors;  // elements of the gradients it produced, in backward order
  double backward_us = 0.0;     // mean over the steps
  // Its forward ops' time (mean), where the trace links forward ops to backward functions
  // (Kineto's "Sequence number"); unset in the legacy format.
  std::optional<double> forward_us;
};

struct TraceBucket {
  double elements = 0.0;
  std::size_t tensors = 0;      // gradients it holds (AccumulateGrad events before its launch)
  double ready_us = 0.0;        // launch, from the start of backward (mean over the steps)
  std::optional<double> measured_us;  // the all-reduce's execution (mean), when matched
};

struct TraceWorkload {
  TraceFormat format = TraceFormat::Legacy;
  std::vector<std::string> steps;  // names of the steps averaged ("ProfilerStep#2", …)
  std::uint32_t world_size = 1;
  std::string world_size_source;
  GradDtype grad_dtype = GradDtype::Fp32;
  std::string dtype_source;
  std::string size_source;      // where the bucket sizes come from
  std::string tensor_source;    // where the gradients' (the layers' tensors) sizes come from
  std::string measured_source;  // the events timed as the all-reduces ("" when none)
  double step_us = 0.0;         // means over the steps
  double forward_us = 0.0;
  std::string forward_source;   // how the forward is shared among the layers
  double backward_us = 0.0;
  double wait_us = 0.0;         // backward end → optimizer: waiting for the last all-reduces
  double optimizer_us = 0.0;    // step + zero_grad
  double other_us = 0.0;        // the rest of the step (data loading, logging, …)
  std::vector<TraceLayer> layers;    // backward order
  std::vector<TraceBucket> buckets;  // launch order
  std::vector<std::string> notes;    // what was assumed or set aside
  [[nodiscard]] double total_elements() const;
};

// Throws ConfigError at the trace's position when no DDP step can be found, when the sizes
// are unknown and options give none, or when options contradict the trace.
[[nodiscard]] TraceWorkload analyze_ddp_trace(const ProfilerTrace& trace,
                                              const TraceImportOptions& options);

// GradDtype of a torch dtype name as traces write it ("Float", "BFloat16", "Half",
// "Float8_e4m3fn", …); nullopt for the others.
[[nodiscard]] std::optional<GradDtype> grad_dtype_from_torch(const std::string& dtype);

}  // namespace gradsync
