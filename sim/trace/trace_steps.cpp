// A DDP training step read out of a profiler trace (trace_steps.hpp).
#include "trace_steps.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "gradsync/units/config_error.hpp"

namespace gradsync::detail {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

bool is_allreduce_kernel(const TraceEvent& e) {
  if (e.cat != "kernel") return false;
  if (starts_with(e.name, "ncclDevKernel_AllReduce") || starts_with(e.name, "ncclKernel_AllReduce"))
    return true;
  return (starts_with(e.name, "ncclDevKernel_") || starts_with(e.name, "ncclKernel_")) &&
         e.collective == "allreduce";
}

double mean(const std::vector<double>& v) {
  return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

namespace {

constexpr std::string_view kWrapper = "autograd::engine::evaluate_function: ";

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

// Forward time per layer: a forward op and the backward function autograd made for it carry
// the same sequence number, so each forward op with one belongs to the layer whose backward
// stretch holds that function. The forward, from its start to the first backward function,
// is cut at each such op's start; a piece goes to the layer of the op that opens it (the
// piece before the first one to that op's layer), so the layers' forward adds up to the
// step's. Without sequence numbers (the legacy format) nothing is assigned.
void assign_forward(StepFacts& f, const Events& main_sorted, double from, double to) {
  std::unordered_map<std::int64_t, std::size_t> layer_of;
  for (std::size_t i = 0; i < f.layers.size(); ++i)
    for (std::int64_t s : f.layers[i].sequences) layer_of.emplace(s, i);
  std::vector<std::pair<double, std::size_t>> marks;  // (op start, layer)
  for (const TraceEvent* e : main_sorted) {
    if (!e->sequence || e->ts_us < from || e->ts_us >= to) continue;
    const auto it = layer_of.find(*e->sequence);
    if (it != layer_of.end()) marks.emplace_back(e->ts_us, it->second);
  }
  if (marks.empty()) return;
  f.forward_lead = marks.front().first - from;
  for (std::size_t k = 0; k < marks.size(); ++k) {
    const double start = k == 0 ? from : marks[k].first;
    const double end = k + 1 < marks.size() ? marks[k + 1].first : to;
    f.layers[marks[k].second].forward += end - start;
  }
  f.forward_by_layer = true;
}

std::string short_name(std::string_view n) {
  if (starts_with(n, kWrapper)) n.remove_prefix(kWrapper.size());
  if (starts_with(n, "torch::autograd::")) n.remove_prefix(17);
  return std::string(n);
}

}  // namespace

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
    if (e->sequence) current.sequences.push_back(*e->sequence);
  }
  if (!current.grads.empty()) close_layer(current.grads.back()->end_us());
  if (f.layers.empty()) {
    why = "no gradients (AccumulateGrad) in the backward";
    return std::nullopt;
  }
  f.layers.back().backward += bwd_end - layer_from;  // backward after the last gradient
  f.layers.back().sequences.insert(f.layers.back().sequences.end(), current.sequences.begin(),
                                   current.sequences.end());
  assign_forward(f, all, fwd->ts_us, bwd_start);

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

}  // namespace gradsync::detail
