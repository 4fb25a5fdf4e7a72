// The outputs of `gradsync advise` (advise_report.hpp): the advisor's baseline read off a loaded
// scenario, outcomes read back from `run --json`, and the advice as text and JSON.
#include "gradsync/report/advise_report.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "gradsync/scenario/communication_rule.hpp"
#include "gradsync/report/run_json.hpp"
#include "gradsync/units/units.hpp"

namespace gradsync {
namespace {

using Json = nlohmann::ordered_json;

std::string gain_text(double gain) {
  if (gain >= 1.0) return fmt::format("×{:.2f}", gain + 1.0);
  return fmt::format("{:+.1f} %", 100.0 * gain);
}

Json outcome_json(const AdviceOutcome& o) {
  Json j{{"step_time_s", o.step_time_s},
         {"samples_per_s", o.samples_per_s},
         {"exposed_comm_s", o.exposed_comm_s},
         {"exposed_comm_share", o.exposed_share()},
         {"gpus", o.gpus},
         {"nodes", o.nodes},
         {"grad_bytes_per_sync", o.grad_bytes_per_sync},
         {"wire_bytes_per_sync", o.wire_bytes_per_sync},
         {"verdict", o.verdict},
         {"bottleneck", o.bottleneck.empty() ? Json(nullptr) : Json(o.bottleneck)}};
  j["cost_per_sample"] = o.cost_per_sample ? Json(*o.cost_per_sample) : Json(nullptr);
  return j;
}

}  // namespace

AdviceBaseline advice_baseline(const LoadedScenario& loaded) {
  AdviceBaseline b;
  const Scenario& sc = loaded.scenario;
  b.scenario_gpus = sc.gpus;
  b.strategy = sc.sync.strategy;
  b.algorithm = sc.sync.algorithm;
  b.overlap = sc.sync.overlap;
  b.accumulation = sc.training.accumulation;
  b.compression = sc.sync.compression.method;
  const CompressionSpec& comp = sc.sync.compression;
  if (comp.encode_rate) b.compression_keys += fmt::format(", encode_rate: {:.17g}B/s", comp.encode_rate->bytes_per_second());
  if (comp.decode_rate) b.compression_keys += fmt::format(", decode_rate: {:.17g}B/s", comp.decode_rate->bytes_per_second());
  if (comp.error_feedback) b.compression_keys += ", error_feedback: true";
  b.nccl = loaded.topology.topology.software() == SoftwareModel::Nccl;
  b.parallel = sc.parallel;
  b.transformer = sc.model.hidden > 0.0 && sc.model.seq_len > 0.0;
  b.gpus = sc.gpus.value_or(static_cast<std::uint32_t>(loaded.topology.topology.gpu_count()));
  if (const auto& c = loaded.topology.cluster) {
    b.cluster_template = true;
    b.nodes = c->nodes;
    b.gpus_per_node = c->node.gpus;
    b.nics_per_node = c->node.nics;
    b.nic_bandwidth = c->node.nic_bandwidth;
    if (c->network) {
      b.network_fabric = c->network->fabric;
      b.network_sharp = c->network->sharp;
      b.nic_p2p = c->node.nic_p2p;
    }
    if (c->cost) {
      b.has_cost = true;
      b.cost_is_quoted = c->cost->total_override > 0.0;
      b.network_prices = c->cost->networks;
    }
  } else {
    b.nodes = static_cast<int>(loaded.topology.topology.node_count());
    b.gpus_per_node = b.nodes > 0 ? static_cast<int>(loaded.topology.topology.gpus().size()) /
                                        b.nodes
                                  : 0;
    b.has_cost = loaded.topology.topology.cost().has_value();
  }
  // A scenario using the first N GPUs occupies the servers they fill, in order.
  if (sc.gpus && b.gpus_per_node > 0) {
    const auto per = static_cast<std::uint32_t>(b.gpus_per_node);
    b.nodes = std::min(b.nodes, static_cast<int>((*sc.gpus + per - 1) / per));
    b.whole_servers = *sc.gpus % per == 0;
  }
  return b;
}

AdviceOutcome advice_outcome_from_run_json(const nlohmann::json& j) {
  AdviceOutcome o;
  o.step_time_s = j.at(run_json::kStepTime).get<double>();
  o.samples_per_s = j.at(run_json::kSamplesPerS).get<double>();
  o.exposed_comm_s = j.at(run_json::kExposedComm).get<double>();
  o.grad_bytes_per_sync = j.at(run_json::kGradBytes).get<double>();
  o.wire_bytes_per_sync = j.at(run_json::kWireBytes).get<double>();
  o.gpus = j.at(run_json::kGpus).get<int>();
  o.nodes = j.at(run_json::kNodes).get<int>();
  if (j.contains(run_json::kCostPerSample) && j[run_json::kCostPerSample].is_number())
    o.cost_per_sample = j[run_json::kCostPerSample].get<double>();
  if (j.contains(run_json::kClusterCost) && j[run_json::kClusterCost].is_number())
    o.cluster_cost = j[run_json::kClusterCost].get<double>();
  o.verdict = j.value(run_json::kVerdict, "");
  if (j.contains(run_json::kFitsInMemory) && j[run_json::kFitsInMemory].is_boolean())
    o.fits_in_memory = j[run_json::kFitsInMemory].get<bool>();
  if (j.contains(run_json::kMemoryPerGpu) && j[run_json::kMemoryPerGpu].is_object())
    o.memory_per_gpu_bytes = j[run_json::kMemoryPerGpu].value(run_json::kMemoryTotal, 0.0);
  if (j.contains(run_json::kGpuMemory) && j[run_json::kGpuMemory].is_number())
    o.gpu_memory_bytes = j[run_json::kGpuMemory].get<double>();
  if (j.contains(run_json::kBottleneck) && j[run_json::kBottleneck].is_object())
    o.bottleneck = j[run_json::kBottleneck].value(run_json::kBottleneckLink, "");
  return o;
}

std::vector<std::string> advice_run_args(const std::string& scenario_file,
                                         const std::vector<std::string>& baseline_sets,
                                         const std::vector<std::string>& variant_sets,
                                         const std::vector<std::string>& cfg) {
  std::vector<std::string> args{"run", scenario_file};
  for (const auto* list : {&baseline_sets, &variant_sets})
    for (const std::string& s : *list) {
      args.emplace_back("--set");
      args.push_back(s);
    }
  for (const std::string& c : cfg) {
    args.emplace_back("--cfg");
    args.push_back(c);
  }
  args.emplace_back("--json");
  return args;
}

AdviceTrial advice_trial_from_run_output(const std::string& run_stdout) {
  AdviceTrial t;
  const auto j = nlohmann::json::parse(run_stdout, nullptr, /*allow_exceptions=*/false);
  try {
    t.outcome = advice_outcome_from_run_json(j);
  } catch (const nlohmann::json::exception&) {
    t.error = "the run printed no usable JSON";
  }
  return t;
}

std::string advice_text(const LoadedScenario& loaded, const AdviceBaseline& b, const Advice& a,
                        AdviceRanking ranking) {
  std::string out;
  const AdviceOutcome& base = a.baseline;
  out += fmt::format("advise: {} ({} GPUs on {} node{}, topology {})\n", loaded.scenario.name,
                     base.gpus, base.nodes, base.nodes == 1 ? "" : "s",
                     loaded.topology.topology.name());
  out += fmt::format(
      "baseline: step {}, {:.1f} samples/s, exposed communication {} of the step ({}){}\n",
      format_time(Seconds(base.step_time_s)), base.samples_per_s, format_percent(base.exposed_share()),
      base.verdict, base.bottleneck.empty() ? "" : "; busiest link " + base.bottleneck);
  const bool priced = base.cost_per_sample.has_value();
  if (priced) out += fmt::format("          {:.4g} per sample\n", *base.cost_per_sample);

  std::size_t width = 6;
  for (const RankedVariant& r : a.ranked) width = std::max(width, r.variant.change.size());
  out += fmt::format("\nwhat-ifs, best first by {}:\n",
                     ranking == AdviceRanking::CostPerSample ? "cost per sample" : "samples/s");
  out += fmt::format("  {:>3}  {:<{}}  {:>10}  {:>12}  {:>8}  {:>7}{}\n", "#", "change", width,
                     "step", "samples/s", "gain", "exposed", priced ? "  cost/sample" : "");
  bool footnote = false;
  for (std::size_t i = 0; i < a.ranked.size(); ++i) {
    const RankedVariant& r = a.ranked[i];
    std::string cost;
    if (priced) {
      cost = r.outcome.cost_per_sample ? fmt::format("  {:>11.4g}", *r.outcome.cost_per_sample)
                                       : fmt::format("  {:>11}", "-");
      if (r.variant.same_prices && r.outcome.cost_per_sample) {
        cost += "*";
        footnote = true;
      }
    }
    out +=
        fmt::format("  {:>3}  {:<{}}  {:>10}  {:>12.1f}  {:>8}  {:>7}{}\n", i + 1, r.variant.change,
                    width, format_time(Seconds(r.outcome.step_time_s)), r.outcome.samples_per_s,
                    gain_text(r.gain), format_percent(r.outcome.exposed_share()), cost);
  }
  if (footnote)
    out += "  * priced with the topology's cost: as written (the old NIC and switch prices)\n";

  if (!a.unchanged.empty()) {
    out += "  not listed, what auto already runs here:";
    for (std::size_t i = 0; i < a.unchanged.size(); ++i)
      out += (i ? ", " : " ") + a.unchanged[i].variant.change;
    out += "\n";
  }
  if (!a.no_better.empty()) {
    out += fmt::format("  not listed, no more than {:g} % over a slower network:",
                       kAdviceNetworkMargin * 100.0);
    for (std::size_t i = 0; i < a.no_better.size(); ++i)
      out += (i ? ", " : " ") +
             a.no_better[i].variant.change.substr(a.no_better[i].variant.change.find("→") +
                                                  std::string("→ ").size());
    out += "\n";
  }

  if (!a.networks.empty()) {
    if (a.cheapest_network) {
      const NetworkOption& n = a.networks[*a.cheapest_network];
      const bool by_price =
          std::all_of(a.networks.begin(), a.networks.end(), [](const NetworkOption& option) {
            return !option.outcome.under_rule() ||
                   (option.own_prices && option.outcome.cluster_cost);
          });
      out += fmt::format(
          "  cheapest network that meets the {} rule: {}{} (step {}, exposed {}){}{}\n",
          format_percent(kCommunicationBoundShare), n.label, n.baseline ? ", the baseline's" : "",
          format_time(Seconds(n.outcome.step_time_s)), format_percent(n.outcome.exposed_share()),
          n.baseline || base.samples_per_s <= 0.0
              ? std::string()
              : "; " + gain_text(n.outcome.samples_per_s / base.samples_per_s - 1.0) + " samples/s",
          by_price ? fmt::format(
                         "; cluster {:.0f} {} (cost.networks prices)", *n.outcome.cluster_cost,
                         loaded.topology.topology.cost() ? loaded.topology.topology.cost()->currency
                                                         : "")
                   : std::string());
    } else {
      const auto least = std::min_element(
          a.networks.begin(), a.networks.end(), [](const NetworkOption& x, const NetworkOption& y) {
            return x.outcome.exposed_share() < y.outcome.exposed_share();
          });
      out += fmt::format("  no network tried meets the {} rule (least exposed: {}, {})\n",
                         format_percent(kCommunicationBoundShare), least->label,
                         format_percent(least->outcome.exposed_share()));
    }
  }

  if (!a.scaling.curve.empty()) {
    out += "\nscaling (samples/s by servers):";
    for (const ScalingPoint& p : a.scaling.curve)
      out += fmt::format(" {}: {:.0f}", p.nodes, p.outcome.samples_per_s);
    out += "\n";
    const ScalingSummary& s = a.scaling;
    out += fmt::format("  most samples/s at {} server{} of those tried\n", s.peak_nodes,
                       s.peak_nodes == 1 ? "" : "s");
    if (s.breakeven_nodes) {
      if (*s.breakeven_nodes > 2)
        out += fmt::format(
            "  breakeven: {} servers are needed to beat one server (fewer "
            "are SLOWER than one)\n",
            *s.breakeven_nodes);
      else
        out += "  breakeven: 2 servers already beat one\n";
    } else if (s.curve.size() > 1) {
      out += "  breakeven: no server count tried beats one server — fix the network first\n";
    }
    if (s.diminishing_after && s.one_to_two_gain)
      out += fmt::format(
          "  scaling pays from {} up to {} servers (each doubling gives ≥ "
          "1.5× the samples/s; 1 → 2, which adds the network, gives "
          "{:.2f}×)\n",
          s.pays_from.value_or(2), *s.diminishing_after, *s.one_to_two_gain);
    else if (s.diminishing_after)
      out += fmt::format(
          "  scaling pays up to {} servers (each doubling until there gives "
          "≥ 1.5× the samples/s)\n",
          *s.diminishing_after);
    else if (s.curve.size() > 1)
      out += "  scaling does not pay: no doubling of servers gives 1.5× the samples/s\n";
    if (s.cheapest_nodes && s.cheapest_nodes == s.lowest_cost_nodes)
      out += fmt::format("  lowest cost per sample at {} server{}\n", *s.cheapest_nodes,
                         *s.cheapest_nodes == 1 ? "" : "s");
    else if (s.cheapest_nodes && s.lowest_cost_nodes)
      out += fmt::format(
          "  lowest cost per sample at {} server{}; {} server{} cost{} within "
          "1 % of it per sample and give the most samples/s\n",
          *s.lowest_cost_nodes, *s.lowest_cost_nodes == 1 ? "" : "s", *s.cheapest_nodes,
          *s.cheapest_nodes == 1 ? "" : "s", *s.cheapest_nodes == 1 ? "s" : "");
  }

  out += fmt::format("\n{} rule (exposed communication ≤ {} of the step):\n", "30 %",
                     format_percent(kCommunicationBoundShare));
  if (a.rule_met_already) {
    out += "  already met: no accumulation or compression needed\n";
  } else {
    if (a.accumulation_needed)
      out += fmt::format("  accumulation needed: {} micro-batches per step (now {})\n",
                         *a.accumulation_needed, b.accumulation);
    if (a.topk_ratio_needed)
      out += fmt::format(
          "  compression needed: Top-K keeping {:g} % of the gradient ({:.1f}× fewer bytes on "
          "the wire)\n",
          *a.topk_ratio_needed * 100.0, a.compression_ratio_needed.value_or(0.0));
  }
  for (const std::string& n : a.notes) out += "  " + n + "\n";
  if (!a.not_applicable.empty()) {
    out += "\nnot simulated (the change does not apply to this scenario):\n";
    for (const auto& [v, why] : a.not_applicable) out += fmt::format("  {}: {}\n", v.change, why);
  }
  return out;
}

Json advice_json(const LoadedScenario& loaded, const Advice& a, std::size_t simulations,
                 double wall_s) {
  Json variants = Json::array();
  for (const RankedVariant& r : a.ranked) {
    Json v{{"change", r.variant.change},
           {"kind", std::string(to_string(r.variant.kind))},
           {"sets", r.variant.sets},
           {"step_time_s", r.outcome.step_time_s},
           {"samples_per_s", r.outcome.samples_per_s},
           {"gain", r.gain},
           {"speedup", 1.0 + r.gain}};  // the text's ×N.NN (samples/s over the baseline's)
    const Json measured = outcome_json(r.outcome);  // kept alive: items() is a view
    for (const auto& [k, val] : measured.items())
      if (!v.contains(k)) v[k] = val;
    v["same_prices"] = r.variant.same_prices;
    variants.push_back(std::move(v));
  }
  Json curve = Json::array();
  for (const ScalingPoint& p : a.scaling.curve)
    curve.push_back({{"nodes", p.nodes}, {"gpus", p.outcome.gpus},
                     {"step_time_s", p.outcome.step_time_s},
                     {"samples_per_s", p.outcome.samples_per_s},
                     {"cost_per_sample", p.outcome.cost_per_sample
                                             ? Json(*p.outcome.cost_per_sample)
                                             : Json(nullptr)}});
  auto opt = [](const auto& x) { return x ? Json(*x) : Json(nullptr); };
  Json unchanged = Json::array();
  for (const RankedVariant& r : a.unchanged)
    unchanged.push_back({{"change", r.variant.change}, {"sets", r.variant.sets}});
  Json no_better = Json::array();
  for (const RankedVariant& r : a.no_better)
    no_better.push_back({{"change", r.variant.change}, {"sets", r.variant.sets},
                         {"samples_per_s", r.outcome.samples_per_s}});
  Json networks = Json::array();
  for (const NetworkOption& n : a.networks)
    networks.push_back({{"network", n.label}, {"fabric", std::string(to_string(n.fabric))},
                        {"gbps", n.gbps}, {"baseline", n.baseline}, {"sets", n.sets},
                        {"step_time_s", n.outcome.step_time_s},
                        {"samples_per_s", n.outcome.samples_per_s},
                        {"exposed_comm_share", n.outcome.exposed_share()},
                        {"meets_rule", n.outcome.under_rule()}});
  Json skipped = Json::array();
  for (const auto& [v, why] : a.not_applicable)
    skipped.push_back({{"change", v.change}, {"sets", v.sets}, {"error", why}});
  return Json{{"scenario", loaded.scenario.name},
              {"topology", loaded.topology.topology.name()},
              {"baseline", outcome_json(a.baseline)},
              {"variants", std::move(variants)},
              {"scaling",
               {{"curve", std::move(curve)},
                {"peak_nodes", a.scaling.curve.empty() ? Json(nullptr) : Json(a.scaling.peak_nodes)},
                {"breakeven_nodes", opt(a.scaling.breakeven_nodes)},
                {"pays_up_to_nodes", opt(a.scaling.diminishing_after)},
                {"pays_from_nodes", opt(a.scaling.pays_from)},
                {"cheapest_nodes", opt(a.scaling.cheapest_nodes)},
                {"lowest_cost_nodes", opt(a.scaling.lowest_cost_nodes)}}},
              {"rule",
               {{"exposed_share_limit", kCommunicationBoundShare},
                {"met_by_baseline", a.rule_met_already},
                {"accumulation_needed", opt(a.accumulation_needed)},
                {"topk_ratio_needed", opt(a.topk_ratio_needed)},
                {"compression_ratio_needed", opt(a.compression_ratio_needed)}}},
              {"notes", a.notes},
              {"networks", std::move(networks)},
              {"cheapest_network_meeting_rule",
               a.cheapest_network ? Json(a.networks[*a.cheapest_network].label) : Json(nullptr)},
              {"no_better_than_slower_network", std::move(no_better)},
              {"same_as_auto", std::move(unchanged)},
              {"not_applicable", std::move(skipped)},
              {"simulations", simulations},
              {"wall_s", wall_s}};
}

}  // namespace gradsync
