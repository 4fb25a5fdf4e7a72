// The scenario runner's part for sharded and tensor × pipeline layouts: simulates every
// collective a parallel step asks for (parallel_step.hpp) on the platform, all concurrent groups
// of one kind at once (replicate_plan), every pair of collectives whose tasks overlap together
// (Simulation::run_together), and composes the step. Internal to the runner.
#pragma once

#include <string>
#include <vector>

#include "gradsync/engine/simulation.hpp"
#include "gradsync/scenario/parallel_layout.hpp"
#include "gradsync/scenario/parallel_step.hpp"
#include "gradsync/config/scenario_loader.hpp"
#include "gradsync/scenario/scenario_runner.hpp"

namespace gradsync::detail {

struct ParallelRun {
  ParallelStep step;
  // Payload over one step per topology link and direction (as PlanTiming's).
  std::vector<double> bytes_a_to_b, bytes_b_to_a;
  std::vector<std::string> algorithms;  // the algorithm of each distinct collective that ran
  std::size_t pairs_simulated = 0;      // pairs of collectives simulated together
};

// `devices`: rank → GPU, the layout's ranks in order.
[[nodiscard]] ParallelRun simulate_parallel_step(const LoadedScenario& loaded,
                                                 const std::vector<DeviceId>& devices,
                                                 const ParallelLayout& layout,
                                                 const RunOptions& options);

}  // namespace gradsync::detail
