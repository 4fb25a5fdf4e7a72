// Simulated collectives of a parallel step (parallel_runner.hpp).
#include "parallel_runner.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "gradsync/units/config_error.hpp"
#include "gradsync/collective/mesh_ring_orders.hpp"
#include "gradsync/fabric/nccl_tuner.hpp"
#include "nearby_size.hpp"

namespace gradsync::detail {
namespace {

// The rank groups a request runs over, all at once.
std::vector<std::vector<std::uint32_t>> groups_of(const CommRequest& r, const ParallelLayout& l) {
  switch (r.group) {
    case CommGroup::Data: return l.data_groups(r.stage);
    case CommGroup::Shard: return l.shard_groups(r.stage);
    case CommGroup::Replica: return l.replica_groups(r.stage);
    case CommGroup::Tensor: return l.tensor_groups(r.stage);
    case CommGroup::NextStage:
    case CommGroup::PrevStage: {
      const std::uint32_t peer = r.group == CommGroup::NextStage
                                     ? (r.stage + 1) % l.pipeline
                                     : (r.stage + l.pipeline - 1) % l.pipeline;
      std::vector<std::vector<std::uint32_t>> out;
      for (std::uint32_t d = 0; d < l.data; ++d)
        for (std::uint32_t t = 0; t < l.tensor; ++t)
          out.push_back({l.rank_of(r.stage, d, t), l.rank_of(peer, d, t)});
      return out;
    }
  }
  return {};
}

using Key = std::tuple<int, std::uint32_t, int, double>;
Key key_of(const CommRequest& r) {
  return {static_cast<int>(r.group), r.stage, static_cast<int>(r.op), r.bytes.bytes()};
}

// Plans and times requests; every group of a request runs in one simulation.
class GroupTimer {
 public:
  GroupTimer(const LoadedScenario& loaded, const std::vector<DeviceId>& devices,
             const ParallelLayout& layout, Fidelity fidelity)
      : sc_(loaded.scenario), topo_(loaded.topology.topology), devices_(devices),
        layout_(layout), fidelity_(fidelity) {}

  struct Prepared {
    std::vector<DeviceId> first;  // the first group's GPUs
    std::vector<DeviceId> all;    // every group's, concatenated
    std::uint32_t copies = 1;
    CollectiveRequest base;
    std::vector<Algorithm> candidates;
    std::optional<NcclTopologyView> view;
    // NVLS in one NVLink domain or NVLSTree across servers, where every group can run it:
    // each group's GPUs then its NVSwitches (in_switch_devices), concatenated.
    std::optional<Algorithm> in_switch;
    std::vector<DeviceId> in_switch_all;
    [[nodiscard]] const std::vector<DeviceId>& devices_for(Algorithm a) const {
      return in_switch && a == *in_switch ? in_switch_all : all;
    }
  };

  // NCCL's in-switch AllReduce for every group of `r` (auto, nvls or nvlstree under NCCL's
  // software model): NVLS when a group is one server's GPUs, NVLSTree across servers; none
  // where any group cannot run it (no NVLink 4 NVSwitch, one GPU per server, SHARP needed).
  void add_in_switch(Prepared& p, const std::vector<std::vector<std::uint32_t>>& groups) const {
    const SyncAlgorithm asked = sc_.sync.algorithm;
    if (topo_.software() != SoftwareModel::Nccl || p.base.op != CollectiveOp::AllReduce ||
        p.base.ranks < 2 ||
        (asked != SyncAlgorithm::Auto && asked != SyncAlgorithm::Nvls &&
         asked != SyncAlgorithm::NvlsTree))
      return;
    const Algorithm a = p.base.ranks_per_node >= p.base.ranks ? Algorithm::Nvls : Algorithm::NvlsTree;
    std::vector<DeviceId> all;
    try {
      for (const auto& g : groups) {
        std::vector<DeviceId> gpus;
        for (std::uint32_t rank : g) gpus.push_back(devices_.at(rank));
        NvlsSharpDevices d = in_switch_devices(topo_, gpus, p.base.ranks_per_node, a);
        if (!d.sharp_of_local.empty()) return;
        all.insert(all.end(), d.devices.begin(), d.devices.end());
      }
    } catch (const ConfigError&) {
      return;  // not on this hardware: ring and tree only
    }
    p.in_switch = a;
    p.in_switch_all = std::move(all);
  }

