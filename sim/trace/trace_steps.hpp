// A DDP training step read out of a profiler trace (trace_workload.cpp averages the steps):
// the step windows, each step's forward, backward per layer, optimizer and the gradient
// all-reduce launches with what they carry. Internal to analyze_ddp_trace().
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gradsync/trace/profiler_trace.hpp"

namespace gradsync::detail {

using Events = std::vector<const TraceEvent*>;

struct StepWindow {
  std::string name;
  double from = 0.0, to = 0.0;
  const TraceEvent* at = nullptr;
};

// What one step shows, before averaging.
struct StepFacts {
  std::string name;
  double step = 0, forward = 0, backward = 0, wait = 0, optimizer = 0;
  struct Layer {
    std::string name;
    std::vector<const TraceEvent*> grads;
    std::vector<double> elements;  // of each gradient, from Input Dims (0: unknown)
    std::vector<std::int64_t> sequences;  // of its backward functions (Kineto)
    double backward = 0;
    double forward = 0;  // when forward_by_layer
  };
  std::vector<Layer> layers;
  // Forward time given to layers through the forward ops' sequence numbers (Kineto).
  bool forward_by_layer = false;
  double forward_lead = 0;  // forward before the first such op (DDP's own pre-forward work)
  struct Launch {
    const TraceEvent* call = nullptr;
    const TraceEvent* comms = nullptr;  // record_param_comms inside it
    std::size_t grads = 0;
    std::vector<const TraceEvent*> grad_events;
    double ready = 0;
    std::optional<double> measured;
  };
  std::vector<Launch> launches;
  [[nodiscard]] std::vector<std::size_t> shape() const {
    std::vector<std::size_t> s;
    for (const auto& l : layers) s.push_back(l.grads.size());
    s.push_back(0);
    for (const auto& l : launches) s.push_back(l.grads);
    return s;
  }
};

[[nodiscard]] bool starts_with(std::string_view s, std::string_view p);
// A NCCL AllReduce kernel on a GPU stream (ncclDevKernel_* / ncclKernel_*).
[[nodiscard]] bool is_allreduce_kernel(const TraceEvent& e);

// The training steps of a trace: ProfilerStep#N spans, else the windows between repeated
// DistributedDataParallel.forward spans; `main_thread` is set to their thread.
[[nodiscard]] std::vector<StepWindow> find_steps(const ProfilerTrace& t, std::string& main_thread);

// One step's facts, or nullopt (with why) when the step is not a DDP training step.
[[nodiscard]] std::optional<StepFacts> read_step(const ProfilerTrace& t,
                                                 const std::string& main_thread,
                                                 const StepWindow& w, const Events& comm_exec,
                                                 std::string& why);

[[nodiscard]] double mean(const std::vector<double>& v);

}  // namespace gradsync::detail
