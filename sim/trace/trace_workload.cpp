// DDP training steps out of a profiler trace (trace_workload.hpp has the event names read).
#include "gradsync/trace/trace_workload.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <string_view>

#include <fmt/format.h>

#include "trace_steps.hpp"

namespace gradsync {
namespace {

using detail::Events;
using detail::find_steps;
using detail::is_allreduce_kernel;
using detail::mean;
using detail::read_step;
using detail::starts_with;
using detail::StepFacts;
using detail::StepWindow;

}  // namespace

double TraceWorkload::total_elements() const {
  double s = 0.0;
  for (const TraceBucket& b : buckets) s += b.elements;
  return s;
}

std::optional<GradDtype> grad_dtype_from_torch(const std::string& dtype) {
  if (dtype == "Float" || dtype == "float" || dtype == "float32") return GradDtype::Fp32;
  if (dtype == "BFloat16" || dtype == "bfloat16") return GradDtype::Bf16;
  if (dtype == "Half" || dtype == "float16") return GradDtype::Fp16;
  if (starts_with(dtype, "Float8_")) return GradDtype::Fp8;
  return std::nullopt;
}

TraceWorkload analyze_ddp_trace(const ProfilerTrace& t, const TraceImportOptions& options) {
  std::string main_thread;
  const std::vector<StepWindow> windows = find_steps(t, main_thread);

  // The all-reduces' executions: NCCL kernels, else gloo's spans off the main thread.
  Events exec;
  std::string exec_source;
  for (const TraceEvent& e : t.events)
    if (is_allreduce_kernel(e)) exec.push_back(&e);
  if (!exec.empty()) {
    exec_source = "NCCL all-reduce kernels";
  } else {
    for (const TraceEvent& e : t.events)
      if (e.name == "gloo:all_reduce") exec.push_back(&e);  // recorded on gloo's threads
    if (!exec.empty()) exec_source = "gloo:all_reduce";
  }
  std::sort(exec.begin(), exec.end(),
            [](const TraceEvent* a, const TraceEvent* b) { return a->ts_us < b->ts_us; });

  std::vector<StepFacts> steps;
  std::vector<std::string> notes;
  for (const StepWindow& w : windows) {
    std::string why;
    if (auto f = read_step(t, main_thread, w, exec, why)) steps.push_back(std::move(*f));
    else notes.push_back(fmt::format("{} set aside: {}", w.name, why));
  }
  if (steps.empty())
    throw ConfigError(trace_mark(t, windows.front().at->offset),
                      fmt::format("no DDP training step in the trace ({})",
                                  notes.empty() ? "no steps" : notes.front()));
  // Steps shaped as the last one (the reducer rebuilds its buckets after the first iteration).
  const std::vector<std::size_t> shape = steps.back().shape();
  std::vector<StepFacts> kept;
  for (auto& s : steps) {
    if (s.shape() == shape) kept.push_back(std::move(s));
    else notes.push_back(fmt::format("{} set aside: its buckets or gradients differ from {}'s "
                                     "(DDP rebuilds its buckets after the first iteration)",
                                     s.name, steps.back().name));
  }
  steps = std::move(kept);
  const StepFacts& last = steps.back();

  TraceWorkload w;
  w.format = t.format;
  w.notes = notes;
  w.measured_source = exec_source;
  for (const auto& s : steps) w.steps.push_back(s.name);
  auto avg = [&](auto get) {
    std::vector<double> v;
    for (const auto& s : steps) v.push_back(get(s));
    return mean(v);
  };
  w.step_us = avg([](const StepFacts& s) { return s.step; });
  w.forward_us = avg([](const StepFacts& s) { return s.forward; });
  w.backward_us = avg([](const StepFacts& s) { return s.backward; });
  w.wait_us = avg([](const StepFacts& s) { return s.wait; });
  w.optimizer_us = avg([](const StepFacts& s) { return s.optimizer; });
  w.other_us = std::max(0.0, w.step_us - w.forward_us - w.backward_us - w.wait_us - w.optimizer_us);

  // World size and dtype.
  const TraceEvent* comms = last.launches.front().comms;
  if (comms && comms->group_size) {
    w.world_size = *comms->group_size;
    w.world_size_source = "Group size of record_param_comms";
  } else if (t.world_size) {
    w.world_size = *t.world_size;
    w.world_size_source = "distributedInfo.world_size";
  } else if (options.world_size) {
    w.world_size = *options.world_size;
    w.world_size_source = "--world-size (the trace does not say)";
  } else {
    throw ConfigError(SourceMark{t.file, 1, 1},
                      "the trace does not say how many ranks took part (no Group size, no "
                      "distributedInfo): give --world-size");
  }
  if (options.world_size && *options.world_size != w.world_size)
    throw ConfigError(SourceMark{t.file, 1, 1},
                      fmt::format("--world-size {} contradicts the trace ({} from its {})",
                                  *options.world_size, w.world_size, w.world_size_source));
  if (comms && !comms->dtype.empty()) {
    const auto d = grad_dtype_from_torch(comms->dtype);
    if (!d)
      throw ConfigError(trace_mark(t, comms->offset),
                        fmt::format("the all-reduces move dtype '{}'; gradsync models fp32, "
                                    "bf16, fp16 and fp8 gradients", comms->dtype));
    w.grad_dtype = *d;
    w.dtype_source = fmt::format("dtype {} of record_param_comms", comms->dtype);
  } else if (options.grad_dtype) {
    w.grad_dtype = *options.grad_dtype;
    w.dtype_source = "--grad-dtype (the trace does not say)";
  } else {
    w.grad_dtype = GradDtype::Fp32;
    w.dtype_source = "assumed: the trace does not say (give --grad-dtype)";
  }

  // Sizes: of the gradients (AccumulateGrad's Input Dims or the model), of the buckets
  // (record_param_comms, c10d::allreduce_'s Input Dims, or their gradients).
  std::size_t grad_count = 0;
  for (const auto& l : last.layers) grad_count += l.grads.size();
  std::vector<double> tensor_sizes;
  bool dims = true;
  for (const auto& l : last.layers)
    for (double n : l.elements) {
      if (!(n > 0.0)) dims = false;
      else tensor_sizes.push_back(n);
    }
  std::string tensor_source;
  if (dims) {
    tensor_source = "Input Dims of AccumulateGrad";
  } else if (!options.model_tensors.empty()) {
    if (options.model_tensors.size() != grad_count)
      throw ConfigError(SourceMark{t.file, 1, 1},
                        fmt::format("the trace's backward produced {} gradients per step "
                                    "(AccumulateGrad events) and --model has {} parameter "
                                    "tensors: is it the model that was traced?",
                                    grad_count, options.model_tensors.size()));
    tensor_sizes = options.model_tensors;
    tensor_source = "--model's tensors, in backward order";
  } else {
    tensor_sizes.clear();
  }
  std::vector<double> bucket_sizes;
  bool comm_sizes = true;
  for (const auto& l : last.launches) {
    if (l.comms && l.comms->in_nelems && *l.comms->in_nelems > 0.0)
      bucket_sizes.push_back(*l.comms->in_nelems);
    else if (!l.call->input_elements.empty() && l.call->input_elements.front() > 0.0)
      bucket_sizes.push_back(l.call->input_elements.front());
    else
      comm_sizes = false;
  }
  if (!comm_sizes) bucket_sizes.clear();
  if (tensor_sizes.empty() && bucket_sizes.empty())
    throw ConfigError(
        SourceMark{t.file, 1, 1},
        fmt::format("the trace records no sizes ({}: no \"In msg nelems\", no \"Input Dims\"); "
                    "give --model (a preset or a scenario file of the traced model) so its "
                    "parameter tensors size the buckets",
                    t.format == TraceFormat::Legacy ? "the legacy format of torch without Kineto"
                                                     : "profiled without record_shapes=True"));
  // Buckets from gradient sizes where the launches do not carry them.
  std::vector<double> from_tensors;
  if (!tensor_sizes.empty()) {
    std::size_t k = 0;
    for (const auto& l : last.launches) {
      double s = 0.0;
      for (std::size_t i = 0; i < l.grads; ++i) s += tensor_sizes[k++];
      from_tensors.push_back(s);
    }
  }
  if (bucket_sizes.empty()) {
    bucket_sizes = from_tensors;
    w.size_source = tensor_source + ", summed per bucket (the gradients made ready before each launch)";
  } else {
    w.size_source = comms ? "In msg nelems of record_param_comms" : "Input Dims of c10d::allreduce_";
    if (!from_tensors.empty()) {
      for (std::size_t i = 0; i < bucket_sizes.size(); ++i)
        if (std::abs(from_tensors[i] - bucket_sizes[i]) > 1e-3 * bucket_sizes[i]) {
          w.notes.push_back(fmt::format(
              "bucket {}: the all-reduce moves {:.0f} elements, its gradients hold {:.0f} ({}); "
              "the layers' tensors are split evenly from the bucket sizes", i,
              bucket_sizes[i], from_tensors[i], tensor_source));
          tensor_sizes.clear();
          break;
        }
    }
    if (tensor_sizes.empty()) {  // even split of each bucket over its gradients
      // In whole elements that add up to the bucket (the first `rest` tensors one more), so
      // each layer's parameters are the sum of its tensors in the scenario written.
      for (std::size_t i = 0; i < last.launches.size(); ++i) {
        const std::size_t g = last.launches[i].grads;
        if (g == 0) continue;
        const double whole = std::round(bucket_sizes[i]);
        const double base = std::floor(whole / static_cast<double>(g));
        const auto rest = static_cast<std::size_t>(whole - base * static_cast<double>(g));
        for (std::size_t j = 0; j < g; ++j) tensor_sizes.push_back(base + (j < rest ? 1.0 : 0.0));
      }
      tensor_source = "bucket sizes split evenly over their gradients (no Input Dims)";
    }
  }
  if (tensor_source.find("evenly") != std::string::npos)
    w.notes.push_back("layer parameters: " + tensor_source);
  w.tensor_source = tensor_source;

  // Layers (backward order) and buckets, averaged over the kept steps.
  const bool by_layer = std::all_of(steps.begin(), steps.end(),
                                    [](const StepFacts& s) { return s.forward_by_layer; });
  w.forward_source =
      by_layer ? "per layer: the time from each forward op to the next, given to the layer "
                 "whose backward holds the function with the op's Sequence number"
               : "shared in proportion to backward (the trace links no forward op to a "
                 "backward function: no Sequence number)";
  if (by_layer) {
    const double lead = avg([](const StepFacts& s) { return s.forward_lead; });
    if (lead > 0.05 * w.forward_us)
      w.notes.push_back(fmt::format(
          "forward: {:.3f} ms of DistributedDataParallel.forward pass before the first layer's "
          "op (DDP's pre-forward: buffer broadcast when broadcast_buffers=True, input copies); "
          "counted in the first layer's forward", lead * 1e-3));
  }
  std::size_t k = 0;
  for (std::size_t i = 0; i < last.layers.size(); ++i) {
    TraceLayer layer;
    layer.name = last.layers[i].name;
    for (std::size_t j = 0; j < last.layers[i].grads.size(); ++j)
      layer.tensors.push_back(tensor_sizes[k++]);
    layer.backward_us = avg([i](const StepFacts& s) { return s.layers[i].backward; });
    if (by_layer) layer.forward_us = avg([i](const StepFacts& s) { return s.layers[i].forward; });
    w.layers.push_back(std::move(layer));
  }
  for (std::size_t i = 0; i < last.launches.size(); ++i) {
    TraceBucket b;
    b.elements = bucket_sizes[i];
    b.tensors = last.launches[i].grads;
    b.ready_us = avg([i](const StepFacts& s) { return s.launches[i].ready; });
    const bool all_measured = std::all_of(steps.begin(), steps.end(), [i](const StepFacts& s) {
      return s.launches[i].measured.has_value();
    });
    if (all_measured)
      b.measured_us = avg([i](const StepFacts& s) { return *s.launches[i].measured; });
    w.buckets.push_back(b);
  }
  if (w.buckets.front().tensors == 0)
    w.notes.push_back("bucket 0 was launched before any gradient was ready");
  if (exec_source == "NCCL all-reduce kernels")
    w.notes.push_back("measured: a NCCL kernel runs from its launch on this rank until every rank "
                      "has joined and the data has moved, so it includes waiting for the slowest "
                      "rank's backward to reach the same bucket");
  return w;
}

}  // namespace gradsync