  Prepared prepare(const CommRequest& r) const {
    Prepared p;
    const auto groups = groups_of(r, layout_);
    p.copies = static_cast<std::uint32_t>(groups.size());
    for (std::uint32_t rank : groups.front()) p.first.push_back(devices_.at(rank));
    for (const auto& g : groups)
      for (std::uint32_t rank : g) p.all.push_back(devices_.at(rank));
    const auto n = static_cast<std::uint32_t>(p.first.size());
    const bool p2p = r.group == CommGroup::NextStage || r.group == CommGroup::PrevStage;
    p.base.op = r.op;
    p.base.ranks = n;
    p.base.ranks_per_node = p2p ? 1 : ranks_per_node(topo_, p.first);
    if (!p2p) p.base.node_sizes = node_blocks(topo_, p.first);
    p.base.channels = default_ring_channels(topo_, p.first, p.base.ranks_per_node);
    if (!p2p) {
      p.base.mesh_rings = server_mesh_rings(topo_, p.first, p.base.ranks_per_node);
      p.base.mesh_paths = mesh_rail_paths(topo_, p.first, p.base.ranks_per_node, p.base.mesh_rings,
                                          p.base.channels);
      if (p.base.mesh_rings.empty() && p.base.node_sizes.size() > 1)
        p.base.mesh_server_paths =
            mesh_server_paths(topo_, p.first, p.base.node_sizes, p.base.channels);
    }
    p.candidates = {Algorithm::Ring};
    if (!p2p) add_in_switch(p, groups);
    if (r.op == CollectiveOp::AllReduce && n > 1) {
      if (sc_.sync.algorithm == SyncAlgorithm::Tree) p.candidates = {Algorithm::Tree};
      if (sc_.sync.algorithm == SyncAlgorithm::Auto) p.candidates = {Algorithm::Ring, Algorithm::Tree};
      if (sc_.sync.algorithm == SyncAlgorithm::Nvls || sc_.sync.algorithm == SyncAlgorithm::NvlsTree)
        p.candidates.clear();
      if (p.in_switch) p.candidates.push_back(*p.in_switch);
      if (p.candidates.empty()) p.candidates = {Algorithm::Ring};
    }
    if (topo_.software() == SoftwareModel::Nccl && p.candidates.size() > 1)
      p.view = nccl_topology_view(topo_, p.first, p.base.ranks_per_node, p.in_switch);
    // NVLSTree pipelines in NCCL's loops (nvls_tree_pipeline_steps).
    if (topo_.software() == SoftwareModel::Nccl && p.in_switch == Algorithm::NvlsTree)
      set_nvls_loops(p.base, p.view ? *p.view
                                    : nccl_topology_view(topo_, p.first, p.base.ranks_per_node,
                                                         p.in_switch));
    return p;
  }

  Plan plan(const Prepared& p, Algorithm a, Bytes bytes, Fidelity fidelity) const {
    CollectiveRequest req = p.base;
    req.algorithm = a;
    req.bytes = bytes;
    try {
      Plan one = plan_collective(req, p.copies > 1 ? Fidelity::Flow : fidelity);
      return p.copies > 1 ? replicate_plan(one, p.copies) : one;
    } catch (const std::invalid_argument& e) {
      throw ConfigError(SourceMark{sc_.file.string(), 0, 0},
                        fmt::format("{} {} over {} GPUs ({} groups): {}", to_string(a),
                                    to_string(req.op), req.ranks, p.copies, e.what()));
    }
  }

  // Device pairs every candidate of `r` sends between (routes to build).
  void add_pairs(const CommRequest& r, std::vector<std::pair<DeviceId, DeviceId>>& out) const {
    const Prepared p = prepare(r);
    if (p.first.size() < 2) return;
    for (Algorithm a : p.candidates) {
      const Plan pl = plan(p, a, Bytes(4096.0 * p.base.ranks), Fidelity::Flow);
      const auto pairs = device_pairs(pl, p.devices_for(a));
      out.insert(out.end(), pairs.begin(), pairs.end());
    }
  }

  Seconds time(Simulation& sim, const CommRequest& r) {
    const Key key = key_of(r);
    if (auto it = timings_.find(key); it != timings_.end()) return it->second.first.time;
    // A request of nearly the same size on the same group ran already (nearby_size.hpp).
    if (const auto near = find_nearby_size(timings_, key); near != timings_.end()) {
      auto entry = std::make_pair(scaled_timing(near->second.first,
                                                r.bytes.bytes() / std::get<3>(near->first)),
                                  near->second.second);
      return timings_.emplace(key, std::move(entry)).first->second.first.time;
    }
    const Prepared p = prepare(r);
    if (p.first.size() < 2 || !(r.bytes.bytes() > 0.0)) {
      auto& slot = timings_[key];
      slot.first.time = Seconds(0.0);
      return slot.first.time;
    }
    std::vector<Algorithm> algorithms = p.candidates;
    if (p.view) algorithms = {nccl_tune(*p.view, r.op, r.bytes, p.candidates).algorithm};
    std::optional<std::pair<PlanTiming, Algorithm>> best;
    for (Algorithm a : algorithms) {
      const Plan pl = plan(p, a, r.bytes, fidelity_);
      PlanTiming t = sim.run_plan(pl, p.devices_for(a), p.copies > 1 ? Fidelity::Flow : fidelity_);
      if (!best || t.time < best->first.time) best = std::make_pair(std::move(t), a);
    }
    return timings_.emplace(key, std::move(*best)).first->second.first.time;
  }

