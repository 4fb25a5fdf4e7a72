// The bench runner: a virtual nccl-tests. For each message size it plans one collective,
// replays it on the topology's SimGrid platform and returns nccl-tests' numbers (time, algbw,
// busbw with nccl-tests' factors) with the algorithm that ran. `gradsync bench` is its command
// line (sim/cli/bench_command.cpp); bench_report.hpp writes its rows.
//
// Algorithm choice: one named algorithm, or auto. Auto under NCCL's software model runs what
// NCCL's tuner picks for each size (nccl_tuner.hpp), as a real job does, and with `best` also
// simulates every candidate and reports the fastest; under another software model auto keeps
// the fastest simulated candidate. NVLS uses the ranks' NVSwitch (or each server's NVSwitch and
// InfiniBand SHARP), NVLSTree each server's NVSwitch (in_switch_devices()); auto includes the
// one that applies. One SimGrid simulation per process: call run_bench() at most once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gradsync/collective/collective.hpp"
#include "gradsync/engine/simulation.hpp"
#include "gradsync/fabric/nccl_tuner.hpp"
#include "gradsync/collective/rank_placement.hpp"
#include "gradsync/topology/topology.hpp"

namespace gradsync {

// Host time to launch one GPU's collective from a thread that drives several (nccl-tests -g):
// NVIDIA/nccl-tests#123 (DGX-A100, ring, one channel, 8-128 B, -g N for N = 4..8) measures
// 16.88, 20.8, 25.2, 29.5, 33.7 us, 4.2 us x N within 0.3 us, where NCCL's own latency for one
// GPU per process is 13-15 us; NVIDIA in nccl-tests#333: -g 8's higher latency is "the CUDA
// latency overheads of single process jobs".
inline constexpr double kNcclTestsLaunchPerGpuUs = 4.2;

struct BenchRequest {
  CollectiveOp op = CollectiveOp::AllReduce;
  std::optional<Algorithm> algorithm = Algorithm::Ring;  // empty: auto
  std::vector<double> sizes;  // message sizes in bytes, one row each (bench_sizes())
  std::uint32_t gpus = 0;     // ranks; 0: every GPU of the topology
  PlacementOptions placement;
  Fidelity fidelity = Fidelity::Auto;
  std::uint32_t channels = 0;  // 0: default_ring_channels()
  std::uint32_t pipeline = 0;  // 0: automatic
  std::uint32_t root = 0;      // broadcast / reduce
  std::uint32_t ps_servers = 1;
  ServerPlacement ps_placement = ServerPlacement::Colocated;
  // Parameter servers on CPU hosts of their own (add_server_hosts() in server_hosts.hpp): their
  // devices, after every GPU; they replace ps_servers and ps_placement (dedicated).
  std::vector<DeviceId> ps_hosts;
  bool best = false;  // auto under NCCL: also simulate every candidate and keep the fastest
  // nccl-tests' -g: GPUs one host thread drives. It launches their collectives one after the
  // other, so an iteration takes at least gpus_per_thread × kNcclTestsLaunchPerGpu of host
  // time, and nccl-tests' time per iteration is the larger of that and the collective's.
  std::uint32_t gpus_per_thread = 1;
  std::vector<std::string> simgrid_args;  // e.g. "--cfg=contexts/factory:thread"
  // Bad requests throw ConfigError at "<origin> --algo" or "<origin> --root" (the option that
  // asked for them).
  std::string origin = "gradsync bench";
  // Called before each size is simulated (index from 0, of count); empty: never.
  std::function<void(std::size_t index, std::size_t count, Bytes size)> on_size;
  // Progress of collectives that run long (Simulation::set_progress); empty: none.
  std::function<void(const RunProgress&)> progress;
};

struct BenchRow {
  double bytes = 0;
  double time_us = -1;
  double algbw = 0;  // GB/s, GB = 1e9 B
  double busbw = 0;  // GB/s, algbw times nccl-tests' factor (busbw_factor())
  std::string algorithm;
  std::string protocol;        // software: nccl only
  std::uint32_t channels = 0;  // NCCL's channels for this size (software: nccl only)
  std::string fidelity;
  std::size_t flows = 0;  // SimGrid communications the replay started
  // The fastest simulated candidate, whatever NCCL's tuner picks: set on every run except
  // NCCL's auto without best, where only the tuner's choice is simulated.
  std::string best_algorithm;
  double best_time_us = -1;
  // The time is the harness's host launches (gpus_per_thread × kNcclTestsLaunchPerGpuUs), not
  // the collective's (simulated_us, which is then shorter).
  bool host_bound = false;
  double simulated_us = -1;
  double best_busbw = 0;

  // "ring/LL" under NCCL's model, else "ring".
  [[nodiscard]] std::string label() const;
};

struct BenchResult {
  std::string topology_name;
  SoftwareModel software = SoftwareModel::Nccl;
  std::uint32_t ranks = 0;
  std::uint32_t ranks_per_node = 1;
  // Ranks per server where they differ (12 ranks on 8-GPU servers: 8, 4); empty otherwise.
  std::vector<std::uint32_t> node_sizes;
  std::uint32_t channels = 0;  // the ring channels every plan was made with
  std::vector<BenchRow> rows;  // one per requested size, in order
  // NCCL's view of the ranks under `--algo auto` and NCCL's model (its graphs, as
  // NCCL_DEBUG=INFO prints them); empty otherwise.
  std::optional<NcclTopologyView> nccl_view;
};

// The sizes of an nccl-tests sweep: min, min·factor, ... up to max (each rounded to a byte).
[[nodiscard]] std::vector<double> bench_sizes(Bytes min, Bytes max, double factor);

// Simulates `request` on `topology`. Throws ConfigError for a request the topology cannot run
// (too many ranks, NVLS without an NVSwitch, a root out of range, a plan the algorithm cannot
// make).
[[nodiscard]] BenchResult run_bench(const Topology& topology, const BenchRequest& request);

}  // namespace gradsync
