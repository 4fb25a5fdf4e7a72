// The advisor's pure parts (advise.hpp): which what-ifs it proposes, how it reads a scaling
// curve back, the accumulation bisection, and the ranking.
#include <doctest/doctest.h>

#include <algorithm>
#include <optional>
#include <cmath>
#include <string>

#include "gradsync/report/advise.hpp"
#include "gradsync/report/advisor.hpp"

using namespace gradsync;

namespace {

AdviceBaseline two_servers_on_10gbe() {
  AdviceBaseline b;
  b.cluster_template = true;
  b.nodes = 2;
  b.gpus_per_node = 4;
  b.nics_per_node = 1;
  b.network_fabric = Fabric::Ethernet;
  b.nic_bandwidth = BytesPerSecond(10e9 / 8.0);
  return b;
}

bool has_set(const std::vector<AdviceVariant>& vs, const std::string& set) {
  return std::any_of(vs.begin(), vs.end(), [&](const AdviceVariant& v) {
    return std::find(v.sets.begin(), v.sets.end(), set) != v.sets.end();
  });
}

AdviceOutcome outcome(double samples_per_s, double step_s = 1.0, double exposed_s = 0.0) {
  AdviceOutcome o;
  o.samples_per_s = samples_per_s;
  o.step_time_s = step_s;
  o.exposed_comm_s = exposed_s;
  return o;
}

}  // namespace

TEST_CASE("advise: faster networks ranked, each with its own fabric's efficiency") {
  const auto vs = plan_advice_variants(two_servers_on_10gbe());
  CHECK(has_set(vs, "topology_overrides.node.nic_bandwidth=25Gbps"));
  CHECK(has_set(vs, "topology_overrides.node.nic_bandwidth=100Gbps"));
  CHECK(has_set(vs, "topology_overrides.network.fabric=infiniband"));
  CHECK(has_set(vs, "topology_overrides.network.efficiency=0.96"));  // IB default
  CHECK_FALSE(has_set(vs, "topology_overrides.node.nic_bandwidth=10Gbps"));  // not faster
  // One NIC per GPU, since 4 GPUs share one NIC.
  CHECK(has_set(vs, "topology_overrides.node.nics=4"));
  // The other overlaps, algorithms and strategy; quantization since there is none.
  CHECK(has_set(vs, "sync.overlap=none"));
  CHECK_FALSE(has_set(vs, "sync.overlap=bucketed"));  // the baseline's own
  CHECK(has_set(vs, "sync.algorithm=ring"));
  CHECK(has_set(vs, "sync.strategy=ps"));
  CHECK(has_set(vs, "sync.ps.servers=2"));
  CHECK(has_set(vs, "sync.compression={method: int8}"));

  // At the same line rate, only a better fabric: RoCE and InfiniBand at 100 Gb/s over 100 GbE.
  AdviceBaseline e100 = two_servers_on_10gbe();
  e100.nic_bandwidth = BytesPerSecond(100e9 / 8.0);
  const auto up = plan_advice_variants(e100);
  int at_100 = 0;
  for (const AdviceVariant& v : up)
    if (v.kind == AdviceKind::Fabric &&
        std::find(v.sets.begin(), v.sets.end(), "topology_overrides.node.nic_bandwidth=100Gbps") !=
            v.sets.end())
      ++at_100;
  CHECK(at_100 == 2);
}

TEST_CASE("advise: InfiniBand SHARP as a what-if where NCCL could use it") {
  AdviceBaseline ib = two_servers_on_10gbe();
  ib.network_fabric = Fabric::InfiniBand;
  ib.nccl = true;
  const std::string sharp = "topology_overrides.network.sharp=true";
  const auto vs = plan_advice_variants(ib);
  CHECK(has_set(vs, sharp));
  for (const AdviceVariant& v : vs)
    if (v.kind == AdviceKind::Sharp) CHECK(v.same_prices);
  // Not where the switches already reduce, not off InfiniBand, not without NCCL (CollNet and
  // NVLS are NCCL's), not with a parallel layout (CollNet runs plain data parallelism).
  AdviceBaseline on = ib;
  on.network_sharp = true;
  CHECK_FALSE(has_set(plan_advice_variants(on), sharp));
  CHECK_FALSE(has_set(plan_advice_variants(two_servers_on_10gbe()), sharp));
  AdviceBaseline none = ib;
  none.nccl = false;
  CHECK_FALSE(has_set(plan_advice_variants(none), sharp));
  AdviceBaseline tp = ib;
  tp.parallel.tensor = 2;
  CHECK_FALSE(has_set(plan_advice_variants(tp), sharp));
  CHECK(to_string(AdviceKind::Sharp) == "sharp");
}

