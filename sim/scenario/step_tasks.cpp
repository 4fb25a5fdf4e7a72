// The task graph of one parallel step (step_tasks.hpp).
#include "step_tasks.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace gradsync::detail {

void TaskGraph::schedule() {
  std::vector<std::size_t> head(streams_.size(), 0);
  std::vector<double> free(streams_.size(), 0.0);
  std::vector<char> done(tasks_.size(), 0);
  std::size_t left = tasks_.size();
  while (left > 0) {
    bool progress = false;
    for (std::size_t s = 0; s < streams_.size(); ++s)
      while (head[s] < streams_[s].size()) {
        Task& t = tasks_[streams_[s][head[s]]];
        double ready = free[s];
        bool blocked = false;
        for (std::size_t d : t.deps) {
          if (!done[d]) { blocked = true; break; }
          ready = std::max(ready, tasks_[d].end);
        }
        if (blocked) break;
        t.start = ready;
        t.end = ready + (t.work + t.tp).seconds();
        free[s] = t.end;
        done[streams_[s][head[s]]] = 1;
        ++head[s];
        --left;
        progress = true;
      }
    if (!progress) throw std::logic_error("compose_parallel_step: the task graph has a cycle");
  }
}

std::vector<Item> stage_schedule(const ParallelSpec& spec, std::uint32_t s, std::uint32_t m) {
  const std::uint32_t p = spec.pipeline;
  std::vector<Item> out;
  if (spec.schedule == PipelineSchedule::Interleaved && p > 1) {
    const std::uint32_t v = spec.virtual_stages;
    const std::uint32_t total = m * v;
    auto item = [&](std::uint32_t k, bool forward) {
      const std::uint32_t in_group = k % (p * v);
      std::uint32_t local = in_group / p;
      if (!forward) local = v - 1 - local;
      return Item{forward, (k / (p * v)) * p + k % p, local * p + s};
    };
    const std::uint32_t warmup = std::min(total, (p - s - 1) * 2 + (v - 1) * p);
    for (std::uint32_t k = 0; k < warmup; ++k) out.push_back(item(k, true));
    for (std::uint32_t k = 0; k + warmup < total; ++k) {
      out.push_back(item(warmup + k, true));
      out.push_back(item(k, false));
    }
    for (std::uint32_t k = total - warmup; k < total; ++k) out.push_back(item(k, false));
    return out;
  }
  if (spec.schedule == PipelineSchedule::GPipe || p == 1) {
    for (std::uint32_t j = 0; j < m; ++j) out.push_back({true, j, s});
    for (std::uint32_t j = m; j-- > 0;) out.push_back({false, j, s});
    return out;
  }
  const std::uint32_t warmup = std::min(m, p - s - 1);
  for (std::uint32_t j = 0; j < warmup; ++j) out.push_back({true, j, s});
  for (std::uint32_t j = 0; j + warmup < m; ++j) {
    out.push_back({true, warmup + j, s});
    out.push_back({false, j, s});
  }
  for (std::uint32_t j = m - warmup; j < m; ++j) out.push_back({false, j, s});
  return out;
}

constexpr int kContentionRounds = 8;
constexpr double kMostContended = 0.99;  // at most 100× slower than alone

void add_contention(TaskGraph& g, const std::function<double(std::size_t, std::size_t)>& rate) {
  struct Activity {
    double start, end, density;
    std::size_t task, request;
  };
  std::vector<Activity> acts;
  std::vector<double> contended;  // per task: Σ (1 − r)·(o / its interval)·dY
  for (int round = 0; round < kContentionRounds; ++round) {
    acts.clear();
    for (std::size_t i = 0; i < g.size(); ++i) {
      const Task& t = g.at(i);
      if (t.request == kNone || !(t.alone.seconds() > 0.0) || !(t.end > t.start)) continue;
      const double density = t.on_compute ? t.tp.seconds() / (t.end - t.start) : 1.0;
      acts.push_back({t.start, t.end, std::min(density, 1.0), i, t.request});
    }
    std::sort(acts.begin(), acts.end(),
              [](const Activity& a, const Activity& b) { return a.start < b.start; });
    contended.assign(g.size(), 0.0);
    std::vector<const Activity*> active;
    for (const Activity& a : acts) {
      std::erase_if(active, [&](const Activity* b) { return b->end <= a.start; });
      for (const Activity* b : active) {
        if (b->request == a.request) continue;
        const double o = std::min(a.end, b->end) - a.start;
        if (!(o > 0.0)) continue;
        contended[a.task] += (1.0 - rate(a.request, b->request)) * o / (a.end - a.start) * b->density;
        contended[b->task] += (1.0 - rate(b->request, a.request)) * o / (b->end - b->start) * a.density;
      }
      active.push_back(&a);
    }
    double change = 0.0;
    for (std::size_t i = 0; i < g.size(); ++i) {
      Task& t = g.at(i);
      if (t.request == kNone) continue;
      Seconds& part = t.on_compute ? t.tp : t.work;
      // The task's collective time c = alone + contended·c where the overlaps stay as they are.
      const Seconds next = t.alone / (1.0 - std::min(contended[i], kMostContended));
      change = std::max(change, std::abs((next - part).seconds()));
      part = next;
    }
    if (change < 1e-9) return;
    g.schedule();
  }
}

}  // namespace gradsync::detail
