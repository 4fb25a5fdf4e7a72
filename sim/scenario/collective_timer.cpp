// The scenario runner's collective timer (collective_timer.hpp).
#include "collective_timer.hpp"

#include <fmt/format.h>

#include "nearby_size.hpp"

namespace gradsync::detail {

Plan plan_or_fail(const CollectiveRequest& r, Fidelity fidelity, const SourceMark& scenario) {
  try {
    return plan_collective(r, fidelity);
  } catch (const std::invalid_argument& e) {
    throw ConfigError(scenario, fmt::format("{} {} over {} GPUs: {}", to_string(r.algorithm),
                                            to_string(r.op), r.ranks, e.what()));
  }
}

std::pair<Seconds, Algorithm> CollectiveTimer::time(const Group& group, int group_id,
                                                    CollectiveOp op,
                                                    const std::vector<Algorithm>& candidates,
                                                    Bytes bytes,
                                                    std::vector<double>* link_bytes_a,
                                                    std::vector<double>* link_bytes_b) {
  std::vector<Algorithm> algorithms = candidates;
  if (group.nccl_view && algorithms.size() > 1)
    algorithms = {nccl_tune(*group.nccl_view, op, bytes, candidates).algorithm};
  std::pair<Seconds, Algorithm> best{Seconds(-1.0), algorithms.front()};
  for (Algorithm a : algorithms) {
    const auto key = std::make_tuple(group_id, static_cast<int>(op), static_cast<int>(a),
                                     bytes.bytes());
    auto it = cache_.find(key);
    if (it == cache_.end()) {
      if (const auto near = find_nearby_size(cache_, key); near != cache_.end()) {
        const double factor = bytes.bytes() / std::get<3>(near->first);
        it = cache_.emplace(key, scaled_timing(near->second, factor)).first;
      } else {
        const CollectiveRequest r = group.request(op, a, bytes);
        PlanTiming t = sim_.run_plan(plan_or_fail(r, fidelity_, scenario_),
                                     group.devices_for(a), fidelity_);
        it = cache_.emplace(key, std::move(t)).first;
      }
    }
    if (best.first.seconds() < 0 || it->second.time < best.first) {
      best = {it->second.time, a};
      best_timing_ = &it->second;
    }
  }
  if (link_bytes_a != nullptr && best_timing_ != nullptr) {
    for (std::size_t l = 0; l < best_timing_->bytes_a_to_b.size(); ++l) {
      (*link_bytes_a)[l] += best_timing_->bytes_a_to_b[l];
      (*link_bytes_b)[l] += best_timing_->bytes_b_to_a[l];
    }
  }
  return best;
}

void set_in_switch(CollectiveTimer::Group& group, const Topology& topo,
                   const std::vector<DeviceId>& gpus, std::uint32_t ppn, bool tree,
                   std::string* why) {
  group.nvls_devices.clear();
  group.base.sharp_of_local.clear();
  group.tree_too = false;
  if (gpus.size() < 2) {
    if (why) *why = "in-switch reduction needs 2 GPUs or more";
    return;
  }
  if (topo.software() != SoftwareModel::Nccl) {
    if (why) *why = "NVLS is NCCL's algorithm: the topology has software: none";
    return;
  }
  // Across servers NVLS with SHARP where the switches reduce (then NVLSTree too, tree_too),
  // unless NVLSTree was asked for.
  std::vector<Algorithm> tries;
  if (ppn >= gpus.size()) tries = {Algorithm::Nvls};
  else if (tree) tries = {Algorithm::NvlsTree};
  else tries = {Algorithm::Nvls, Algorithm::NvlsTree};
  for (Algorithm a : tries) {
    try {
      NvlsSharpDevices d = in_switch_devices(topo, gpus, ppn, a);
      group.nvls_algorithm = a;
      group.tree_too = a == Algorithm::Nvls && !d.sharp_of_local.empty();
      group.nvls_devices = std::move(d.devices);
      group.base.sharp_of_local = std::move(d.sharp_of_local);
      return;
    } catch (const ConfigError& e) {
      if (why && (a == tries.back() || a == Algorithm::Nvls)) *why = e.what();
    }
  }
}

void set_collnet(CollectiveTimer::Group& group, const Topology& topo,
                 const std::vector<DeviceId>& gpus, std::uint32_t ppn) {
  group.collnet_devices.clear();
  group.collnet_sharp_of_local.clear();
  group.collnet_direct = false;
  if (topo.software() != SoftwareModel::Nccl || gpus.size() < 2 || ppn >= gpus.size()) return;
  try {
    NvlsSharpDevices d = collnet_devices(topo, gpus, ppn);
    group.collnet_devices = std::move(d.devices);
    group.collnet_sharp_of_local = std::move(d.sharp_of_local);
    (void)in_switch_devices(topo, gpus, ppn, Algorithm::CollNetDirect);
    group.collnet_direct = true;
  } catch (const ConfigError&) {
  }
}

std::vector<Algorithm> algorithms_for(const SyncSpec& sync, CollectiveOp op, std::uint32_t ranks,
                                      std::uint32_t ppn, std::optional<Algorithm> in_switch,
                                      bool tree_too, bool nccl, bool collnet,
                                      bool collnet_direct) {
  if (sync.strategy != SyncStrategy::AllReduce) return {Algorithm::ParameterServer};
  if (op != CollectiveOp::AllReduce) return {Algorithm::Ring};  // Top-K all-gather
  switch (sync.algorithm) {
    case SyncAlgorithm::Ring: return {Algorithm::Ring};
    case SyncAlgorithm::Tree: return {Algorithm::Tree};
    case SyncAlgorithm::Hierarchical:
      if (ppn <= 1 || ranks <= ppn) return {Algorithm::Ring};
      return {Algorithm::Hierarchical};
    // The one-server reference of an NVLSTree cluster runs NVLS, and falls back to Ring where
    // no in-switch reduction applies (the loader rejects that for the whole cluster).
    case SyncAlgorithm::Nvls:
    case SyncAlgorithm::NvlsTree: return {in_switch.value_or(Algorithm::Ring)};
    // The one-server reference of a CollNet cluster runs the ring (no network to reduce in).
    case SyncAlgorithm::CollNetChain:
      return {collnet && nccl ? Algorithm::CollNetChain : Algorithm::Ring};
    case SyncAlgorithm::CollNetDirect:
      return {collnet_direct && nccl ? Algorithm::CollNetDirect : Algorithm::Ring};
    case SyncAlgorithm::Auto: {
      std::vector<Algorithm> a = auto_candidates(op, ranks, ppn, nccl);
      if (in_switch) a.push_back(*in_switch);
      if (tree_too) a.push_back(Algorithm::NvlsTree);
      if (collnet && nccl) a.push_back(Algorithm::CollNetChain);
      if (collnet_direct && nccl) a.push_back(Algorithm::CollNetDirect);
      return a;
    }
  }
  return {Algorithm::Ring};
}

}  // namespace gradsync::detail
