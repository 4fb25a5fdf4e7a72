// The task graph of one parallel step (parallel_step.cpp): tasks on each stage's serial
// streams, their list schedule, the stages' pipeline schedules and the contention between
// collectives that overlap. Internal to compose_parallel_step().
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "gradsync/scenario/parallel_step.hpp"

namespace gradsync::detail {

constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

// A stage's serial streams (parallel_step.hpp), stage s's stream k being kStreams·s + k.
constexpr std::uint32_t kStreams = 4;
constexpr std::uint32_t kCompute = 0;
constexpr std::uint32_t kGather = 1;  // data-parallel all-gathers
constexpr std::uint32_t kReduce = 2;  // data-parallel all-reduces and reduce-scatters
constexpr std::uint32_t kP2p = 3;

struct Task {
  std::uint32_t stream = 0;
  bool on_compute = true;  // a compute-stream task (layer or optimizer)
  Seconds work{0.0};       // compute (compute stream) or the collective (comm / p2p)
  Seconds tp{0.0};         // inline tensor-parallel all-reduces (compute stream)
  std::uint32_t tp_collectives = 0;
  std::size_t request = std::numeric_limits<std::size_t>::max();  // its collective's, if any
  Seconds alone{0.0};      // the collective's part (work or tp) without contention
  CommKind kind = CommKind::Dp;
  ComputePhase phase = ComputePhase::Forward;
  std::uint32_t micro_batch = 0;
  std::vector<std::size_t> deps;
  double start = 0.0, end = 0.0;
};

// Tasks on serial streams; each starts when its stream is free and its dependencies ended.
class TaskGraph {
 public:
  explicit TaskGraph(std::size_t streams) : streams_(streams) {}
  std::size_t add(Task t) {
    streams_.at(t.stream).push_back(tasks_.size());
    tasks_.push_back(std::move(t));
    return tasks_.size() - 1;
  }
  Task& at(std::size_t id) { return tasks_[id]; }
  [[nodiscard]] std::size_t size() const { return tasks_.size(); }
  [[nodiscard]] const Task& at(std::size_t id) const { return tasks_[id]; }
  [[nodiscard]] const std::vector<std::size_t>& stream(std::size_t s) const { return streams_[s]; }
  void depend(std::size_t id, std::size_t on) {
    if (on != kNone) tasks_[id].deps.push_back(on);
  }
  // List schedule: each task starts when its stream is free and its dependencies ended.
  void schedule();

 private:
  std::vector<std::vector<std::size_t>> streams_;
  std::vector<Task> tasks_;
};

// One entry of a stage's pipeline schedule: forward or backward of micro-batch `mb` through
// global chunk `chunk` (chunk c runs on stage c mod pipeline).
struct Item {
  bool forward = true;
  std::uint32_t mb = 0;
  std::uint32_t chunk = 0;
};

// Stage s's pipeline schedule of m micro-batches (GPipe, 1F1B or interleaved).
[[nodiscard]] std::vector<Item> stage_schedule(const ParallelSpec& spec, std::uint32_t s,
                                               std::uint32_t m);

// Stretches the tasks of `g` whose collectives overlap others' (parallel_step.hpp) and
// reschedules until the step settles. `rate(x, y)`: request x's rate while y runs, of alone.
void add_contention(TaskGraph& g, const std::function<double(std::size_t, std::size_t)>& rate);

}  // namespace gradsync::detail