  // Durations of `a` and `b` started together, each with the algorithm it runs alone (time()
  // first), over every group of both. run_together replays flows; a collective timed alone at
  // step fidelity gets its time together scaled by (alone, its fidelity) / (alone, flows), so
  // the slowdown the composer derives compares one fidelity with itself.
  std::pair<Seconds, Seconds> together(Simulation& sim, const CommRequest& a, const CommRequest& b) {
    (void)time(sim, a);
    (void)time(sim, b);
    const Prepared pa = prepare(a), pb = prepare(b);
    const auto& [timing_a, alg_a] = timings_.at(key_of(a));
    const auto& [timing_b, alg_b] = timings_.at(key_of(b));
    const Plan plan_a = plan(pa, alg_a, a.bytes, Fidelity::Flow);
    const Plan plan_b = plan(pb, alg_b, b.bytes, Fidelity::Flow);
    const std::vector<PlanRun> runs{{&plan_a, &pa.devices_for(alg_a)},
                                    {&plan_b, &pb.devices_for(alg_b)}};
    const std::vector<Seconds> t = sim.run_together(runs);
    ++pairs_run_;
    auto as_timed = [&](const CommRequest& r, const PlanTiming& alone, const Plan& flows,
                        const std::vector<DeviceId>& devices, Seconds shared) {
      if (alone.fidelity == Fidelity::Flow) return shared;
      auto [it, fresh] = flow_alone_.try_emplace(key_of(r), Seconds(0.0));
      if (fresh) it->second = sim.run_plan(flows, devices, Fidelity::Flow).time;
      return it->second.seconds() > 0.0 ? shared * (alone.time / it->second) : shared;
    };
    return {as_timed(a, timing_a, plan_a, pa.devices_for(alg_a), t[0]),
            as_timed(b, timing_b, plan_b, pb.devices_for(alg_b), t[1])};
  }
  [[nodiscard]] std::size_t pairs_run() const { return pairs_run_; }

  [[nodiscard]] const std::pair<PlanTiming, Algorithm>* timing(const CommRequest& r) const {
    const auto it = timings_.find(key_of(r));
    return it == timings_.end() ? nullptr : &it->second;
  }

 private:
  const Scenario& sc_;
  const Topology& topo_;
  const std::vector<DeviceId>& devices_;
  const ParallelLayout& layout_;
  Fidelity fidelity_;
  std::map<Key, std::pair<PlanTiming, Algorithm>> timings_;
  std::map<Key, Seconds> flow_alone_;  // alone at flow fidelity, for together() (see there)
  std::size_t pairs_run_ = 0;
};

}  // namespace

ParallelRun simulate_parallel_step(const LoadedScenario& loaded,
                                   const std::vector<DeviceId>& devices,
                                   const ParallelLayout& layout, const RunOptions& options) {
  const Scenario& sc = loaded.scenario;
  const Topology& topo = loaded.topology.topology;
  auto compose = [&](const CommTimer& timer, const PairTimer& together) {
    try {
      return compose_parallel_step(sc.model, sc.compute, sc.sync, sc.parallel, layout,
                                   sc.training.accumulation, timer, together);
    } catch (const std::invalid_argument& e) {
      throw ConfigError(SourceMark{sc.file.string(), 0, 0}, e.what());
    }
  };
  GroupTimer timer(loaded, devices, layout, options.fidelity);
  // First the collectives the step asks for (their order and count do not depend on their
  // durations), to build every route once; then the step with their simulated durations.
  std::set<Key> seen;
  std::vector<std::pair<DeviceId, DeviceId>> pairs;
  (void)compose([&](const CommRequest& r) {
    const Key k = key_of(r);  // routes do not depend on the size
    if (seen.insert({std::get<0>(k), std::get<1>(k), std::get<2>(k), 0.0}).second)
      timer.add_pairs(r, pairs);
    return Seconds(1e-6);
  }, {});
  Simulation sim(topo, options.simgrid_args);
  if (options.progress) sim.set_progress(options.progress);
  sim.build(pairs);

  ParallelRun run;
  run.step = compose([&](const CommRequest& r) { return timer.time(sim, r); },
                     [&](const CommRequest& a, const CommRequest& b) {
                       return timer.together(sim, a, b);
                     });
  run.pairs_simulated = timer.pairs_run();
  run.bytes_a_to_b.assign(topo.links().size(), 0.0);
  run.bytes_b_to_a.assign(topo.links().size(), 0.0);
  std::set<std::string> names;
  for (const auto& [request, count] : run.step.uses) {
    const auto* t = timer.timing(request);
    if (t == nullptr) continue;
    for (std::size_t l = 0; l < t->first.bytes_a_to_b.size(); ++l) {
      run.bytes_a_to_b[l] += count * t->first.bytes_a_to_b[l];
      run.bytes_b_to_a[l] += count * t->first.bytes_b_to_a[l];
    }
    if (!t->first.bytes_a_to_b.empty())
      names.insert(fmt::format("{} {} ({})", to_string(request.kind), to_string(request.op),
                               to_string(t->second)));
  }
  run.algorithms.assign(names.begin(), names.end());
  return run;
}

}  // namespace gradsync::detail