TEST_CASE("advise: GPU-NIC peer to peer as a what-if where the topology turns it at the CPU") {
  AdviceBaseline acs = two_servers_on_10gbe();
  acs.nic_p2p = false;
  const std::string gdr = "topology_overrides.node.pcie.p2p=true";
  const auto vs = plan_advice_variants(acs);
  CHECK(has_set(vs, gdr));
  for (const AdviceVariant& v : vs)
    if (v.kind == AdviceKind::Gdr) CHECK(v.same_prices);
  // Not where it is already on, nor without a network (one server has no NIC traffic).
  CHECK_FALSE(has_set(plan_advice_variants(two_servers_on_10gbe()), gdr));
  AdviceBaseline one = acs;
  one.nodes = 1;
  one.network_fabric.reset();
  CHECK_FALSE(has_set(plan_advice_variants(one), gdr));
  CHECK(to_string(AdviceKind::Gdr) == "gdr");
}

TEST_CASE("advise: one server has no network, NIC or hierarchical what-ifs") {
  AdviceBaseline one;
  one.cluster_template = true;
  one.nodes = 1;
  one.gpus_per_node = 8;
  const auto vs = plan_advice_variants(one);
  for (const AdviceVariant& v : vs) {
    CHECK(v.kind != AdviceKind::Fabric);
    CHECK(v.kind != AdviceKind::Nics);
  }
  CHECK_FALSE(has_set(vs, "sync.algorithm=hierarchical"));
  // Scaling still tries more servers.
  CHECK(scaling_node_counts(one, 64) == std::vector<int>{1, 2, 4, 8});
}

TEST_CASE("advise: scaling counts are powers of two up to 4x, with the baseline's own") {
  AdviceBaseline b = two_servers_on_10gbe();
  b.nodes = 3;
  CHECK(scaling_node_counts(b, 64) == std::vector<int>{1, 2, 3, 4, 8});
  CHECK(scaling_node_counts(b, 4) == std::vector<int>{1, 2, 3, 4});
  b.cluster_template = false;
  CHECK(scaling_node_counts(b, 64).empty());
  const AdviceVariant v = nodes_variant(two_servers_on_10gbe(), 8);
  CHECK(v.sets == std::vector<std::string>{"topology_overrides.nodes=8"});
  CHECK(v.change.find("32 GPUs") != std::string::npos);
  AdviceBaseline first_gpus = two_servers_on_10gbe();
  first_gpus.scenario_gpus = 8;
  CHECK(has_set({nodes_variant(first_gpus, 4)}, "gpus=16"));
}

