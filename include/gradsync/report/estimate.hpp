// The back-of-the-envelope estimate of gradient synchronization (`gradsync estimate`,
// README.md Commands): instant closed forms, no simulation. How many bytes one sync moves, the
// naive `bytes / effective bandwidth + latency` everyone starts with (at the typical 50–70 %
// efficiency, and at the user's own), and beside it the α-β closed forms of ring, NCCL-style
// double binary tree, parameter server and hierarchical AllReduce; their nccl-tests algbw and
// busbw; the cost amortized over gradient accumulation; and, given the compute time, the share
// of the step the sync would take with no overlap against the 30 % rule of thumb.
//
// Conventions: every bandwidth is a line rate per GPU port (per direction); the efficiency
// scales each of them (the inter-node one and, for hierarchical, the intra-node one) to the
// bandwidth that carries payload. α (latency) is paid once per algorithm step. GB is 1e9 B.
// These are ideal-network formulas: no contention, no library overheads, no overlap. For the
// real thing on a real topology, `gradsync bench` and `gradsync run` simulate it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gradsync/scenario/communication_rule.hpp"
#include "gradsync/scenario/scenario.hpp"
#include "gradsync/units/units.hpp"

namespace gradsync {

// Closed forms (sim/collective/README.md). n ranks, S bytes per rank, α per step, B bandwidth per
// GPU port. In their own namespace: other modules may define closed forms of the same name for the
// simulator's validation.
namespace closed_form {

// One point-to-point transfer of S bytes: S/B + α (the naive estimate).
[[nodiscard]] Seconds transfer_time(Bytes bytes, Seconds alpha, BytesPerSecond bandwidth);

// Ring AllReduce, reduce-scatter + all-gather: 2(n−1)·α + 2(n−1)/n·S/B. 0 for n = 1.
[[nodiscard]] Seconds ring_allreduce_time(std::uint32_t n, Bytes bytes, Seconds alpha,
                                          BytesPerSecond bandwidth);

// NCCL double binary tree, large-message approximation (pipelined, each port carries ~2S each
// way): 2·⌈log2 n⌉·α + 2S/B. 0 for n = 1.
[[nodiscard]] Seconds tree_allreduce_time(std::uint32_t n, Bytes bytes, Seconds alpha,
                                          BytesPerSecond bandwidth);

// Parameter server with k dedicated servers and n workers: every worker pushes S/k to each
// server and pulls S/k back, so each server port carries n·S/k each way (incast):
// 2α + 2·S·n/(k·B). Not 0 for one worker: its gradients still go to the server and back.
[[nodiscard]] Seconds parameter_server_time(std::uint32_t workers, std::uint32_t servers,
                                            Bytes bytes, Seconds alpha, BytesPerSecond bandwidth);

// Hierarchical AllReduce over N = n/g nodes of g GPUs: reduce-scatter and all-gather inside
// the node (a ring at B_intra), then a ring across nodes on each of the g rails carrying S/g:
// 2(g−1)·α + 2(g−1)/g·S/B_intra + 2(N−1)·α + 2(N−1)/N·S/(g·B).
// Throws std::invalid_argument unless g ≥ 1 divides n.
[[nodiscard]] Seconds hierarchical_allreduce_time(std::uint32_t n, std::uint32_t gpus_per_node,
                                                  Bytes bytes, Seconds alpha,
                                                  BytesPerSecond intra_bandwidth,
                                                  BytesPerSecond inter_bandwidth);

}  // namespace closed_form

// The typical share of line rate that carries payload in a hand estimate (50–70 %) and the
// default point value; "communication-bound" is kCommunicationBoundShare (communication_rule.hpp).
inline constexpr double kTypicalEfficiencyLow = 0.5;
inline constexpr double kTypicalEfficiencyHigh = 0.7;
inline constexpr double kDefaultEstimateEfficiency = 0.6;

// Limits of what `estimate` accepts (anything beyond is a typo, not a model).
inline constexpr double kMaxEstimateParams = 1e14;
inline constexpr std::uint32_t kMaxEstimateGpus = 1000000;


struct EstimateRequest {
  double params = 0.0;                   // (0, 1e14]
  GradDtype dtype = GradDtype::Fp32;
  BytesPerSecond bandwidth{0.0};         // line rate per GPU port, > 0
  Seconds latency{0.0};                  // α, per algorithm step
  std::uint32_t gpus = 1;                // n data-parallel ranks (PS: workers), 1..1e6
  double efficiency = kDefaultEstimateEfficiency;  // (0, 1]
  std::uint32_t accumulation = 1;        // micro-batches per optimizer step (one sync per step)
  std::uint32_t ps_servers = 1;          // k dedicated parameter servers
  std::optional<std::uint32_t> gpus_per_node;      // hierarchical: g, divides gpus
  std::optional<BytesPerSecond> intra_bandwidth;   // hierarchical: B_intra per GPU, > 0
  std::optional<Seconds> compute;        // one micro-batch (forward + backward) on one GPU
};

enum class EstimateAlgorithm { Naive, Ring, Tree, ParameterServer, Hierarchical };
[[nodiscard]] std::string_view to_string(EstimateAlgorithm algorithm);  // naive, ring, tree, ps, hierarchical

// One row: the time of one sync at the point efficiency, and what follows from it.
struct AlgorithmEstimate {
  EstimateAlgorithm algorithm = EstimateAlgorithm::Naive;
  Seconds time{0.0};             // one synchronization (once per optimizer step)
  Seconds per_micro_batch{0.0};  // time / accumulation: the amortized cost
  // nccl-tests conventions: algbw = S/t, busbw = algbw·2(n−1)/n. Unset when t = 0 (one GPU).
  std::optional<BytesPerSecond> algbw;
  std::optional<BytesPerSecond> busbw;
  // With compute: time / (accumulation·compute + time), the step's share spent syncing when
  // nothing overlaps, and whether it exceeds kCommunicationBoundShare.
  std::optional<double> step_share;
  bool communication_bound = false;
};

// The naive estimate over the typical efficiency range: low = at 70 % (fastest), point = at
// the requested efficiency, high = at 50 % (slowest).
struct TimeRange {
  Seconds low{0.0};
  Seconds point{0.0};
  Seconds high{0.0};
};

struct SyncEstimate {
  EstimateRequest request;
  Bytes grad_bytes{0.0};                    // params × bytes per gradient element
  BytesPerSecond effective_bandwidth{0.0};  // bandwidth × efficiency
  std::optional<BytesPerSecond> effective_intra_bandwidth;
  TimeRange naive_range;
  AlgorithmEstimate naive;
  AlgorithmEstimate ring;
  AlgorithmEstimate tree;
  AlgorithmEstimate ps;
  std::optional<AlgorithmEstimate> hierarchical;  // only with gpus_per_node and intra_bandwidth
  std::optional<std::uint32_t> nodes;             // gpus / gpus_per_node, when given
  std::optional<Seconds> step_compute;            // accumulation × compute

  // The rows in display order: naive, ring, tree, ps, then hierarchical when present.
  [[nodiscard]] std::vector<const AlgorithmEstimate*> rows() const;
};

// Throws std::invalid_argument for a request outside the documented ranges (the CLI checks
// them first and reports them as bad input). A single GPU has nothing to synchronize: the naive
// and AllReduce times are 0 (the parameter server still pushes and pulls).
[[nodiscard]] SyncEstimate estimate_sync(const EstimateRequest& request);

// The human-readable report: the inputs, the naive range, one row per algorithm with its
// formula, and the step share when compute is known. ASCII only; every number has its unit.
[[nodiscard]] std::string format_estimate(const SyncEstimate& estimate);

}  // namespace gradsync
