// Rank placement: which GPU plays each rank of a collective.
#include <algorithm>
#include <array>
#include <functional>
#include <iterator>
#include <numeric>
#include <optional>
#include <random>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "gradsync/units/config_error.hpp"
#include "gradsync/collective/rank_placement.hpp"
#include "gradsync/units/name_table.hpp"
#include "gradsync/fabric/fabric_model.hpp"

namespace gradsync {

namespace {

// The spellings of bench's and run's --fidelity and bench's --placement, in the enums' order.
constexpr std::array<std::pair<Fidelity, std::string_view>, 3> kFidelities{{
    {Fidelity::Auto, "auto"}, {Fidelity::Step, "step"}, {Fidelity::Flow, "flow"}}};
constexpr std::array<std::pair<PlacementKind, std::string_view>, 3> kPlacementKinds{{
    {PlacementKind::InOrder, "in-order"},
    {PlacementKind::Strided, "strided"},
    {PlacementKind::Random, "random"}}};


}  // namespace

std::string_view to_string(Fidelity fidelity) { return name_in(kFidelities, fidelity); }
std::optional<Fidelity> fidelity_from_string(std::string_view text) {
  return value_in(kFidelities, text);
}
std::vector<std::string> fidelity_names() { return names_in(kFidelities); }
std::string_view to_string(PlacementKind kind) { return name_in(kPlacementKinds, kind); }
std::optional<PlacementKind> placement_kind_from_string(std::string_view text) {
  return value_in(kPlacementKinds, text);
}
std::vector<std::string> placement_kind_names() { return names_in(kPlacementKinds); }

Fidelity resolve_fidelity(Fidelity requested, const Plan& plan) {
  if (plan.flows_only && requested == Fidelity::Step)
    throw std::logic_error("resolve_fidelity: step fidelity needs the plan's transfers");
  if (requested != Fidelity::Auto) return requested;
  if (plan_transfer_count(plan) > kAutoStepTransfers) return Fidelity::Flow;
  // SimGrid re-solves the sharing of every flow coupled to a finished one, so the cost of a
  // step-level run grows like transfers × concurrent flows. Measured on 2 cores: a 256-rank
  // ring (130k transfers, 256 edges) runs in 0.3 s, a 64-rank pipelined tree (65k transfers,
  // ~250 edges sharing GPU ports) in 5 s, a 256-rank one in 70 s. Bound the product; flow
  // fidelity is exact for rings and within ~10 % for pipelined trees (tested). Concurrent
  // flows are connections, (pair, channel): a 32-rank plan of 16 trees (one pair per NIC) runs
  // 16 chains over the same pairs at once, and counting pairs only kept a 7B step of such
  // trees at step fidelity (4.7 s instead of 0.3 s).
  const double work = static_cast<double>(plan_transfer_count(plan)) *
                      static_cast<double>(plan_connection_count(plan));
  return work <= kAutoStepWork ? Fidelity::Step : Fidelity::Flow;
}

bool streams_through_stages(Algorithm algorithm, std::optional<NcclProtocol> protocol) {
  return algorithm == Algorithm::Tree && protocol == NcclProtocol::LL;
}

Plan plan_collective(CollectiveRequest request, Fidelity fidelity) {
  if (fidelity == Fidelity::Step) {
    request.form = PlanForm::Transfers;
    return plan_collective(request);
  }
  request.form = PlanForm::Flows;
  Plan flows = plan_collective(request);
  if (fidelity == Fidelity::Flow || resolve_fidelity(Fidelity::Auto, flows) == Fidelity::Flow)
    return flows;
  request.form = PlanForm::Transfers;
  return plan_collective(request);
}

std::vector<DeviceId> spread_dedicated_servers(const Topology& topology,
                                               const std::vector<DeviceId>& devices,
                                               std::uint32_t servers) {
  if (servers == 0 || servers >= devices.size()) return devices;
  // The machines in rank order, each with its GPUs in rank order.
  std::vector<int> machines;
  std::vector<std::vector<std::size_t>> ranks_of;
  for (std::size_t r = 0; r < devices.size(); ++r) {
    const int node = topology.device(devices[r]).node;
    const auto it = std::find(machines.begin(), machines.end(), node);
    if (it == machines.end()) {
      machines.push_back(node);
      ranks_of.push_back({r});
    } else {
      ranks_of[static_cast<std::size_t>(it - machines.begin())].push_back(r);
    }
  }
  if (machines.size() < 2) return devices;
  std::vector<bool> is_server(devices.size(), false);
  std::vector<DeviceId> server_devices;
  const std::size_t n = machines.size();
  for (std::uint32_t j = 0; j < servers; ++j) {
    // Machine N-1-(j mod N), its (j div N)-th GPU from the end (skipping spent machines).
    for (std::size_t tries = 0; tries < n; ++tries) {
      auto& list = ranks_of[n - 1 - (j + tries) % n];
      if (list.empty()) continue;
      is_server[list.back()] = true;
      server_devices.push_back(devices[list.back()]);
      list.pop_back();
      break;
    }
  }
  std::vector<DeviceId> out;
  for (std::size_t r = 0; r < devices.size(); ++r)
    if (!is_server[r]) out.push_back(devices[r]);
  out.insert(out.end(), server_devices.begin(), server_devices.end());
  return out;
}

std::vector<DeviceId> place_ranks(const Topology& topology, std::uint32_t ranks,
                                  const PlacementOptions& options) {
  const auto& gpus = topology.gpus();
  if (ranks == 0 || ranks > gpus.size())
    throw ConfigError(topology.origin(),
                      fmt::format("{} ranks requested but topology '{}' has {} GPUs", ranks,
                                  topology.name(), gpus.size()));
  std::vector<DeviceId> order(gpus.begin(), gpus.end());
  switch (options.kind) {
    case PlacementKind::InOrder:
      break;
    case PlacementKind::Strided: {
      // Visit GPUs s, s+stride, s+2·stride, … for s = 0, 1, …: with stride = GPUs per node,
      // consecutive ranks land on different nodes (the worst case for a ring).
      std::uint32_t stride = options.stride;
      if (stride == 0) stride = static_cast<std::uint32_t>(gpus.size() / topology.node_count());
      stride = std::max<std::uint32_t>(stride, 1);
      order.clear();
      for (std::size_t s = 0; s < stride; ++s)
        for (std::size_t i = s; i < gpus.size(); i += stride) order.push_back(gpus[i]);
      break;
    }
    case PlacementKind::Random: {
      std::mt19937_64 rng(options.seed);
      std::shuffle(order.begin(), order.end(), rng);
      break;
    }
  }
  order.resize(ranks);
  return order;
}

std::vector<DeviceId> nccl_server_order(const Topology& topology,
                                        const std::vector<DeviceId>& placed) {
  std::map<int, std::size_t> first;  // server -> its position in the order of first ranks
  for (DeviceId d : placed) {
    const int node = topology.device(d).node;
    if (node < 0) return placed;  // GPUs without servers: no grouping to follow
    first.emplace(node, first.size());
  }
  std::vector<DeviceId> out = placed;
  std::sort(out.begin(), out.end(), [&](DeviceId a, DeviceId b) {
    const std::size_t fa = first.at(topology.device(a).node), fb = first.at(topology.device(b).node);
    return fa != fb ? fa < fb : a < b;
  });
  return out;
}

std::vector<std::pair<DeviceId, DeviceId>> device_pairs(const Plan& plan,
                                                        const std::vector<DeviceId>& rank_devices) {
  // Distinct destinations per source rank, each list sorted: a plan has millions of transfers
  // (a 1024-rank ring: 2 x 1023 steps x 1024 ranks x channels) but few pairs per rank, so a
  // binary search in a short contiguous list beats one tree-set insertion per transfer.
  if (rank_devices.size() < plan.ranks)
    throw std::out_of_range("device_pairs: fewer devices than ranks");
  std::vector<std::vector<std::uint32_t>> dsts(plan.ranks);
  const auto add = [&](std::uint32_t src, std::uint32_t dst) {
    if (src >= plan.ranks || dst >= plan.ranks)
      throw std::out_of_range("device_pairs: transfer rank out of range");
    auto& v = dsts[src];
    const auto it = std::lower_bound(v.begin(), v.end(), dst);
    if (it == v.end() || *it != dst) v.insert(it, dst);
  };
  for (const Transfer& t : plan.transfers) add(t.src, t.dst);
  for (const FlowPhase& phase : plan.flow_phases)
    for (const PlanFlow& f : phase.flows) add(f.src, f.dst);
  std::vector<std::pair<DeviceId, DeviceId>> out;
  for (std::uint32_t src = 0; src < plan.ranks; ++src)
    for (std::uint32_t dst : dsts[src])
      if (rank_devices[src] != rank_devices[dst]) out.emplace_back(rank_devices[src], rank_devices[dst]);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace gradsync

namespace gradsync {

DeviceId nvls_switch(const Topology& topology, const std::vector<DeviceId>& gpus) {
  // NCCL turns NVLS off where a node has 2 GPUs or fewer (src/transport/nvls.cc, ncclNvlsInit:
  // gpuCount <= 2), in one NVSwitch domain or in each server under NVLSTree.
  if (gpus.size() <= 2)
    throw ConfigError(topology.origin(),
                      fmt::format("NVLS needs 3 GPUs or more in each NVSwitch domain, and one "
                                  "here has {} (NCCL turns it off at 2 or fewer; use ring or tree)",
                                  gpus.size()));
  // NVSwitches linked (by NVLink) to the first GPU, kept if linked to every other GPU too.
  auto switches_of = [&](DeviceId gpu) {
    std::set<DeviceId> out;
    for (LinkId id : topology.links_of(gpu)) {
      const Link& l = topology.link(id);
      const DeviceId other = l.a == gpu ? l.b : l.a;
      if (l.fabric == Fabric::NvLink && topology.device(other).kind == DeviceKind::NvSwitch)
        out.insert(other);
    }
    return out;
  };
  std::set<DeviceId> common = switches_of(gpus.front());
  if (common.empty())
    throw ConfigError(topology.origin(),
                      fmt::format("NVLS needs an NVSwitch, and GPU '{}' is linked to none "
                                  "(use ring or tree)",
                                  topology.device(gpus.front()).name));
  std::set<int> nodes;
  for (DeviceId g : gpus) {
    nodes.insert(topology.device(g).node);
    const std::set<DeviceId> mine = switches_of(g);
    std::set<DeviceId> keep;
    std::set_intersection(common.begin(), common.end(), mine.begin(), mine.end(),
                          std::inserter(keep, keep.begin()));
    common = std::move(keep);
  }
  if (common.empty())
    throw ConfigError(
        topology.origin(),
        fmt::format("NVLS runs inside one NVLink domain, and these {} GPUs span {} (servers "
                    "with separate NVSwitches: across servers use nvlstree, NVLS in each "
                    "server and trees between them, or ring, tree, hierarchical)",
                    gpus.size(), std::max<std::size_t>(nodes.size(), 2)));
  if (common.size() > 1)
    throw ConfigError(topology.origin(),
                      fmt::format("NVLS over {} separate NVSwitch planes is not modelled",
                                  common.size()));
  // NVLS needs NVSwitch gen3 / NVLink4 (Hopper) or later: the topology's `gpu:`, else the
  // generation its NVLink rate implies (gpu_generation_of()).
  const DeviceId sw = *common.begin();
  const auto [generation, inferred] = gpu_generation_of(topology);
  if (generation < GpuGeneration::Hopper)
    throw ConfigError(
        topology.origin(),
        fmt::format("NVLS needs NVLink4 / NVSwitch gen3 (H100 or later), and GPU '{}' is {} ({})",
                    topology.device(gpus.front()).name, to_string(generation),
                    inferred ? "from its NVLink rate; set gpu: to name the model"
                             : "the topology's gpu:"));
  return sw;
}

std::vector<DeviceId> nvls_tree_devices(const Topology& topology,
                                        const std::vector<DeviceId>& gpus,
                                        std::uint32_t ranks_per_node) {
  // The servers' blocks: ranks_per_node each, or (ranks_per_node 1) the consecutive runs on
  // one server, which may differ (12 ranks as 8 + 4).
  const std::size_t ppn = ranks_per_node;
  std::vector<std::uint32_t> blocks;
  if (ppn == 1) blocks = node_blocks(topology, gpus);
  else if (ppn != 0 && gpus.size() % ppn == 0) blocks.assign(gpus.size() / ppn, ranks_per_node);
  if (gpus.empty() || blocks.size() < 2)
    throw ConfigError(topology.origin(),
                      "NVLSTree needs two servers or more, ranks in server order (one server: "
                      "use nvls)");
  std::vector<DeviceId> devices = gpus;
  std::set<DeviceId> switches;
  std::size_t first = 0;
  for (const std::uint32_t size : blocks) {
    const std::vector<DeviceId> block(gpus.begin() + static_cast<std::ptrdiff_t>(first),
                                      gpus.begin() + static_cast<std::ptrdiff_t>(first + size));
    first += size;
    const DeviceId sw = nvls_switch(topology, block);
    if (!switches.insert(sw).second)
      throw ConfigError(topology.origin(),
                        "NVLSTree needs one NVSwitch domain per server, and these servers share "
                        "one (use nvls)");
    devices.push_back(sw);
  }
  return devices;
}

namespace {

// Per local GPU index, the SHARP switch that reduces its shard: the network switch its first
// rail NIC is cabled to, the same on every server (node-major `gpus`, `ppn` per server). The
// distinct switches go to the end of `out.devices`. `what` names the algorithm in errors.
void add_sharp_switches(const Topology& topology, const std::vector<DeviceId>& gpus,
                        std::size_t ppn, const char* what, NvlsSharpDevices& out) {
  std::vector<DeviceId> switches;  // distinct SHARP switches, in order of first use
  for (std::size_t l = 0; l < ppn; ++l) {
    std::optional<DeviceId> shared;
    for (std::size_t first = 0; first < gpus.size(); first += ppn) {
      const DeviceId g = gpus[first + l];
      const std::vector<RailNic> rails = rail_nics(topology, g);
      std::optional<DeviceId> leaf;
      if (!rails.empty())
        for (LinkId id : topology.links_of(rails.front().nic)) {
          const DeviceId other = topology.link(id).other(rails.front().nic);
          if (topology.device(other).kind == DeviceKind::Switch) {
            leaf = other;
            break;
          }
        }
      if (!leaf)
        throw ConfigError(topology.origin(),
                          fmt::format("{} needs a NIC cabled to a network switch near GPU '{}'",
                                      what, topology.device(g).name));
      if (!topology.device(*leaf).sharp)
        throw ConfigError(topology.device(*leaf).origin,
                          fmt::format("{} needs SHARP, and switch '{}' does not reduce in the "
                                      "network (network.sharp: true on InfiniBand; else use "
                                      "nvlstree, ring or tree)",
                                      what, topology.device(*leaf).name));
      if (shared && *shared != *leaf)
        throw ConfigError(
            topology.origin(),
            fmt::format("{} reduces in the switch the NICs share, and the NICs of local GPU {} "
                        "reach '{}' and '{}' (a SHARP tree over several switches is not "
                        "modelled: one switch, or rail-optimized)",
                        what, l, topology.device(*shared).name, topology.device(*leaf).name));
      shared = leaf;
    }
    const auto it = std::find(switches.begin(), switches.end(), *shared);
    out.sharp_of_local.push_back(static_cast<std::uint32_t>(it - switches.begin()));
    if (it == switches.end()) switches.push_back(*shared);
  }
  out.devices.insert(out.devices.end(), switches.begin(), switches.end());
}

}  // namespace

NvlsSharpDevices nvls_sharp_devices(const Topology& topology, const std::vector<DeviceId>& gpus,
                                    std::uint32_t ranks_per_node) {
  // The NVSwitch per server: NVLSTree's conditions (whole servers, one NVLS domain each),
  // and the same number of ranks on each (shard l is reduced by the switch of GPU l's rail).
  NvlsSharpDevices out;
  out.devices = nvls_tree_devices(topology, gpus, ranks_per_node);
  if (out.devices.size() - gpus.size() != gpus.size() / ranks_per_node)
    throw ConfigError(topology.origin(),
                      "NVLS across servers needs the same number of ranks on every server");
  add_sharp_switches(topology, gpus, ranks_per_node, "NVLS across servers", out);
  return out;
}

NvlsSharpDevices collnet_devices(const Topology& topology, const std::vector<DeviceId>& gpus,
                                 std::uint32_t ranks_per_node) {
  const std::size_t ppn = ranks_per_node;
  // ranks_per_node() is 1 where the ranks do not fill servers in order (8 + 4, strided): one
  // rank per server is the only such layout CollNet takes.
  std::map<int, std::size_t> per_node;
  for (DeviceId g : gpus) ++per_node[topology.device(g).node];
  const bool mixed = std::any_of(per_node.begin(), per_node.end(),
                                 [&](const auto& n) { return n.second != ppn; });
  if (gpus.empty() || ppn == 0 || gpus.size() % ppn != 0 || gpus.size() == ppn || mixed)
    throw ConfigError(topology.origin(),
                      "CollNet needs whole servers, two or more, ranks in server order");
  NvlsSharpDevices out;
  out.devices = gpus;
  add_sharp_switches(topology, gpus, ppn, "CollNet", out);
  return out;
}

NvlsSharpDevices in_switch_devices(const Topology& topology, const std::vector<DeviceId>& gpus,
                                   std::uint32_t ranks_per_node, Algorithm algorithm) {
  if (algorithm == Algorithm::NvlsTree)
    return NvlsSharpDevices{nvls_tree_devices(topology, gpus, ranks_per_node), {}};
  if (algorithm == Algorithm::CollNetChain) return collnet_devices(topology, gpus, ranks_per_node);
  if (algorithm == Algorithm::CollNetDirect) {
    // NCCL disables CollNetDirect "if not on an NVSwitch system" (tuning.cc).
    for (DeviceId g : gpus) {
      bool nvswitch = false;
      for (LinkId id : topology.links_of(g)) {
        const Link& l = topology.link(id);
        nvswitch = nvswitch || (l.fabric == Fabric::NvLink &&
                                topology.device(l.other(g)).kind == DeviceKind::NvSwitch);
      }
      if (!nvswitch)
        throw ConfigError(topology.origin(),
                          fmt::format("CollNetDirect needs NVSwitch servers (NCCL offers it on "
                                      "no other), and GPU '{}' is linked to no NVSwitch (use "
                                      "collnetchain)",
                                      topology.device(g).name));
    }
    return collnet_devices(topology, gpus, ranks_per_node);
  }
  if (algorithm != Algorithm::Nvls)
    throw std::invalid_argument("in_switch_devices: not an in-switch algorithm");
  // One NVLink domain first (it may span several `node:` values, e.g. NVL72 trays); across
  // separate domains, one per server, SHARP between them.
  std::set<int> nodes;
  for (DeviceId g : gpus) nodes.insert(topology.device(g).node);
  const bool servers = nodes.size() > 1 && ranks_per_node > 1 && ranks_per_node < gpus.size();
  try {
    NvlsSharpDevices out{gpus, {}};
    out.devices.push_back(nvls_switch(topology, gpus));
    return out;
  } catch (const ConfigError&) {
    if (!servers) throw;
  }
  return nvls_sharp_devices(topology, gpus, ranks_per_node);
}

std::uint32_t ranks_per_node(const Topology& topology, const std::vector<DeviceId>& rank_devices) {
  // Every server one consecutive run, all runs the same size (4 + 8 is not 3 servers of 4).
  const std::vector<std::uint32_t> blocks = node_blocks(topology, rank_devices);
  if (blocks.empty() || std::adjacent_find(blocks.begin(), blocks.end(),
                                           std::not_equal_to<>()) != blocks.end())
    return 1;
  return blocks.front();
}

std::vector<std::uint32_t> node_blocks(const Topology& topology,
                                       const std::vector<DeviceId>& rank_devices) {
  std::vector<std::uint32_t> blocks;
  std::set<int> seen;
  for (std::size_t i = 0; i < rank_devices.size(); ++i) {
    const int node = topology.device(rank_devices[i]).node;
    if (i > 0 && node >= 0 && node == topology.device(rank_devices[i - 1]).node) {
      ++blocks.back();
      continue;
    }
    if (node >= 0 && !seen.insert(node).second) return {};  // a server in two runs
    blocks.push_back(1);
  }
  return blocks;
}

std::uint32_t default_ring_channels(const Topology& topology,
                                    const std::vector<DeviceId>& rank_devices,
                                    std::uint32_t ppn) {
  if (ppn <= 1 || rank_devices.size() <= ppn) {  // servers filled unevenly, else no channels
    const std::vector<std::uint32_t> blocks = node_blocks(topology, rank_devices);
    if (blocks.size() <= 1 ||
        std::none_of(blocks.begin(), blocks.end(), [](std::uint32_t b) { return b > 1; }))
      return 1;
  }
  const int node = topology.device(rank_devices[0]).node;
  std::uint32_t nics = 0;
  for (const Device& d : topology.devices())
    if (d.kind == DeviceKind::Nic && d.node == node) ++nics;
  return std::clamp<std::uint32_t>(nics, 1, 64);
}

}  // namespace gradsync