TEST_CASE("advise: a second server on a slow network is slower, breakeven further out") {
  // One server 9829 samples/s; two on 1 GbE 2247; four 3047; eight 10500.
  std::vector<ScalingPoint> curve{{4, outcome(3047)}, {1, outcome(9829)}, {2, outcome(2247)},
                                  {8, outcome(10500)}};
  const ScalingSummary s = summarize_scaling(curve);
  CHECK(s.curve.front().nodes == 1);
  CHECK(s.peak_nodes == 8);
  REQUIRE(s.breakeven_nodes);
  CHECK(*s.breakeven_nodes == 8);
  CHECK_FALSE(s.diminishing_after);  // 1 -> 2 already loses

  // Linear up to 4, then 4 -> 8 gives 1.2x: scaling pays up to 4.
  const ScalingSummary t = summarize_scaling(
      {{1, outcome(100)}, {2, outcome(199)}, {4, outcome(390)}, {8, outcome(470)}});
  CHECK(t.breakeven_nodes == 2);
  REQUIRE(t.diminishing_after);
  CHECK(*t.diminishing_after == 4);
  CHECK(t.pays_from == 1);
  CHECK(t.peak_nodes == 8);

  // 1 -> 2 adds the network (1.21x), then each doubling gives >= 1.5x: scaling pays from 2 up
  // to 8 (resnet50-pcie-2node-10gbe: one server 9829, two 11922, four 20502, eight 39514).
  const ScalingSummary u = summarize_scaling(
      {{1, outcome(9829)}, {2, outcome(11922)}, {4, outcome(20502)}, {8, outcome(39514)}});
  CHECK(u.pays_from == 2);
  CHECK(u.diminishing_after == 8);
  REQUIRE(u.one_to_two_gain);
  CHECK(*u.one_to_two_gain == doctest::Approx(11922.0 / 9829.0));
  // No one-server point (dedicated servers fill it): the run starts at 2, no 1 -> 2 claim.
  const ScalingSummary v = summarize_scaling({{2, outcome(100)}, {4, outcome(190)}});
  CHECK(v.pays_from == 2);
  CHECK_FALSE(v.one_to_two_gain);
}

TEST_CASE("advise: cheapest server count breaks near-ties toward more samples/s") {
  std::vector<ScalingPoint> curve{{1, outcome(100)}, {2, outcome(200)}, {4, outcome(300)}};
  curve[0].outcome.cost_per_sample = 1.000;
  curve[1].outcome.cost_per_sample = 1.005;  // within 1 %: same price per sample, sooner
  curve[2].outcome.cost_per_sample = 1.300;
  CHECK(summarize_scaling(curve).cheapest_nodes == 2);
  CHECK(summarize_scaling(curve).lowest_cost_nodes == 1);  // the text names both
}

TEST_CASE("advise: accumulation bisection ends at the smallest value meeting the rule") {
  // Suppose k >= 19 meets the rule: the ladder finds 32 (16 fails), then bisect.
  std::uint32_t failing = 16, passing = 32;
  int probes = 0;
  while (const auto p = next_accumulation_probe(failing, passing)) {
    ++probes;
    if (*p >= 19) passing = *p;
    else failing = *p;
  }
  CHECK(passing == 19);
  CHECK(probes == 4);
  CHECK_FALSE(next_accumulation_probe(1, 2));
  AdviceBaseline b;
  b.accumulation = 4;
  const auto ladder = accumulation_ladder(b);
  CHECK(ladder.front() == 8);
  CHECK(ladder.back() == kMaxAdviceAccumulation);
}

TEST_CASE("advise: Top-K refinement narrows geometrically to 2 significant digits") {
  CHECK(next_topk_probe(0.01, 0.005) == doctest::Approx(0.0071));
  CHECK(next_topk_probe(0.1, 0.05) == doctest::Approx(0.071));
  CHECK_FALSE(next_topk_probe(0.0071, 0.006));  // within 25 %
  CHECK_FALSE(next_topk_probe(0.005, 0.01));      // not failing > passing
  // From 1 (nothing fails below it yet) to 10 %: probes 0.32.
  CHECK(next_topk_probe(1.0, 0.1) == doctest::Approx(0.32));
}

TEST_CASE("advise: the 30 % rule on the outcome") {
  CHECK(outcome(1, 1.0, 0.30).under_rule());
  CHECK_FALSE(outcome(1, 1.0, 0.31).under_rule());
  CHECK(outcome(1, 0.0, 0.0).exposed_share() == 0.0);
}

TEST_CASE("advise: ranking by samples/s and by cost, gains against the baseline") {
  const AdviceOutcome base = outcome(100);
  std::vector<RankedVariant> vs;
  vs.push_back({accumulation_variant(AdviceBaseline{}, 4), outcome(150), 0});
  vs.push_back({topk_variant(AdviceBaseline{}, 0.01), outcome(300), 0});
  vs.push_back({nodes_variant(two_servers_on_10gbe(), 1), outcome(80), 0});
  vs[0].outcome.cost_per_sample = 2.0;
  vs[1].outcome.cost_per_sample = 3.0;  // the third has no price
  const auto by_samples = rank_variants(base, vs, AdviceRanking::SamplesPerSecond);
  CHECK(by_samples[0].variant.kind == AdviceKind::Compression);
  CHECK(by_samples[0].gain == doctest::Approx(2.0));
  CHECK(by_samples[2].gain == doctest::Approx(-0.2));
  const auto by_cost = rank_variants(base, vs, AdviceRanking::CostPerSample);
  CHECK(by_cost[0].variant.kind == AdviceKind::Accumulation);
  CHECK(by_cost[2].variant.kind == AdviceKind::Nodes);  // unpriced last
}

