// The engine: replays collective plans (collective.hpp) on the SimGrid platform of a topology
// (platform_builder.hpp) and measures simulated time. One SimGrid simulation per process: a
// Simulation owns the s4u::Engine singleton, so create at most one per process.
//
// Fidelity (README.md, How the simulation works):
//   step — every transfer of the plan is a flow that starts when its dependencies have
//          arrived (exact dependencies; events grow with ranks × steps);
//   flow — within each phase of the plan (Plan::phases: push then pull, intra-node then
//          inter-node, …), all transfers between the same two ranks on one channel become one
//          flow carrying
//          their bytes, started together, each paying the phase's step count of route
//          latencies plus its pipeline fill (fill bytes / route bottleneck). Exact for rings on
//          symmetric fabrics, orders of magnitude fewer events;
//   auto — step while the plan has at most kAutoStepTransfers transfers and transfers ×
//          distinct connections (rank pair, channel) stays under kAutoStepWork (the
//          solver's cost), flow beyond.
// Simulation runs no actors: transfers are SimGrid activities started from completion
// callbacks, and each is released as soon as it completes (memory follows concurrent flows).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gradsync/collective/collective.hpp"
#include "gradsync/fabric/nccl_model.hpp"
#include "gradsync/collective/rank_placement.hpp"
#include "gradsync/topology/topology.hpp"
#include "gradsync/units/units.hpp"

namespace gradsync {

struct PlanTiming {
  Seconds time{0.0};              // from the first start to the last arrival
  Fidelity fidelity = Fidelity::Step;
  std::size_t flows = 0;          // SimGrid communications started
  // software: nccl — the protocol NCCL's model ran the plan with, and its channels for this
  // size (nccl_tuner.hpp); empty / 0 without the model.
  std::optional<NcclProtocol> protocol;
  std::uint32_t nccl_channels = 0;
  // Payload bytes that crossed each topology link (index: LinkId), per direction: from
  // link.a toward link.b, and back. Divide by effective bandwidth × time for utilization.
  std::vector<double> bytes_a_to_b;
  std::vector<double> bytes_b_to_a;
};

// How far a run_plan() has got, for progress on a terminal (Simulation::set_progress).
struct RunProgress {
  std::size_t done = 0;   // transfers (step fidelity) or flows (flow fidelity) finished
  std::size_t total = 0;  // of this run (flow fidelity: of the current phase)
  bool flows = false;     // flow fidelity: `done` and `total` count flows
  Seconds simulated{0.0};  // simulated time since the run started
  bool routing = false;    // Simulation::build: `done` of `total` connections routed
};

// One plan of Simulation::run_together, on these devices (both outlive the call).
struct PlanRun {
  const Plan* plan = nullptr;
  const std::vector<DeviceId>* devices = nullptr;
};

class Simulation {
 public:
  // `simgrid_args` are SimGrid options such as "--cfg=contexts/factory:thread".
  explicit Simulation(const Topology& topology, const std::vector<std::string>& simgrid_args = {},
                      std::uint64_t ecmp_seed = 0);
  ~Simulation();
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  // Builds the platform with routes for these device pairs. Call once, before run_plan().
  void build(const std::vector<std::pair<DeviceId, DeviceId>>& pairs);
  // Runs one plan to completion (plans run one after another on the same platform).
  PlanTiming run_plan(const Plan& plan, const std::vector<DeviceId>& rank_devices,
                      Fidelity fidelity = Fidelity::Auto);
  // Several plans started at one instant over the same links, at flow fidelity (no exact
  // reductions: their flows start at different instants), each running its phases one after
  // another as its own flows finish; returns each plan's time from the start to its last
  // arrival. A pair two plans send between at the start pays the larger of their latencies.
  [[nodiscard]] std::vector<Seconds> run_together(std::span<const PlanRun> runs);
  // Flow fidelity's exact reductions (on by default): components of a phase that are the same
  // max-min system are simulated once, and a pair's flows of one size are merged where every
  // pair of the component carries as many (sim/engine/flow_symmetry.hpp). Off: every flow is
  // replayed (the reference the reductions are tested against).
  void set_symmetry(bool on);
  // Links no set of flows can saturate are left out of the SimGrid routes (on by default,
  // PlatformOptions::drop_implied_links). Off: every link stays. Before build() only.
  void set_drop_implied_links(bool on);
  // Called during a build() or run_plan() that has lasted over `after` of wall time, then at
  // most every `every`; empty (the default): never. Never changes what is simulated.
  void set_progress(std::function<void(const RunProgress&)> report,
                    std::chrono::milliseconds after = std::chrono::milliseconds(2000),
                    std::chrono::milliseconds every = std::chrono::milliseconds(500));

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gradsync
