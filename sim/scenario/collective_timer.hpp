// The scenario runner's collective timer: simulates the collectives of a step on one platform,
// caching durations by (op, algorithm, bytes, group), and chooses what each bucket runs (the
// algorithms to try, the in-switch reduction a group can use). Internal to the runner.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gradsync/units/config_error.hpp"
#include "gradsync/engine/simulation.hpp"
#include "gradsync/fabric/nccl_tuner.hpp"
#include "gradsync/config/scenario_loader.hpp"

namespace gradsync::detail {

// plan_collective(), with a request it cannot plan (e.g. beyond the transfers one plan holds)
// reported as bad input of the scenario rather than as an internal error.
[[nodiscard]] Plan plan_or_fail(const CollectiveRequest& r, Fidelity fidelity,
                                const SourceMark& scenario);

// Simulates collectives on one platform, caching durations by (op, algorithm, bytes, group).
class CollectiveTimer {
 public:
  CollectiveTimer(Simulation& sim, Fidelity fidelity, SourceMark scenario)
      : sim_(sim), fidelity_(fidelity), scenario_(std::move(scenario)) {}

  struct Group {
    std::vector<DeviceId> devices;  // rank → GPU (workers, then dedicated servers)
    CollectiveRequest base;         // ranks, ranks_per_node, channels, ps options
    // In-switch reduction where it can run on this group (see set_in_switch): NVLS in one
    // server (the GPUs, then their NVSwitch), NVLSTree across servers (the GPUs, then each
    // server's NVSwitch); nvls_devices is empty when neither can.
    Algorithm nvls_algorithm = Algorithm::Nvls;
    std::vector<DeviceId> nvls_devices;
    // NVLS across servers with SHARP: NVLSTree can run too (its devices, the GPUs and the
    // NVSwitches, are the first part of nvls_devices), and NCCL's tuner chooses between them.
    bool tree_too = false;
    // CollNet where the servers' NICs share SHARP switches (see set_collnet): the GPUs, then
    // those switches; empty where it cannot run. CollNetDirect too on NVSwitch servers.
    std::vector<DeviceId> collnet_devices;
    std::vector<std::uint32_t> collnet_sharp_of_local;
    bool collnet_direct = false;
    [[nodiscard]] const std::vector<DeviceId>& devices_for(Algorithm a) const {
      if (a == Algorithm::CollNetChain || a == Algorithm::CollNetDirect) return collnet_devices;
      return a == Algorithm::Nvls || a == Algorithm::NvlsTree ? nvls_devices : devices;
    }
    // The group's request for `a` (base, with the SHARP switches `a` uses).
    [[nodiscard]] CollectiveRequest request(CollectiveOp op, Algorithm a, Bytes bytes) const {
      CollectiveRequest r = base;
      r.op = op;
      r.algorithm = a;
      r.bytes = bytes;
      if (a == Algorithm::CollNetChain || a == Algorithm::CollNetDirect)
        r.sharp_of_local = collnet_sharp_of_local;
      return r;
    }
    [[nodiscard]] std::optional<Algorithm> in_switch() const {
      if (nvls_devices.empty()) return std::nullopt;
      return nvls_algorithm;
    }
    // Under NCCL's software model, NCCL's view of the group (nccl_tuner.hpp): `auto` runs
    // the algorithm its tuner picks for each bucket.
    std::optional<NcclTopologyView> nccl_view;
  };

  // The fastest of `algorithms` for (op, bytes) on `group` — or, when the group has NCCL's
  // view and there is a choice, the one NCCL's tuner picks; returns its duration and name.
  std::pair<Seconds, Algorithm> time(const Group& group, int group_id, CollectiveOp op,
                                     const std::vector<Algorithm>& candidates, Bytes bytes,
                                     std::vector<double>* link_bytes_a,
                                     std::vector<double>* link_bytes_b);

 private:
  using Key = std::tuple<int, int, int, double>;
  Simulation& sim_;
  Fidelity fidelity_;
  SourceMark scenario_;
  std::map<Key, PlanTiming> cache_;
  const PlanTiming* best_timing_ = nullptr;
};

// The in-switch reduction `bench --algo auto` would try on `gpus` (node-major, `ppn` per
// server), with its devices: NVLS over one NVSwitch domain (nvls_switch()), NVLSTree over
// several servers with one each (nvls_tree_devices()); both need NVLink4 or later, NCCL's
// software model (which carries NVLS's bandwidth factor) and 2+ GPUs. Sets group.nvls_devices
// empty, and *why, when neither can run.
void set_in_switch(CollectiveTimer::Group& group, const Topology& topo,
                   const std::vector<DeviceId>& gpus, std::uint32_t ppn, bool tree,
                   std::string* why);

// CollNet for `auto` under NCCL's software model where `gpus` (node-major, `ppn` per server)
// span two servers or more whose NICs share SHARP switches (collnet_devices()): sets
// group.collnet_devices and collnet_sharp_of_local, else leaves them empty; and
// group.collnet_direct where the servers have NVSwitches too.
void set_collnet(CollectiveTimer::Group& group, const Topology& topo,
                 const std::vector<DeviceId>& gpus, std::uint32_t ppn);

// The algorithms to try for one collective. `in_switch`: the group's NVLS or NVLSTree, if
// any. Under NCCL's software model auto is NCCL's choice set (Ring, Tree, NVLS or NVLSTree,
// CollNetChain where `collnet`, CollNetDirect where `collnet_direct`); NCCL has no 2-D hierarchical AllReduce, which auto adds only
// with software: none.
[[nodiscard]] std::vector<Algorithm> algorithms_for(const SyncSpec& sync, CollectiveOp op,
                                                    std::uint32_t ranks, std::uint32_t ppn,
                                                    std::optional<Algorithm> in_switch,
                                                    bool tree_too, bool nccl, bool collnet = false,
                                                    bool collnet_direct = false);

}  // namespace gradsync::detail