TEST_CASE("advise: every other network is planned: same line rate and slower ones flagged") {
  AdviceBaseline ndr = two_servers_on_10gbe();
  ndr.network_fabric = Fabric::InfiniBand;
  ndr.nic_bandwidth = BytesPerSecond(400e9 / 8.0);
  int same = 0, slower = 0, faster = 0;
  for (const AdviceVariant& v : plan_advice_variants(ndr)) {
    if (v.kind != AdviceKind::Fabric) continue;
    REQUIRE(v.network_fabric);
    const bool the_baseline = *v.network_fabric == Fabric::InfiniBand && v.network_gbps == 400.0;
    CHECK_FALSE(the_baseline);
    if (v.same_speed) {
      ++same;
      CHECK(v.network_gbps == 400.0);
      CHECK(v.change.find("(same line rate)") != std::string::npos);
    } else if (v.slower_network) {
      ++slower;
      CHECK(v.network_gbps < 400.0);
    } else {
      ++faster;
    }
  }
  CHECK(same == 2);    // 400 GbE and RoCE 400 Gb/s beside InfiniBand NDR
  CHECK(slower == 8);  // 10, 25, 100 GbE, RoCE and IB at 100 and 200, 200 GbE
  CHECK(faster == 0);  // nothing above 400 Gb/s in the catalogue
}

TEST_CASE("advise: the cheapest network meeting the 30 % rule, by line rate then fabric") {
  const auto option = [](const char* label, Fabric f, double gbps, double exposed_share,
                         bool baseline = false) {
    NetworkOption o;
    o.label = label;
    o.fabric = f;
    o.gbps = gbps;
    o.baseline = baseline;
    o.outcome = outcome(100, 1.0, exposed_share);
    return o;
  };
  std::vector<NetworkOption> options{
      option("InfiniBand NDR 400 Gb/s", Fabric::InfiniBand, 400, 0.03, true),
      option("25 GbE", Fabric::Ethernet, 25, 0.45),
      option("RoCE 100 Gb/s", Fabric::Roce, 100, 0.08),
      option("100 GbE", Fabric::Ethernet, 100, 0.12),
      option("200 GbE", Fabric::Ethernet, 200, 0.05)};
  auto best = cheapest_network_meeting_rule(options);
  REQUIRE(best);
  CHECK(options[*best].label == "100 GbE");  // 25 GbE misses; at 100 Gb/s Ethernet < RoCE
  options[3].outcome.exposed_comm_s = 0.31;  // 100 GbE now misses too
  best = cheapest_network_meeting_rule(options);
  REQUIRE(best);
  CHECK(options[*best].label == "RoCE 100 Gb/s");
  for (NetworkOption& o : options) o.outcome.exposed_comm_s = 0.5;
  CHECK_FALSE(cheapest_network_meeting_rule(options));
  options[0].outcome.exposed_comm_s = 0.3;  // exactly at the rule: meets it
  best = cheapest_network_meeting_rule(options);
  REQUIRE(best);
  CHECK(options[*best].baseline);
}

