// `gradsync advise`: which change to a scenario buys the most throughput. The advisor proposes
// what-ifs (more or fewer servers, faster fabrics, overlap, accumulation, compression, parameter
// server vs AllReduce, tree vs ring, one NIC per GPU), each a list of `--set` overrides that the
// CLI simulates as an ordinary `gradsync run`; it then searches the accumulation and the Top-K
// ratio that bring exposed communication under the 30 % rule (step_schedule.hpp) and ranks every
// result by samples/s, or by cost per sample.
//
// Pure data and functions (model layer): nothing here runs a simulation. The CLI
// (sim/cli/advise_command.cpp) runs the variants and feeds their outcomes back.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gradsync/scenario/scenario.hpp"
#include "gradsync/topology/topology.hpp"
#include "gradsync/units/units.hpp"

namespace gradsync {

// What the advisor needs to know about the scenario it starts from.
struct AdviceBaseline {
  bool cluster_template = false;  // the topology is a template: nodes, NICs and the network
                                  // can be overridden (topology_overrides.*)
  int nodes = 1;  // servers the scenario's GPUs occupy (its first `gpus` fill them in order)
  int gpus_per_node = 1;
  // The GPUs fill every one of those servers: the baseline is a point of the scaling curve,
  // whose other points use whole servers (12 GPUs on 8-GPU servers are not 2 servers' worth).
  bool whole_servers = true;
  int nics_per_node = 0;
  std::optional<std::uint32_t> scenario_gpus;  // the scenario's `gpus:` (first N GPUs)
  std::optional<Fabric> network_fabric;        // unset: one server, no network
  bool network_sharp = false;                  // network.sharp: the switches reduce (SHARP)
  // node.pcie.p2p: GPUs and NICs talk peer to peer through their PCIe switch (GPUDirect RDMA;
  // false: PCIe ACS on, or no GPUDirect RDMA: the traffic turns at the CPU).
  bool nic_p2p = true;
  BytesPerSecond nic_bandwidth{0.0};
  SyncStrategy strategy = SyncStrategy::AllReduce;
  SyncAlgorithm algorithm = SyncAlgorithm::Auto;
  Overlap overlap = Overlap::Bucketed;
  std::uint32_t accumulation = 1;
  CompressionMethod compression = CompressionMethod::None;
  // The scenario's other compression keys as flow-mapping entries (", encode_rate: 2e+10B/s,
  // error_feedback: true"), kept when a what-if sets the method: a what-if replaces
  // sync.compression as a whole, which works whether the file writes it as a word or a mapping.
  std::string compression_keys;
  bool nccl = false;  // software: nccl: only what NCCL runs (no hierarchical) is proposed
  ParallelSpec parallel;         // the scenario's layout (parallel:)
  bool transformer = false;      // model.hidden and seq_len known: tensor/pipeline can apply
  std::uint32_t gpus = 1;        // GPUs the scenario uses
  bool has_cost = false;         // the topology has `cost:`
  bool cost_is_quoted = false;   // `cost: {total: ...}`: a quote that does not scale with nodes
  // cost.networks: other networks' NIC, switch-port and cable prices; a network what-if found
  // here is priced with them (not same_prices).
  std::vector<NetworkPrice> network_prices;
};

enum class AdviceKind {
  Nodes, Fabric, Nics, Overlap, Accumulation, Compression, Strategy, Algorithm, Parallel, Sharp,
  Gdr
};
[[nodiscard]] std::string_view to_string(AdviceKind kind);  // "nodes", "fabric", ...

struct AdviceVariant {
  AdviceKind kind = AdviceKind::Nodes;
  std::string change;             // what changed, for people: "network: 10 GbE → 100 GbE"
  std::vector<std::string> sets;  // the --set overrides that make the change ("key=value")
  // Cost per sample is priced with the baseline topology's `cost:` as written (a faster NIC at
  // the old NIC's price): comparable in cluster size, not in hardware generation.
  bool same_prices = false;
  // Network what-ifs (kind Fabric): the network they put in, and whether it runs at the
  // baseline's line rate (a same-speed comparison: listed whether better or worse) or below it
  // (a cheaper network: not ranked, only weighed by cheapest_network_meeting_rule).
  std::optional<Fabric> network_fabric;
  double network_gbps = 0.0;
  bool same_speed = false;
  bool slower_network = false;
};

// The changes that need no search: the other networks (every fabric at every line rate of
// the catalogue: faster ones, the other fabrics at the baseline's rate, and slower ones for
// the cheapest network that still meets the rule), one NIC per GPU, the other overlap policies, int8/fp8/int4 quantization, the
// other strategy, the other algorithms, and under allreduce the other layouts: data modes
// (ddp, zero1, zero2, fsdp, hsdp across servers), HSDP shard groups halved and doubled, tensor
// 2/4/8 within a server and pipeline 2/4 for transformer presets (compression and parameter
// servers only for plain DDP, the layouts they are modelled for). Only changes that make sense for the baseline: no
// network variants on one server, no NIC variant when every GPU has one, and so on.
[[nodiscard]] std::vector<AdviceVariant> plan_advice_variants(const AdviceBaseline& baseline);

// Server counts for the scaling curve: 1, 2, 4, ... up to max(4 × nodes, 8) (capped by
// `max_nodes`), with the baseline's own count; empty for an explicit-form topology.
[[nodiscard]] std::vector<int> scaling_node_counts(const AdviceBaseline& baseline, int max_nodes);
[[nodiscard]] AdviceVariant nodes_variant(const AdviceBaseline& baseline, int nodes);

// Gradient accumulation of `k` micro-batches per step (a global batch k / accumulation times
// the baseline's).
[[nodiscard]] AdviceVariant accumulation_variant(const AdviceBaseline& baseline, std::uint32_t k);
// Accumulation values tried first: powers of two above the baseline's, up to kMaxAdviceAccumulation.
[[nodiscard]] std::vector<std::uint32_t> accumulation_ladder(const AdviceBaseline& baseline);
inline constexpr std::uint32_t kMaxAdviceAccumulation = 256;

// Top-K sparsification keeping `ratio` of the gradient's elements (the baseline's other
// compression keys kept).
[[nodiscard]] AdviceVariant topk_variant(const AdviceBaseline& baseline, double ratio);
// Keep-ratios tried first, largest first (10 % down to 0.1 %).
[[nodiscard]] std::vector<double> topk_ladder();
// Between a keep-ratio known to fail (larger) and one known to pass (smaller): their geometric
// mean rounded to 2 significant digits, or nothing once they are within 25 % of each other.
[[nodiscard]] std::optional<double> next_topk_probe(double failing, double passing);

// What one simulated run gave (the keys of `gradsync run --json` the advisor uses).
struct AdviceOutcome {
  double step_time_s = 0.0;
  double samples_per_s = 0.0;
  double exposed_comm_s = 0.0;
  double grad_bytes_per_sync = 0.0;
  double wire_bytes_per_sync = 0.0;
  int gpus = 0;
  int nodes = 0;
  std::optional<double> cost_per_sample;  // with `cost:` in the topology
  std::optional<double> cluster_cost;     // the same: the cluster's price
  std::string verdict;                    // "compute-bound" / "communication-bound"
  std::string bottleneck;                 // busiest link, or empty
  std::optional<bool> fits_in_memory;     // unset when the GPU's memory is unknown
  double memory_per_gpu_bytes = 0.0;
  double gpu_memory_bytes = 0.0;
  // exposed_comm_s / step_time_s (0 for an empty step).
  [[nodiscard]] double exposed_share() const;
  // Meets the 30 % rule: exposed share at most kCommunicationBoundShare.
  [[nodiscard]] bool under_rule() const;
};

// Searching the smallest accumulation (or the largest keep-ratio) that meets the rule: given
// the largest value known to fail and the smallest known to pass, the next integer to try, or
// nothing when they are adjacent.
[[nodiscard]] std::optional<std::uint32_t> next_accumulation_probe(std::uint32_t failing,
                                                                   std::uint32_t passing);

// The scaling curve read back: where adding servers stops paying.
struct ScalingPoint {
  int nodes = 0;
  AdviceOutcome outcome;
};
struct ScalingSummary {
  std::vector<ScalingPoint> curve;  // by node count
  int peak_nodes = 0;               // the most samples/s among the counts tried
  // The fewest servers (> 1) that beat one server; unset when none of the counts tried does.
  // Equal to 2 unless a second server makes training slower (a slow network).
  std::optional<int> breakeven_nodes;
  // The last count up to which doubling the servers still gave at least 1.5× the samples/s
  // (half the ideal gain of a doubling); unset when no doubling did.
  std::optional<int> diminishing_after;
  // Where that run of doublings starts (the first count tried, or 2 when going from one server
  // to two, which adds the network, gave less than 1.5x: one_to_two_gain is then that gain).
  std::optional<int> pays_from;
  std::optional<double> one_to_two_gain;
  // Lowest cost per sample, when priced; among counts within 1 % of it, the one with the most
  // samples/s (the same price per sample, sooner).
  std::optional<int> cheapest_nodes;
  std::optional<int> lowest_cost_nodes;  // the count of the lowest cost per sample itself
};
[[nodiscard]] ScalingSummary summarize_scaling(std::vector<ScalingPoint> curve);

enum class AdviceRanking { SamplesPerSecond, CostPerSample };

struct RankedVariant {
  AdviceVariant variant;
  AdviceOutcome outcome;
  double gain = 0.0;  // samples_per_s / baseline's − 1 (0.25 = 25 % more samples/s)
};

// Network upgrades that buy nothing over a slower one: walking the fabric variants in the
// order plan_advice_variants() gives them (slowest first), a variant is dropped when its
// samples/s beat the baseline's and those of every slower network kept so far by less than
// `margin` (1 %: the network is no longer the bottleneck). Other variants, and same-speed
// network comparisons, pass through (slower networks are set aside before: not ranked).
// Returns the dropped ones.
inline constexpr double kAdviceNetworkMargin = 0.01;
[[nodiscard]] std::vector<RankedVariant> drop_dominated_networks(
    std::vector<RankedVariant>& variants, double baseline_samples_per_s,
    double margin = kAdviceNetworkMargin);
// The cheapest network that meets the 30 % rule among the baseline's and the simulated
// network what-ifs. When every one that meets it is priced with its own parts (the topology's
// `cost:` for the baseline, `cost.networks` for the others: own_prices and a cluster_cost),
// the lowest cluster cost; otherwise by line rate, then Ethernet < RoCE/EFA < InfiniBand at one
// rate (what NICs, switch ports and cables cost rises with both: no price is invented).
// Returns the index into `options`, or nothing when none meets the rule.
struct NetworkOption {
  std::string label;  // "25 GbE", "InfiniBand NDR 400 Gb/s"
  Fabric fabric = Fabric::Ethernet;
  double gbps = 0.0;
  bool baseline = false;
  bool own_prices = false;  // outcome.cluster_cost prices this network's own parts
  AdviceOutcome outcome;
  std::vector<std::string> sets;  // empty for the baseline
};
[[nodiscard]] std::optional<std::size_t> cheapest_network_meeting_rule(
    const std::vector<NetworkOption>& options);
// The label of a network (fabric at a line rate): the catalogue's name, else "fabric N Gb/s".
[[nodiscard]] std::string network_label(Fabric fabric, BytesPerSecond rate);

// Algorithm what-ifs away from `auto` that change nothing (auto already runs that algorithm
// for every bucket: the same step time within 1e-9): dropped, and returned.
[[nodiscard]] std::vector<RankedVariant> drop_unchanged_algorithms(
    std::vector<RankedVariant>& variants, const AdviceBaseline& baseline,
    double baseline_step_time_s);
// Best first: most samples/s, or lowest cost per sample (unpriced variants last, then by
// samples/s). Ties keep the input order.
[[nodiscard]] std::vector<RankedVariant> rank_variants(const AdviceOutcome& baseline,
                                                       std::vector<RankedVariant> variants,
                                                       AdviceRanking ranking);

}  // namespace gradsync
