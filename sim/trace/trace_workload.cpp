// DDP training steps out of a profiler trace (trace_workload.hpp has the event names read).
#include "gradsync/trace_workload.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <string_view>

#include <fmt/format.h>

namespace gradsync {
namespace {

constexpr std::string_view kWrapper = "autograd::engine::evaluate_function: ";

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}
bool is_backward_name(std::string_view n) {
  // XBackward0, XBackward1, ... (autograd's generated function names)
  const auto pos = n.rfind("Backward");
  return pos != std::string_view::npos && pos + 8 < n.size() &&
         std::all_of(n.begin() + static_cast<std::ptrdiff_t>(pos + 8), n.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}
bool is_accumulate_grad(std::string_view n) { return ends_with(n, "torch::autograd::AccumulateGrad"); }
bool is_allreduce_kernel(const TraceEvent& e) {
  if (e.cat != "kernel") return false;
  if (starts_with(e.name, "ncclDevKernel_AllReduce") || starts_with(e.name, "ncclKernel_AllReduce"))
    return true;
  return (starts_with(e.name, "ncclDevKernel_") || starts_with(e.name, "ncclKernel_")) &&
         e.collective == "allreduce";
}

using Events = std::vector<const TraceEvent*>;

// Events of `thread` inside [from, to], by start (longest first at equal starts).
Events on_thread(const ProfilerTrace& t, const std::string& thread, double from, double to) {
  Events out;
  for (const TraceEvent& e : t.events)
    if (e.thread == thread && e.ts_us >= from && e.ts_us <= to) out.push_back(&e);
  std::stable_sort(out.begin(), out.end(), [](const TraceEvent* a, const TraceEvent* b) {
    return a->ts_us != b->ts_us ? a->ts_us < b->ts_us : a->dur_us > b->dur_us;
  });
  return out;
}

// Outermost events of a sorted list (those not inside an earlier one).
Events top_level(const Events& sorted) {
  Events out;
  double end = -1e300;
  for (const TraceEvent* e : sorted)
    if (e->ts_us >= end) {
      out.push_back(e);
      end = e->end_us();
    }
  return out;
}

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
    double backward = 0;
  };
  std::vector<Layer> layers;
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

std::string short_name(std::string_view n) {
  if (starts_with(n, kWrapper)) n.remove_prefix(kWrapper.size());
  if (starts_with(n, "torch::autograd::")) n.remove_prefix(17);
  return std::string(n);
}

std::vector<StepWindow> find_steps(const ProfilerTrace& t, std::string& main_thread) {
  std::vector<StepWindow> steps;
  for (const TraceEvent& e : t.events)
    if (starts_with(e.name, "ProfilerStep#")) steps.push_back({e.name, e.ts_us, e.end_us(), &e});
  if (!steps.empty()) {
    main_thread = steps.front().at->thread;
    std::erase_if(steps, [&](const StepWindow& s) { return s.at->thread != main_thread; });
  } else {
    Events fwd;
    for (const TraceEvent& e : t.events)
      if (e.name == "DistributedDataParallel.forward") fwd.push_back(&e);
    if (fwd.empty())
      throw ConfigError(
          SourceMark{t.file, 1, 1},
          "no training step found: expected ProfilerStep#N spans (torch.profiler with a "
          "schedule and prof.step()) or DistributedDataParallel.forward spans (a model wrapped "
          "in DDP)");
    main_thread = fwd.front()->thread;
    std::erase_if(fwd, [&](const TraceEvent* e) { return e->thread != main_thread; });
    std::sort(fwd.begin(), fwd.end(),
              [](const TraceEvent* a, const TraceEvent* b) { return a->ts_us < b->ts_us; });
    double last_end = 0.0;
    for (const TraceEvent& e : t.events)
      if (e.thread == main_thread) last_end = std::max(last_end, e.end_us());
    for (std::size_t i = 0; i < fwd.size(); ++i)
      steps.push_back({fmt::format("DistributedDataParallel.forward #{}", i + 1), fwd[i]->ts_us,
                       i + 1 < fwd.size() ? fwd[i + 1]->ts_us : last_end, fwd[i]});
  }
  std::sort(steps.begin(), steps.end(),
            [](const StepWindow& a, const StepWindow& b) { return a.from < b.from; });
  return steps;
}

// One step's facts, or nullopt (with why) when the step is not a DDP training step.
std::optional<StepFacts> read_step(const ProfilerTrace& t, const std::string& main_thread,
                                   const StepWindow& w, const Events& comm_exec,
                                   std::string& why) {
  Events all = on_thread(t, main_thread, w.from, w.to);
  std::erase(all, w.at);  // the ProfilerStep span itself
  const TraceEvent* fwd = nullptr;
  for (const TraceEvent* e : all)
    if (e->name == "DistributedDataParallel.forward") {
      fwd = e;
      break;
    }
  if (fwd == nullptr) {
    why = "no DistributedDataParallel.forward";
    return std::nullopt;
  }
  Events after;
  for (const TraceEvent* e : all)
    if (e->ts_us >= fwd->end_us()) after.push_back(e);
  auto has_wrappers = [](const Events& ev) {
    return std::any_of(ev.begin(), ev.end(),
                       [](const TraceEvent* e) { return starts_with(e->name, kWrapper); });
  };
  // CUDA backward runs on the autograd engine's device thread: the thread with the most
  // backward functions after the forward, where the main thread has none.
  std::string bwd_thread = main_thread;
  if (!has_wrappers(after)) {
    std::map<std::string, std::size_t> count;
    for (const TraceEvent& e : t.events)
      if (e.ts_us >= fwd->end_us() && e.ts_us <= w.to && starts_with(e.name, kWrapper))
        ++count[e.thread];
    std::size_t best = 0;
    for (const auto& [thread, n] : count)
      if (n > best) best = n, bwd_thread = thread;
    if (bwd_thread != main_thread) after = on_thread(t, bwd_thread, fwd->end_us(), w.to);
  }
  const bool wrapped = has_wrappers(after);
  Events bwd;
  for (const TraceEvent* e : top_level(after)) {
    const bool is_bwd = wrapped ? starts_with(e->name, kWrapper)
                                : is_backward_name(e->name) || is_accumulate_grad(e->name);
    if (is_bwd) bwd.push_back(e);
  }
  if (bwd.empty()) {
    why = "no backward functions after the forward";
    return std::nullopt;
  }
  StepFacts f;
  f.name = w.name;
  const double bwd_start = bwd.front()->ts_us;
  double bwd_end = bwd_start;
  for (const TraceEvent* e : bwd) bwd_end = std::max(bwd_end, e->end_us());

  // Optimizer spans after backward.
  std::optional<double> opt_start;
  for (const TraceEvent* e : top_level(all)) {
    if (starts_with(e->name, "Optimizer.step#") && e->ts_us >= bwd_start) {
      f.optimizer += e->dur_us;
      opt_start = opt_start.value_or(e->ts_us);
    } else if (starts_with(e->name, "Optimizer.zero_grad#")) {
      f.optimizer += e->dur_us;
    }
  }
  f.step = w.to - w.from;
  f.forward = bwd_start - fwd->ts_us;
  f.backward = bwd_end - bwd_start;
  f.wait = std::max(0.0, opt_start.value_or(bwd_end) - bwd_end);

  // Gradients and layers.
  Events grads;
  StepFacts::Layer current;
  double layer_from = bwd_start;
  const TraceEvent* longest = nullptr;
  auto close_layer = [&](double end) {
    current.name = longest ? short_name(longest->name) : "AccumulateGrad";
    current.backward = end - layer_from;
    layer_from = end;
    f.layers.push_back(std::move(current));
    current = StepFacts::Layer{};
    longest = nullptr;
  };
  // Kineto puts record_shapes' Input Dims on the torch::autograd::AccumulateGrad op inside
  // the evaluate_function wrapper: the elements come from the inner op where the wrapper has
  // none (0: unknown).
  auto elements_of = [&](const TraceEvent* e) {
    if (!e->input_elements.empty()) return e->input_elements.front();
    auto it = std::lower_bound(after.begin(), after.end(), e->ts_us,
                               [](const TraceEvent* x, double ts) { return x->ts_us < ts; });
    for (; it != after.end() && (*it)->ts_us <= e->end_us(); ++it)
      if (*it != e && (*it)->name == "torch::autograd::AccumulateGrad" &&
          !(*it)->input_elements.empty())
        return (*it)->input_elements.front();
    return 0.0;
  };
  for (const TraceEvent* e : bwd) {
    if (is_accumulate_grad(e->name)) {
      current.grads.push_back(e);
      current.elements.push_back(elements_of(e));
      grads.push_back(e);
      continue;
    }
    if (!current.grads.empty()) close_layer(current.grads.back()->end_us());
    if (longest == nullptr || e->dur_us > longest->dur_us) longest = e;
  }
  if (!current.grads.empty()) close_layer(current.grads.back()->end_us());
  if (f.layers.empty()) {
    why = "no gradients (AccumulateGrad) in the backward";
    return std::nullopt;
  }
  f.layers.back().backward += bwd_end - layer_from;  // backward after the last gradient

  // Launches: c10d::allreduce_ (else record_param_comms allreduce) from backward on.
  const double launch_to = opt_start.value_or(w.to);
  Events calls, comms;
  Events launch_events = all;
  if (bwd_thread != main_thread) {
    launch_events.insert(launch_events.end(), after.begin(), after.end());
    std::stable_sort(launch_events.begin(), launch_events.end(),
                     [](const TraceEvent* a, const TraceEvent* b) { return a->ts_us < b->ts_us; });
  }
  for (const TraceEvent* e : launch_events) {
    if (e->ts_us < bwd_start || e->ts_us > launch_to) continue;
    if (e->name == "c10d::allreduce_") calls.push_back(e);
    if (e->name == "record_param_comms" && e->collective == "allreduce") comms.push_back(e);
  }
  if (calls.empty()) calls = comms;
  if (calls.empty()) {
    why = "no all-reduce launched (c10d::allreduce_) during backward";
    return std::nullopt;
  }
  std::size_t g = 0, c = 0, x = 0;
  for (const TraceEvent* call : calls) {
    StepFacts::Launch l;
    l.call = call;
    while (c < comms.size() && comms[c]->ts_us < call->ts_us) ++c;
    if (c < comms.size() && comms[c]->ts_us <= call->end_us()) l.comms = comms[c];
    while (g < grads.size() && grads[g]->ts_us < call->ts_us) l.grad_events.push_back(grads[g++]);
    l.grads = l.grad_events.size();
    l.ready = call->ts_us - bwd_start;
    while (x < comm_exec.size() && comm_exec[x]->ts_us < call->ts_us - 1.0) ++x;
    if (x < comm_exec.size()) l.measured = comm_exec[x++]->dur_us;
    f.launches.push_back(std::move(l));
  }
  if (g < grads.size()) {
    why = fmt::format("{} gradients after the last all-reduce launch", grads.size() - g);
    return std::nullopt;
  }
  // DDP launches the last bucket from the hook of the last gradient (or when backward
  // finalizes): that launch is part of the backward.
  const double last_launch = f.launches.back().call->ts_us;
  if (last_launch > bwd_end) {
    const double extra = last_launch - bwd_end;
    f.backward += extra;
    f.layers.back().backward += extra;
    f.wait = std::max(0.0, f.wait - extra);
  }
  return f;
}

double mean(const std::vector<double>& v) {
  return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

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
      for (std::size_t i = 0; i < last.launches.size(); ++i)
        for (std::size_t j = 0; j < last.launches[i].grads; ++j)
          tensor_sizes.push_back(bucket_sizes[i] / static_cast<double>(last.launches[i].grads));
      tensor_source = "bucket sizes split evenly over their gradients (no Input Dims)";
    }
  }
  if (tensor_source.find("evenly") != std::string::npos)
    w.notes.push_back("layer parameters: " + tensor_source);
  w.tensor_source = tensor_source;

  // Layers (backward order) and buckets, averaged over the kept steps.
  std::size_t k = 0;
  for (std::size_t i = 0; i < last.layers.size(); ++i) {
    TraceLayer layer;
    layer.name = last.layers[i].name;
    for (std::size_t j = 0; j < last.layers[i].grads.size(); ++j)
      layer.tensors.push_back(tensor_sizes[k++]);
    layer.backward_us = avg([i](const StepFacts& s) { return s.layers[i].backward; });
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
  return w;
}

}  // namespace gradsync