TEST_CASE("advise: networks priced in cost.networks are priced with their parts, and chosen by price") {
  AdviceBaseline b = two_servers_on_10gbe();
  b.has_cost = true;
  b.network_prices = {NetworkPrice{Fabric::Ethernet, 100, 400, 250, 60},
                      NetworkPrice{Fabric::Roce, 100, 900, 450, 80}};
  const auto planned = plan_advice_variants(b);
  int priced = 0;
  for (const AdviceVariant& v : planned) {
    if (v.kind != AdviceKind::Fabric) continue;
    const bool listed = (v.network_fabric == Fabric::Ethernet || v.network_fabric == Fabric::Roce) &&
                        std::abs(v.network_gbps - 100) < 1e-9;
    CHECK(v.same_prices == !listed);
    if (!listed) continue;
    ++priced;
    const bool ethernet = v.network_fabric == Fabric::Ethernet;
    CHECK(has_set({v}, ethernet ? "topology_overrides.cost.nic=400" : "topology_overrides.cost.nic=900"));
    CHECK(has_set({v}, ethernet ? "topology_overrides.cost.switch_port=250"
                                : "topology_overrides.cost.switch_port=450"));
    CHECK(has_set({v}, ethernet ? "topology_overrides.cost.cable=60" : "topology_overrides.cost.cable=80"));
  }
  CHECK(priced == 2);
  b.cost_is_quoted = true;  // a quoted total is not re-priced
  for (const AdviceVariant& v : plan_advice_variants(b)) CHECK((v.kind != AdviceKind::Fabric || v.same_prices));

  // Every network that meets the rule priced with its own parts: the lowest cluster cost wins,
  // whatever its line rate (here RoCE 200 below 100 GbE's price); one unpriced: line rate.
  const auto option = [](Fabric f, double gbps, double exposed, std::optional<double> cost, bool own) {
    NetworkOption o;
    o.fabric = f;
    o.gbps = gbps;
    o.own_prices = own;
    o.outcome = outcome(100, 1.0, exposed);
    o.outcome.cluster_cost = cost;
    return o;
  };
  std::vector<NetworkOption> options{option(Fabric::InfiniBand, 400, 0.03, 9e6, true),
                                     option(Fabric::Ethernet, 25, 0.45, 2e6, true),
                                     option(Fabric::Ethernet, 100, 0.12, 5e6, true),
                                     option(Fabric::Roce, 200, 0.05, 4e6, true)};
  auto best = cheapest_network_meeting_rule(options);
  REQUIRE(best);
  CHECK(*best == 3);  // 25 GbE is cheapest but misses the rule
  options[3].own_prices = false;
  best = cheapest_network_meeting_rule(options);
  REQUIRE(best);
  CHECK(*best == 2);  // back to line rate: 100 GbE
}

TEST_CASE("advise: networks that gain under 1 % over a slower one are dropped") {
  const auto planned = plan_advice_variants(two_servers_on_10gbe());
  std::vector<RankedVariant> vs;
  for (const AdviceVariant& v : planned)
    if (v.kind == AdviceKind::Fabric) vs.push_back({v, outcome(0), 0});
  const std::size_t networks = vs.size();
  REQUIRE(networks >= 3);
  // 25 GbE +19 % over the baseline, 100 GbE +2 % over 25 GbE, everything faster +0.5 %.
  vs[0].outcome.samples_per_s = 119;
  vs[1].outcome.samples_per_s = 121.4;
  for (std::size_t i = 2; i < vs.size(); ++i) vs[i].outcome.samples_per_s = 122;
  vs.push_back({topk_variant(AdviceBaseline{}, 0.1), outcome(50), 0});  // not a network: kept
  const auto dropped = drop_dominated_networks(vs, 100.0);
  CHECK(vs.size() == 3);
  CHECK(dropped.size() == networks - 2);
  CHECK(vs[0].variant.change.find("25 GbE") != std::string::npos);
  CHECK(vs[1].variant.change.find("100 GbE") != std::string::npos);
  CHECK(vs[2].variant.kind == AdviceKind::Compression);
}

TEST_CASE("advise: only what NCCL runs under software: nccl; compression replaces the whole key") {
  AdviceBaseline b = two_servers_on_10gbe();
  CHECK(has_set(plan_advice_variants(b), "sync.algorithm=hierarchical"));
  b.nccl = true;
  CHECK_FALSE(has_set(plan_advice_variants(b), "sync.algorithm=hierarchical"));
  // The what-if sets sync.compression as a whole (a file may write it as a word or a
  // mapping), keeping the scenario's codec keys.
  b.compression_keys = ", encode_rate: 2e+10B/s";
  CHECK(has_set(plan_advice_variants(b), "sync.compression={method: int8, encode_rate: 2e+10B/s}"));
  CHECK(topk_variant(b, 0.01).sets ==
        std::vector<std::string>{"sync.compression={method: topk, ratio: 0.01, encode_rate: 2e+10B/s}"});
}

