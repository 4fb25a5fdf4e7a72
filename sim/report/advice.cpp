// What-if variants for `gradsync advise`, and reading their outcomes back (advise.hpp).
#include "gradsync/report/advise.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "gradsync/fabric/fabric_defaults.hpp"
#include "gradsync/topology/fabric_registry.hpp"
#include "gradsync/scenario/step_schedule.hpp"

namespace gradsync {

std::string_view to_string(AdviceKind kind) {
  switch (kind) {
    case AdviceKind::Nodes: return "nodes";
    case AdviceKind::Fabric: return "fabric";
    case AdviceKind::Nics: return "nics";
    case AdviceKind::Overlap: return "overlap";
    case AdviceKind::Accumulation: return "accumulation";
    case AdviceKind::Compression: return "compression";
    case AdviceKind::Parallel: return "parallel";
    case AdviceKind::Strategy: return "strategy";
    case AdviceKind::Algorithm: return "algorithm";
    case AdviceKind::Sharp: return "sharp";
    case AdviceKind::Gdr: return "gdr";
  }
  return "?";
}

namespace {

// Network choices offered, slowest first. Line rates are per NIC: Ethernet at the common
// 10/25/100/200/400 GbE steps; RoCE on 100–400G RDMA NICs (ConnectX-6/7); InfiniBand by
// generation (EDR 100, HDR 200, NDR 400 Gb/s per port, IBTA roadmap).
struct NetworkChoice {
  Fabric fabric;
  double gbps;
  const char* label;
};
constexpr NetworkChoice kNetworkChoices[] = {
    {Fabric::Ethernet, 10, "10 GbE"},           {Fabric::Ethernet, 25, "25 GbE"},
    {Fabric::Ethernet, 100, "100 GbE"},         {Fabric::Roce, 100, "RoCE 100 Gb/s"},
    {Fabric::InfiniBand, 100, "InfiniBand EDR 100 Gb/s"},
    {Fabric::Ethernet, 200, "200 GbE"},         {Fabric::Roce, 200, "RoCE 200 Gb/s"},
    {Fabric::InfiniBand, 200, "InfiniBand HDR 200 Gb/s"},
    {Fabric::Ethernet, 400, "400 GbE"},         {Fabric::Roce, 400, "RoCE 400 Gb/s"},
    {Fabric::InfiniBand, 400, "InfiniBand NDR 400 Gb/s"},
};

// Lossless RDMA fabrics carry NCCL without the host TCP stack: at one line rate they are
// ranked Ethernet < RoCE, EFA < InfiniBand (FabricInfo::advise_rank).
int fabric_rank(Fabric f) { return fabric_info(f).advise_rank; }

std::string format_ratio(double r) { return fmt::format("{:g} %", r * 100.0); }

// The data-parallel degree, hence the global batch, scales by the old model-parallel size over
// the new one.
std::string batch_change(const ParallelSpec& p, std::uint32_t tensor, std::uint32_t pipeline) {
  const double factor = static_cast<double>(p.tensor * p.pipeline) / (tensor * pipeline);
  return factor == 1.0 ? std::string() : fmt::format(" (global batch ×{:g})", factor);
}

// Layouts: other data modes, HSDP shard groups, tensor and pipeline degrees that divide the GPUs.
void add_parallel_variants(const AdviceBaseline& b, std::vector<AdviceVariant>& out) {
  const ParallelSpec& p = b.parallel;
  auto add = [&](std::string change, std::string set) {
    AdviceVariant v;
    v.kind = AdviceKind::Parallel;
    v.change = std::move(change);
    v.sets = {std::move(set)};
    out.push_back(std::move(v));
  };
  for (DataParallelism d : {DataParallelism::Ddp, DataParallelism::Zero1, DataParallelism::Zero2,
                            DataParallelism::Fsdp, DataParallelism::Hsdp}) {
    if (d == p.data || (d == DataParallelism::Fsdp && p.data == DataParallelism::Zero3)) continue;
    if (d == DataParallelism::Hsdp && b.nodes < 2) continue;
    add(fmt::format("data parallelism: {} → {}", to_string(p.data), to_string(d)),
        fmt::format("parallel.data={}", to_string(d)));
  }
  if (p.data == DataParallelism::Hsdp && p.shard_group != 0)
    for (std::uint32_t g : {p.shard_group / 2, p.shard_group * 2})
      if (g >= 1 && g != p.shard_group)
        add(fmt::format("HSDP shard group: {} → {} GPUs", p.shard_group, g),
            fmt::format("parallel.shard_group={}", g));
  if (!b.transformer) return;
  for (std::uint32_t t : {1u, 2u, 4u, 8u}) {
    if (t == p.tensor || static_cast<int>(t) > b.gpus_per_node) continue;
    if (b.gpus % (t * p.pipeline) != 0) continue;
    add(fmt::format("tensor parallel: {} → {} GPUs{}", p.tensor, t, batch_change(p, t, p.pipeline)),
        fmt::format("parallel.tensor={}", t));
  }
  for (std::uint32_t s : {1u, 2u, 4u}) {
    if (s == p.pipeline || b.gpus % (p.tensor * s) != 0) continue;
    if (s > 1 && p.schedule == PipelineSchedule::Interleaved && b.accumulation % s != 0) continue;
    if (s == 1 && p.schedule == PipelineSchedule::Interleaved) continue;
    add(fmt::format("pipeline stages: {} → {}{}", p.pipeline, s, batch_change(p, p.tensor, s)),
        fmt::format("parallel.pipeline={}", s));
  }
}

}  // namespace

std::string network_label(Fabric fabric, BytesPerSecond rate) {
  const double gbps = rate.bytes_per_second() * 8.0 / 1e9;
  for (const NetworkChoice& c : kNetworkChoices)
    if (c.fabric == fabric && std::abs(c.gbps - gbps) < 1e-6) return c.label;
  return fmt::format("{} {:g} Gb/s", to_string(fabric), gbps);
}

std::optional<std::size_t> cheapest_network_meeting_rule(const std::vector<NetworkOption>& options) {
  bool all_priced = true;
  for (const NetworkOption& o : options)
    if (o.outcome.under_rule() && !(o.own_prices && o.outcome.cluster_cost)) all_priced = false;
  std::optional<std::size_t> best;
  if (all_priced) {
    for (std::size_t i = 0; i < options.size(); ++i)
      if (options[i].outcome.under_rule() &&
          (!best || *options[i].outcome.cluster_cost < *options[*best].outcome.cluster_cost))
        best = i;
    return best;
  }
  for (std::size_t i = 0; i < options.size(); ++i) {
    const NetworkOption& o = options[i];
    if (!o.outcome.under_rule()) continue;
    if (!best) {
      best = i;
      continue;
    }
    const NetworkOption& b = options[*best];
    const bool cheaper = o.gbps < b.gbps - 1e-6 ||
                         (std::abs(o.gbps - b.gbps) <= 1e-6 &&
                          (fabric_rank(o.fabric) < fabric_rank(b.fabric) ||
                           (fabric_rank(o.fabric) == fabric_rank(b.fabric) && o.baseline)));
    if (cheaper) best = i;
  }
  return best;
}

std::vector<AdviceVariant> plan_advice_variants(const AdviceBaseline& b) {
  std::vector<AdviceVariant> out;

  // Other networks: every fabric and line rate of the catalogue. Faster ones and the other
  // fabrics at the baseline's rate are ranked (same-speed ones whether they gain or lose: the
  // IB vs RoCE vs Ethernet comparison at one rate); slower ones only show which cheaper
  // network still meets the 30 % rule.
  if (b.cluster_template && b.nodes > 1 && b.network_fabric) {
    const double gbps = b.nic_bandwidth.bytes_per_second() * 8.0 / 1e9;
    const std::string from = network_label(*b.network_fabric, b.nic_bandwidth);
    for (const NetworkChoice& c : kNetworkChoices) {
      const bool same_rate = std::abs(c.gbps - gbps) <= 1e-6;
      if (same_rate && c.fabric == *b.network_fabric) continue;
      AdviceVariant v;
      v.kind = AdviceKind::Fabric;
      v.network_fabric = c.fabric;
      v.network_gbps = c.gbps;
      v.same_speed = same_rate;
      v.slower_network = c.gbps < gbps - 1e-6;
      v.change = fmt::format("network: {} → {}{}", from, c.label,
                             same_rate ? " (same line rate)" : "");
      v.sets = {fmt::format("topology_overrides.network.fabric={}", to_string(c.fabric)),
                fmt::format("topology_overrides.node.nic_bandwidth={:g}Gbps", c.gbps),
                // The new fabric's own default efficiency, not the old fabric's override.
                fmt::format("topology_overrides.network.efficiency={:g}",
                            default_efficiency(c.fabric))};
      // Priced with this network's parts when cost.networks has them (a quoted total
      // stays as quoted), else with the topology's own prices (marked).
      v.same_prices = true;
      for (const NetworkPrice& p : b.network_prices)
        if (p.fabric == c.fabric && std::abs(p.gbps - c.gbps) <= 1e-6 && !b.cost_is_quoted) {
          v.sets.push_back(fmt::format("topology_overrides.cost.nic={:.17g}", p.nic));
          v.sets.push_back(fmt::format("topology_overrides.cost.switch_port={:.17g}", p.switch_port));
          v.sets.push_back(fmt::format("topology_overrides.cost.cable={:.17g}", p.cable));
          v.same_prices = false;
        }
      out.push_back(std::move(v));
    }
  }

  // One NIC per GPU (rail-optimized servers), when GPUs share NICs.
  if (b.cluster_template && b.nodes > 1 && b.network_fabric && b.nics_per_node > 0 &&
      b.nics_per_node < b.gpus_per_node) {
    AdviceVariant v;
    v.kind = AdviceKind::Nics;
    v.change = fmt::format("NICs per server: {} → {} (one per GPU)", b.nics_per_node,
                           b.gpus_per_node);
    v.sets = {fmt::format("topology_overrides.node.nics={}", b.gpus_per_node)};
    v.same_prices = b.cost_is_quoted;
    out.push_back(std::move(v));
  }

  // InfiniBand SHARP: the switches reduce, and NCCL runs NVLS across servers or CollNet
  // (plain data parallelism; the same switches, priced as the topology's).
  if (b.cluster_template && b.nodes > 1 && b.network_fabric == Fabric::InfiniBand &&
      !b.network_sharp && b.nccl && b.strategy == SyncStrategy::AllReduce &&
      b.parallel.plain()) {
    AdviceVariant v;
    v.kind = AdviceKind::Sharp;
    v.change = "InfiniBand SHARP: off → on (the switches reduce: NVLS across servers, CollNet)";
    v.sets = {"topology_overrides.network.sharp=true"};
    v.same_prices = true;
    out.push_back(std::move(v));
  }

  // GPU <-> NIC peer to peer (GPUDirect RDMA) where the topology turns it at the CPU: PCIe ACS
  // disabled (or set to allow it) and nvidia-peermem loaded cost nothing but configuration.
  if (b.cluster_template && b.nodes > 1 && b.network_fabric && !b.nic_p2p) {
    AdviceVariant v;
    v.kind = AdviceKind::Gdr;
    v.change = "GPU ↔ NIC peer to peer: off → on (PCIe ACS off, GPUDirect RDMA)";
    v.sets = {"topology_overrides.node.pcie.p2p=true"};
    v.same_prices = true;
    out.push_back(std::move(v));
  }

  for (Overlap o : {Overlap::None, Overlap::Bucketed, Overlap::Layerwise}) {
    if (o == b.overlap) continue;
    AdviceVariant v;
    v.kind = AdviceKind::Overlap;
    v.change = fmt::format("overlap: {} → {}", to_string(b.overlap), to_string(o));
    v.sets = {fmt::format("sync.overlap={}", to_string(o))};
    out.push_back(std::move(v));
  }

  if (b.compression == CompressionMethod::None && b.parallel.plain()) {
    for (CompressionMethod m : {CompressionMethod::Fp8, CompressionMethod::Int8,
                                CompressionMethod::Int4}) {
      AdviceVariant v;
      v.kind = AdviceKind::Compression;
      v.change = fmt::format("compression: none → {}", to_string(m));
      v.sets = {fmt::format("sync.compression={{method: {}{}}}", to_string(m), b.compression_keys)};
      out.push_back(std::move(v));
    }
  }

  if (b.strategy == SyncStrategy::AllReduce) add_parallel_variants(b, out);

  if (b.strategy == SyncStrategy::AllReduce && b.parallel.plain()) {
    // One parameter server per node, colocated: the PS layout that spreads the incast.
    const int servers = std::max(1, b.nodes);
    AdviceVariant v;
    v.kind = AdviceKind::Strategy;
    v.change = fmt::format("strategy: allreduce → parameter server ({} colocated server{})",
                           servers, servers == 1 ? "" : "s");
    v.sets = {"sync.strategy=ps", fmt::format("sync.ps.servers={}", servers),
              "sync.ps.placement=colocated"};
    out.push_back(std::move(v));
  } else if (b.strategy != SyncStrategy::AllReduce) {
    AdviceVariant v;
    v.kind = AdviceKind::Strategy;
    v.change = fmt::format("strategy: {} → allreduce", to_string(b.strategy));
    v.sets = {"sync.strategy=allreduce"};
    out.push_back(std::move(v));
  }

  if (b.strategy == SyncStrategy::AllReduce) {
    for (SyncAlgorithm a : {SyncAlgorithm::Ring, SyncAlgorithm::Tree, SyncAlgorithm::Hierarchical,
                            SyncAlgorithm::Auto}) {
      if (a == b.algorithm) continue;
      if (a == SyncAlgorithm::Hierarchical && (b.nodes < 2 || b.nccl)) continue;  // not NCCL's
      AdviceVariant v;
      v.kind = AdviceKind::Algorithm;
      v.change = fmt::format("algorithm: {} → {}", to_string(b.algorithm), to_string(a));
      v.sets = {fmt::format("sync.algorithm={}", to_string(a))};
      out.push_back(std::move(v));
    }
  }
  return out;
}

std::vector<int> scaling_node_counts(const AdviceBaseline& b, int max_nodes) {
  std::vector<int> out;
  if (!b.cluster_template) return out;
  const int top = std::min(max_nodes, std::max(4 * b.nodes, 8));
  for (int n = 1; n <= top; n *= 2) out.push_back(n);
  if (b.nodes <= top) out.push_back(b.nodes);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

AdviceVariant nodes_variant(const AdviceBaseline& b, int nodes) {
  AdviceVariant v;
  v.kind = AdviceKind::Nodes;
  const long gpus = static_cast<long>(nodes) * b.gpus_per_node;
  v.change = fmt::format("servers: {} → {} ({} GPU{})", b.nodes, nodes, gpus, gpus == 1 ? "" : "s");
  v.sets = {fmt::format("topology_overrides.nodes={}", nodes)};
  // A scenario that uses the first N GPUs keeps using all of a server's GPUs.
  if (b.scenario_gpus) v.sets.push_back(fmt::format("gpus={}", gpus));
  v.same_prices = b.cost_is_quoted;
  return v;
}

AdviceVariant accumulation_variant(const AdviceBaseline& b, std::uint32_t k) {
  AdviceVariant v;
  v.kind = AdviceKind::Accumulation;
  v.change = fmt::format("accumulation: {} → {} micro-batches per step (global batch ×{:g})",
                         b.accumulation, k, static_cast<double>(k) / b.accumulation);
  v.sets = {fmt::format("training.accumulation={}", k)};
  return v;
}

std::vector<std::uint32_t> accumulation_ladder(const AdviceBaseline& b) {
  std::vector<std::uint32_t> out;
  for (std::uint32_t k = 2; k <= kMaxAdviceAccumulation; k *= 2)
    if (k > b.accumulation) out.push_back(k);
  return out;
}

AdviceVariant topk_variant(const AdviceBaseline& b, double ratio) {
  if (!(ratio > 0.0 && ratio <= 1.0)) throw std::invalid_argument("topk ratio out of (0, 1]");
  AdviceVariant v;
  v.kind = AdviceKind::Compression;
  v.change = fmt::format("compression: Top-K keeping {} of the gradient", format_ratio(ratio));
  v.sets = {fmt::format("sync.compression={{method: topk, ratio: {:g}{}}}", ratio, b.compression_keys)};
  return v;
}

std::vector<double> topk_ladder() { return {0.1, 0.05, 0.02, 0.01, 0.005, 0.002, 0.001}; }

std::optional<double> next_topk_probe(double failing, double passing) {
  if (!(failing > 0.0 && passing > 0.0) || failing <= passing * 1.25) return std::nullopt;
  // Through the decimal text, so 0.0084 is 0.0084 and not 0.008400000000000001.
  const double rounded = std::stod(fmt::format("{:.2g}", std::sqrt(failing * passing)));
  if (rounded >= failing || rounded <= passing) return std::nullopt;
  return rounded;
}

double AdviceOutcome::exposed_share() const {
  return step_time_s > 0.0 ? exposed_comm_s / step_time_s : 0.0;
}

bool AdviceOutcome::under_rule() const { return exposed_share() <= kCommunicationBoundShare; }

std::optional<std::uint32_t> next_accumulation_probe(std::uint32_t failing, std::uint32_t passing) {
  if (passing <= failing + 1) return std::nullopt;
  return failing + (passing - failing) / 2;
}

ScalingSummary summarize_scaling(std::vector<ScalingPoint> curve) {
  ScalingSummary s;
  std::sort(curve.begin(), curve.end(),
            [](const ScalingPoint& a, const ScalingPoint& b) { return a.nodes < b.nodes; });
  s.curve = std::move(curve);
  if (s.curve.empty()) return s;
  const ScalingPoint* peak = &s.curve.front();
  const ScalingPoint* one = nullptr;
  std::optional<double> lowest_cost;
  for (const ScalingPoint& p : s.curve) {
    if (p.outcome.samples_per_s > peak->outcome.samples_per_s) peak = &p;
    if (p.nodes == 1) one = &p;
    if (p.outcome.cost_per_sample && (!lowest_cost || *p.outcome.cost_per_sample < *lowest_cost)) {
      lowest_cost = p.outcome.cost_per_sample;
      s.lowest_cost_nodes = p.nodes;
    }
  }
  s.peak_nodes = peak->nodes;
  if (lowest_cost) {
    const ScalingPoint* cheapest = nullptr;
    for (const ScalingPoint& p : s.curve)
      if (p.outcome.cost_per_sample && *p.outcome.cost_per_sample <= *lowest_cost * 1.01 &&
          (!cheapest || p.outcome.samples_per_s > cheapest->outcome.samples_per_s))
        cheapest = &p;
    s.cheapest_nodes = cheapest->nodes;
  }
  if (one)
    for (const ScalingPoint& p : s.curve)
      if (p.nodes > 1 && p.outcome.samples_per_s > one->outcome.samples_per_s) {
        s.breakeven_nodes = p.nodes;
        break;
      }
  // Doublings: n → 2n both on the curve. The first, 1 → 2, also adds the network (its cost is
  // what breakeven reports): when it falls short, the run of doublings is counted from 2.
  for (const ScalingPoint& p : s.curve) {
    const auto twice = std::find_if(s.curve.begin(), s.curve.end(),
                                    [&](const ScalingPoint& q) { return q.nodes == 2 * p.nodes; });
    if (twice == s.curve.end() || p.outcome.samples_per_s <= 0.0) continue;
    if (twice->outcome.samples_per_s >= 1.5 * p.outcome.samples_per_s) {
      s.diminishing_after = twice->nodes;
      if (!s.pays_from) s.pays_from = p.nodes;
    } else if (p.nodes == 1 && !s.diminishing_after) {
      s.one_to_two_gain = twice->outcome.samples_per_s / p.outcome.samples_per_s;
      continue;
    } else {
      break;
    }
  }
  return s;
}

std::vector<RankedVariant> drop_dominated_networks(std::vector<RankedVariant>& variants,
                                                   double baseline_samples_per_s, double margin) {
  std::vector<RankedVariant> kept, dropped;
  double best = baseline_samples_per_s;
  for (RankedVariant& v : variants) {
    if (v.variant.kind != AdviceKind::Fabric || v.variant.same_speed) {
      kept.push_back(std::move(v));
      continue;
    }
    if (v.outcome.samples_per_s > best * (1.0 + margin)) {
      best = v.outcome.samples_per_s;
      kept.push_back(std::move(v));
    } else {
      dropped.push_back(std::move(v));
    }
  }
  variants = std::move(kept);
  return dropped;
}

std::vector<RankedVariant> drop_unchanged_algorithms(std::vector<RankedVariant>& variants,
                                                     const AdviceBaseline& b,
                                                     double baseline_step_time_s) {
  std::vector<RankedVariant> kept, dropped;
  for (RankedVariant& v : variants) {
    const bool same = b.algorithm == SyncAlgorithm::Auto && v.variant.kind == AdviceKind::Algorithm &&
                      std::abs(v.outcome.step_time_s - baseline_step_time_s) <=
                          1e-9 * baseline_step_time_s;
    (same ? dropped : kept).push_back(std::move(v));
  }
  variants = std::move(kept);
  return dropped;
}

std::vector<RankedVariant> rank_variants(const AdviceOutcome& baseline,
                                         std::vector<RankedVariant> variants,
                                         AdviceRanking ranking) {
  for (RankedVariant& v : variants)
    v.gain = baseline.samples_per_s > 0.0 ? v.outcome.samples_per_s / baseline.samples_per_s - 1.0
                                          : 0.0;
  const auto by_samples = [](const RankedVariant& a, const RankedVariant& b) {
    return a.outcome.samples_per_s > b.outcome.samples_per_s;
  };
  if (ranking == AdviceRanking::SamplesPerSecond) {
    std::stable_sort(variants.begin(), variants.end(), by_samples);
  } else {
    std::stable_sort(variants.begin(), variants.end(),
                     [&](const RankedVariant& a, const RankedVariant& b) {
                       const auto& ca = a.outcome.cost_per_sample;
                       const auto& cb = b.outcome.cost_per_sample;
                       if (ca && cb) return *ca < *cb;
                       if (ca || cb) return ca.has_value();
                       return by_samples(a, b);
                     });
  }
  return variants;
}

}  // namespace gradsync
