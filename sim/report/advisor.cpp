// The advisor (include/gradsync/report/advisor.hpp).
#include "gradsync/report/advisor.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "gradsync/scenario/communication_rule.hpp"
#include "gradsync/units/units.hpp"

namespace gradsync {

Advice advise(const AdviceBaseline& b, const AdviseOptions& o, const AdviceRunner& run) {
  Advice a;
  // The baseline alone first: if it cannot run, nothing else can.
  {
    const std::vector<AdviceTrial> base = run({{}});
    if (!base[0].outcome) throw AdviceBaselineError(base[0].error);
    a.baseline = *base[0].outcome;
  }
  a.rule_met_already = a.baseline.under_rule();

  // Everything that needs no search, in one batch.
  std::vector<AdviceVariant> variants = plan_advice_variants(b);
  const std::size_t fixed = variants.size();
  const std::vector<int> counts = scaling_node_counts(b, o.max_nodes);
  std::vector<int> variant_nodes;  // the server count of variants[fixed + i]
  for (int n : counts)
    if (n != b.nodes || !b.whole_servers) {
      variants.push_back(nodes_variant(b, n));
      variant_nodes.push_back(n);
    }
  const std::size_t nodes_end = variants.size();
  std::vector<std::uint32_t> acc_ladder;
  std::vector<double> topk;
  if (!a.rule_met_already) {
    acc_ladder = accumulation_ladder(b);
    for (std::uint32_t k : acc_ladder) variants.push_back(accumulation_variant(b, k));
    if (b.compression != CompressionMethod::TopK && b.parallel.plain()) {
      topk = topk_ladder();
      for (double r : topk) variants.push_back(topk_variant(b, r));
    }
  }
  std::vector<std::vector<std::string>> batch;
  for (const AdviceVariant& v : variants) batch.push_back(v.sets);
  const std::vector<AdviceTrial> trials = run(batch);

  std::vector<RankedVariant> results;
  auto keep = [&](const AdviceVariant& v, const AdviceTrial& t) {
    if (t.outcome && t.outcome->fits_in_memory && !*t.outcome->fits_in_memory)
      a.not_applicable.emplace_back(
          v, fmt::format("does not fit in memory: {} per GPU needed, the GPU has {}",
                         format_size(Bytes(t.outcome->memory_per_gpu_bytes)),
                         format_size(Bytes(t.outcome->gpu_memory_bytes))));
    else if (t.outcome) results.push_back({v, *t.outcome, 0.0});
    else a.not_applicable.emplace_back(v, t.error);
  };
  for (std::size_t i = 0; i < nodes_end; ++i) keep(variants[i], trials[i]);

  // The scaling curve: the baseline's own count and every other count that ran.
  std::vector<ScalingPoint> curve;
  if (!counts.empty() && b.whole_servers) curve.push_back({b.nodes, a.baseline});
  for (std::size_t i = fixed; i < nodes_end; ++i)
    if (trials[i].outcome) curve.push_back({variant_nodes[i - fixed], *trials[i].outcome});
  a.scaling = summarize_scaling(std::move(curve));

  // Accumulation: the first power of two that meets the rule, then bisect down to the
  // smallest integer that does.
  std::size_t at = nodes_end;
  if (!acc_ladder.empty()) {
    std::uint32_t failing = b.accumulation;
    std::optional<std::uint32_t> passing;
    std::optional<RankedVariant> best;
    for (std::size_t i = 0; i < acc_ladder.size(); ++i, ++at) {
      const AdviceTrial& t = trials[at];
      if (!t.outcome) {
        if (!passing) a.not_applicable.emplace_back(variants[at], t.error);
        continue;
      }
      if (passing) continue;
      if (t.outcome->under_rule()) {
        passing = acc_ladder[i];
        best = RankedVariant{variants[at], *t.outcome, 0.0};
      } else {
        failing = acc_ladder[i];
      }
    }
    if (passing)
      bisect_threshold(failing, *passing, *best, next_accumulation_probe,
                       [&](std::uint32_t k) { return accumulation_variant(b, k); }, run);
    if (best) {
      a.accumulation_needed = passing;
      results.push_back(*best);
    } else {
      a.notes.push_back(fmt::format(
          "no accumulation up to {} micro-batches per step brings exposed communication under "
          "{}",
          kMaxAdviceAccumulation, format_percent(kCommunicationBoundShare)));
    }
  }

  // Top-K: the largest keep-ratio (least compression) that meets the rule, refined between
  // the ladder's last failing and first passing ratios.
  if (!topk.empty()) {
    double failing = 1.0;
    std::optional<RankedVariant> best;
    for (std::size_t i = 0; i < topk.size(); ++i, ++at) {
      const AdviceTrial& t = trials[at];
      if (best) continue;
      if (!t.outcome) {
        a.not_applicable.emplace_back(variants[at], t.error);
        continue;
      }
      if (t.outcome->under_rule()) {
        a.topk_ratio_needed = topk[i];
        best = RankedVariant{variants[at], *t.outcome, 0.0};
      } else {
        failing = topk[i];
      }
    }
    if (best)
      bisect_threshold(failing, *a.topk_ratio_needed, *best, next_topk_probe,
                       [&](double r) { return topk_variant(b, r); }, run);
    if (best) {
      if (best->outcome.wire_bytes_per_sync > 0.0)
        a.compression_ratio_needed =
            best->outcome.grad_bytes_per_sync / best->outcome.wire_bytes_per_sync;
      results.push_back(*best);
    } else {
      a.notes.push_back(fmt::format(
          "no Top-K keep-ratio down to {} brings exposed communication under {}",
          fmt::format("{:g} %", topk.back() * 100.0), format_percent(kCommunicationBoundShare)));
    }
  }

  if (!b.cluster_template)
    a.notes.push_back("the topology is an explicit graph: server count, NICs and network "
                      "what-ifs need a cluster template (edit the graph to try them)");
  // Networks: the baseline's and every one simulated; slower ones only answer "which cheaper
  // network still meets the rule", they are not ranked.
  if (b.network_fabric && std::any_of(results.begin(), results.end(), [](const RankedVariant& r) {
        return r.variant.kind == AdviceKind::Fabric;
      })) {
    a.networks.push_back({network_label(*b.network_fabric, b.nic_bandwidth), *b.network_fabric,
                          b.nic_bandwidth.bytes_per_second() * 8.0 / 1e9, true,
                          b.has_cost && !b.cost_is_quoted, a.baseline, {}});
    for (const RankedVariant& r : results)
      if (r.variant.kind == AdviceKind::Fabric && r.variant.network_fabric)
        a.networks.push_back({network_label(*r.variant.network_fabric,
                                            BytesPerSecond(r.variant.network_gbps * 1e9 / 8.0)),
                              *r.variant.network_fabric, r.variant.network_gbps, false,
                              !r.variant.same_prices, r.outcome, r.variant.sets});
    a.cheapest_network = cheapest_network_meeting_rule(a.networks);
  }
  results.erase(std::remove_if(results.begin(), results.end(),
                               [](const RankedVariant& r) { return r.variant.slower_network; }),
                results.end());
  a.no_better = drop_dominated_networks(results, a.baseline.samples_per_s);
  a.unchanged = drop_unchanged_algorithms(results, b, a.baseline.step_time_s);
  a.ranked = rank_variants(a.baseline, std::move(results),
                           o.ranking);
  return a;
}

}  // namespace gradsync