TEST_CASE("advise: an algorithm auto already runs is not a what-if") {
  AdviceBaseline b = two_servers_on_10gbe();
  std::vector<RankedVariant> vs;
  for (const AdviceVariant& v : plan_advice_variants(b))
    if (v.kind == AdviceKind::Algorithm)
      vs.push_back({v, outcome(100, v.sets[0] == "sync.algorithm=tree" ? 2.0 : 2.5), 0});
  REQUIRE(vs.size() == 3);  // ring, tree, hierarchical
  const auto dropped = drop_unchanged_algorithms(vs, b, 2.0);
  REQUIRE(dropped.size() == 1);
  CHECK(dropped[0].variant.sets[0] == "sync.algorithm=tree");
  CHECK(vs.size() == 2);
  b.algorithm = SyncAlgorithm::Ring;  // a fixed algorithm: an equal time is a real alternative
  CHECK(drop_unchanged_algorithms(vs, b, 2.5).empty());
}

namespace {

// A synthetic cluster for advise(): 100 ms of compute per micro-batch and 900 ms of exposed
// communication per step on the baseline's 2 servers. Accumulation K spreads one sync over K
// micro-batches (exposed share 0.9 / (0.1 K + 0.9): the rule needs K >= 21); Top-K keeping r
// sends r of the bytes (0.9 r / (0.1 + 0.9 r): the rule needs r <= 0.0476); N servers expose
// 1.8 (N - 1) / N s (none on one server, whose 4 GPUs then beat any count: a slow network). The
// hierarchical algorithm "cannot run". Every call is recorded.
struct SyntheticCluster {
  std::vector<std::vector<std::string>> calls;

  static std::optional<std::string> value_of(const std::vector<std::string>& sets,
                                             const std::string& key) {
    for (const std::string& s : sets)
      if (s.rfind(key + "=", 0) == 0) return s.substr(key.size() + 1);
    return std::nullopt;
  }

  AdviceTrial trial(const std::vector<std::string>& sets) {
    calls.push_back(sets);
    AdviceTrial t;
    if (value_of(sets, "sync.algorithm") == "hierarchical") {
      t.error = "s.yaml: error: hierarchical cannot run here";
      return t;
    }
    const double k = std::stod(value_of(sets, "training.accumulation").value_or("1"));
    double ratio = 1.0;
    if (const auto c = value_of(sets, "sync.compression")) {
      const auto at = c->find("ratio: ");
      if (at != std::string::npos) ratio = std::stod(c->substr(at + 7));
    }
    const int nodes = std::stoi(value_of(sets, "topology_overrides.nodes").value_or("2"));
    AdviceOutcome o;
    o.nodes = nodes;
    o.gpus = 4 * nodes;
    o.grad_bytes_per_sync = 100e6;
    o.wire_bytes_per_sync = 100e6 * ratio;
    o.exposed_comm_s = nodes == 1 ? 0.0 : 0.9 * ratio * (nodes - 1) / nodes * 2.0;
    o.step_time_s = 0.1 * k + o.exposed_comm_s;
    o.samples_per_s = 100.0 * k * o.gpus / o.step_time_s;
    t.outcome = o;
    return t;
  }

  AdviceRunner runner() {
    return [this](const std::vector<std::vector<std::string>>& batch) {
      std::vector<AdviceTrial> out;
      for (const auto& sets : batch) out.push_back(trial(sets));
      return out;
    };
  }
};

}  // namespace

