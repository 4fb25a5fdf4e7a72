// The scenario runner: simulates the collectives a training step asks for on the topology's
// SimGrid platform and composes the step timeline (step_schedule.hpp) from their durations.
//
// Collectives of one optimizer step run one after another on a serial comm stream (DDP), so
// each bucket's collective is simulated on its own and its duration is composed with the
// compute timeline; durations are cached by (operation, algorithm, size). Synchronous steps
// are identical, so the step is simulated once and repeated `training.steps` times. One
// SimGrid simulation per process: call run_scenario() at most once per process.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gradsync/engine/simulation.hpp"
#include "gradsync/scenario/memory_model.hpp"
#include "gradsync/scenario/parallel_layout.hpp"
#include "gradsync/scenario/parallel_step.hpp"
#include "gradsync/scenario/scenario.hpp"
#include "gradsync/config/scenario_loader.hpp"
#include "gradsync/scenario/step_schedule.hpp"

namespace gradsync {

struct RunOptions {
  std::vector<std::string> simgrid_args;  // e.g. "--cfg=contexts/factory:thread"
  Fidelity fidelity = Fidelity::Auto;
  // Progress of collectives that run long (Simulation::set_progress); empty: none.
  std::function<void(const RunProgress&)> progress;
};

// Load of one topology link over a step, in its busier direction.
struct LinkLoad {
  LinkId link = 0;
  std::string name;          // "n0.nic0 -> leaf0"
  Fabric fabric = Fabric::Ethernet;
  Bytes bytes{0.0};          // payload per step in the busier direction
  double utilization = 0.0;  // bytes / (effective bandwidth × step time)
};

// GPU utilization over time, as `nvidia-smi dmon` would sample it (share of each interval
// the GPU computes).
struct UtilizationSample {
  Seconds start{0.0};
  Seconds end{0.0};
  double utilization = 0.0;
};

struct ScenarioResult {
  std::string scenario_name;
  std::string topology_name;
  std::uint32_t gpus = 0;        // GPUs used
  std::uint32_t ranks = 0;       // data-parallel workers
  std::uint32_t nodes = 0;       // servers the GPUs are on
  std::uint32_t ranks_per_node = 1;  // 1 also where servers hold different numbers (node_sizes)
  // GPUs per server where they differ (12 GPUs on 8-GPU servers: 8, 4); empty otherwise.
  std::vector<std::uint32_t> node_sizes;
  std::vector<Bucket> buckets;
  SyncPlan sync_plan;
  std::vector<Seconds> collective_times;        // per bucket
  std::vector<std::string> bucket_algorithms;   // per bucket: the algorithm that ran
  StepTimeline timeline;
  StepMetrics metrics;
  // Samples/s of the first server alone (its GPUs, intra-node collectives), and the ratio
  // samples_per_s / (nodes × that): scaling efficiency versus one node (a one-node run is its
  // own reference: 1). Empty where not computed (parallel layouts across servers).
  std::optional<double> one_node_samples_per_s;
  std::optional<double> scaling_vs_one_node;
  Seconds total_time{0.0};                      // steps × step time
  std::vector<LinkLoad> busiest_links;          // highest utilization first (at most 10)
  std::vector<UtilizationSample> gpu_utilization_timeline;  // one step, 20 samples
  std::string verdict_text;                     // one line users act on
  // Memory per GPU (memory_model.hpp) against the GPU's (the scenario's memory:, else the
  // topology's gpu:; unknown: 0 and no verdict).
  MemoryBreakdown memory;
  Bytes gpu_memory{0.0};
  std::optional<bool> fits_in_memory;
  // The parallel layout and its communication by kind (plain DDP: all of it dp); the pipeline
  // bubble of the critical stage (parallel_step.hpp).
  ParallelLayout layout;
  CommKindStats comm_dp, comm_tp, comm_pp;
  Seconds bubble{0.0};
  std::vector<std::string> parallel_algorithms;  // "dp reduce-scatter (ring)", ...
};

[[nodiscard]] ScenarioResult run_scenario(const LoadedScenario& loaded,
                                          const RunOptions& options = {});

}  // namespace gradsync