TEST_CASE("advise(): both searches end at the rule's thresholds of a synthetic cluster") {
  SyntheticCluster cluster;
  const Advice a = advise(two_servers_on_10gbe(), AdviseOptions{}, cluster.runner());
  CHECK(cluster.calls.front().empty());  // the baseline first
  CHECK(a.baseline.exposed_share() == doctest::Approx(0.9 / 1.0));
  CHECK_FALSE(a.rule_met_already);
  // 0.9 / (0.1 K + 0.9) <= 0.3  <=>  K >= 21.
  REQUIRE(a.accumulation_needed);
  CHECK(*a.accumulation_needed == 21);
  // 0.9 r / (0.1 + 0.9 r) <= 0.3  <=>  r <= 0.0476; refined to 2 significant digits.
  REQUIRE(a.topk_ratio_needed);
  CHECK(*a.topk_ratio_needed <= 0.0476);
  CHECK(*a.topk_ratio_needed >= 0.0476 / 1.25);
  REQUIRE(a.compression_ratio_needed);
  CHECK(*a.compression_ratio_needed == doctest::Approx(1.0 / *a.topk_ratio_needed));
  // Both answers are among the ranked what-ifs, each with the outcome the runner gave.
  bool acc = false, topk = false;
  for (const RankedVariant& r : a.ranked) {
    acc = acc || r.variant.sets == std::vector<std::string>{"training.accumulation=21"};
    topk = topk || (r.variant.kind == AdviceKind::Compression && r.outcome.under_rule() &&
                    r.outcome.wire_bytes_per_sync < 5e6);
  }
  CHECK(acc);
  CHECK(topk);
  // What could not run is listed with its one-line reason, not ranked.
  const bool hier = std::any_of(a.not_applicable.begin(), a.not_applicable.end(), [](const auto& n) {
    return n.second == "s.yaml: error: hierarchical cannot run here";
  });
  CHECK(hier);
  // The scaling curve holds the baseline's 2 servers and every other count the runner ran.
  REQUIRE(a.scaling.curve.size() >= 3);
  CHECK(a.scaling.curve.front().nodes == 1);
  CHECK(a.scaling.peak_nodes == 1);
  CHECK_FALSE(a.scaling.breakeven_nodes);  // no count tried beats one server

  // A baseline that leaves its last server part empty (gpus: 6 on 4-GPU servers) is not a
  // point of the whole-server curve: its 2 servers are run with all their GPUs.
  SyntheticCluster partial_cluster;
  AdviceBaseline partial = two_servers_on_10gbe();
  partial.scenario_gpus = 6;
  partial.whole_servers = false;
  const Advice p = advise(partial, AdviseOptions{}, partial_cluster.runner());
  bool two_whole = false;
  for (const auto& sets : partial_cluster.calls)
    two_whole = two_whole || (std::find(sets.begin(), sets.end(), "topology_overrides.nodes=2") !=
                                  sets.end() &&
                              std::find(sets.begin(), sets.end(), "gpus=8") != sets.end());
  CHECK(two_whole);
  const auto twos = std::count_if(p.scaling.curve.begin(), p.scaling.curve.end(),
                                  [](const ScalingPoint& q) { return q.nodes == 2; });
  CHECK(twos == 1);
}

TEST_CASE("advise(): a baseline that meets the rule needs no search; a failing one stops") {
  SyntheticCluster cluster;
  AdviceRunner fast = [&](const std::vector<std::vector<std::string>>& batch) {
    std::vector<AdviceTrial> out = cluster.runner()(batch);
    for (AdviceTrial& t : out)
      if (t.outcome) {  // a network 100x faster: exposed 9 ms of 109 ms
        t.outcome->exposed_comm_s /= 100.0;
        t.outcome->step_time_s = 0.1 + t.outcome->exposed_comm_s;
      }
    return out;
  };
  const Advice a = advise(two_servers_on_10gbe(), AdviseOptions{}, fast);
  CHECK(a.rule_met_already);
  CHECK_FALSE(a.accumulation_needed);
  CHECK_FALSE(a.topk_ratio_needed);
  for (const auto& sets : cluster.calls)
    for (const std::string& s : sets) CHECK(s.rfind("training.accumulation=", 0) != 0);

  AdviceRunner broken = [](const std::vector<std::vector<std::string>>& batch) {
    return std::vector<AdviceTrial>(batch.size(), AdviceTrial{std::nullopt, "s.yaml:3:1: error: x"});
  };
  CHECK_THROWS_WITH_AS((void)advise(two_servers_on_10gbe(), AdviseOptions{}, broken),
                       "s.yaml:3:1: error: x", AdviceBaselineError);
}
