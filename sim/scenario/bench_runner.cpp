// The bench runner (bench_runner.hpp): places the ranks, chooses the candidate algorithms and
// their devices (in-switch reducers, parameter servers), routes only the connections the runs
// will use, then simulates each size and turns its time into nccl-tests' algbw and busbw.
#include "gradsync/scenario/bench_runner.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <stdexcept>

#include "gradsync/units/config_error.hpp"
#include "gradsync/collective/mesh_ring_orders.hpp"
#include "gradsync/fabric/nccl_tuner.hpp"

namespace gradsync {

std::string BenchRow::label() const {
  return protocol.empty() ? algorithm : algorithm + "/" + protocol;
}

std::vector<double> bench_sizes(Bytes min, Bytes max, double factor) {
  std::vector<double> sizes;
  for (double s = min.bytes(); s <= max.bytes() * (1 + 1e-12); s *= factor)
    sizes.push_back(std::round(s));
  return sizes;
}

BenchResult run_bench(const Topology& topo, const BenchRequest& request) {
  if (request.sizes.empty()) throw std::invalid_argument("run_bench: no message sizes");
  const auto mark = [&](const char* option) {
    return SourceMark{request.origin + " " + option, 0, 0};
  };
  const CollectiveOp op = request.op;
  const bool is_auto = !request.algorithm;
  const std::uint32_t n =
      request.gpus != 0 ? request.gpus : static_cast<std::uint32_t>(topo.gpu_count());
  const bool nccl = topo.software() == SoftwareModel::Nccl;
  const std::vector<DeviceId> numbered = place_ranks(topo, n, request.placement);
  if (request.root >= n) throw ConfigError(mark("--root"), "root must be below the rank count");
  // NCCL's rings and trees group each server's GPUs whatever the ranks' numbering (strided or
  // shuffled ranks run as fast as ranks in order); without NCCL's model they follow the ranks.
  const std::vector<DeviceId> placed = nccl ? nccl_server_order(topo, numbered) : numbered;
  const std::uint32_t ppn = ranks_per_node(topo, placed);
  // Servers of directly NVLinked GPUs: ranks along NVLink, as NCCL chains them.
  const std::vector<DeviceId> ranks = nvlink_chain_order(topo, placed, ppn);

  std::vector<Algorithm> candidates;
  if (is_auto) {
    // Under NCCL's software model auto is NCCL's choice set (Ring, Tree, NVLS, NVLSTree):
    // NCCL has no 2-D hierarchical AllReduce, which stays an explicit what-if there.
    candidates = auto_candidates(op, n, ppn, nccl);
  } else {
    candidates.push_back(*request.algorithm);
  }
  // NVLS: the NVSwitch of the ranks' NVLink domain plays the plan's extra rank; NVLSTree: one
  // NVSwitch per server. An explicit NVLS / NVLSTree reports why it cannot run; auto tries them
  // only where they can (AllReduce, NVSwitches of NVLink4 or later, NCCL's software model,
  // which carries NVLS's bandwidth): NVLS in one server, NVLSTree across servers.
  // CollNetChain, CollNetDirect: the SHARP switches the servers' NICs share, after the GPUs.
  std::map<Algorithm, std::vector<DeviceId>> switch_devices;
  // NVLS across servers and CollNet: the SHARP switch per local GPU.
  std::map<Algorithm, std::vector<std::uint32_t>> sharp_of_local;
  const auto with_switches = [&](Algorithm a) {
    NvlsSharpDevices d = in_switch_devices(topo, ranks, ppn, a);
    sharp_of_local[a] = d.sharp_of_local;
    return d.devices;
  };
  for (Algorithm a : {Algorithm::Nvls, Algorithm::NvlsTree, Algorithm::CollNetChain,
                      Algorithm::CollNetDirect}) {
    if (request.algorithm == a) {
      if (op != CollectiveOp::AllReduce)
        throw ConfigError(mark("--algo"), std::string(to_string(op)) + " has no " +
                                              std::string(to_string(a)) + " algorithm in gradsync");
      switch_devices[a] = with_switches(a);
    } else if (is_auto && op == CollectiveOp::AllReduce && nccl && n > 1 &&
               (a == Algorithm::Nvls ? n == ppn || ppn > 1 : n != ppn)) {
      try {
        switch_devices[a] = with_switches(a);
        candidates.push_back(a);
      } catch (const ConfigError&) {
      }
    }
  }
  // Dedicated parameter servers on different machines, as a run places them, or on hosts of
  // their own after every GPU.
  const std::vector<DeviceId>& ps_hosts = request.ps_hosts;
  std::vector<DeviceId> ps_ranks =
      request.ps_placement == ServerPlacement::Dedicated && ps_hosts.empty()
          ? spread_dedicated_servers(topo, ranks, request.ps_servers) : ranks;
  ps_ranks.insert(ps_ranks.end(), ps_hosts.begin(), ps_hosts.end());
  auto devices_for = [&](Algorithm a) -> const std::vector<DeviceId>& {
    if (a == Algorithm::ParameterServer) return ps_ranks;
    const auto it = switch_devices.find(a);
    return it != switch_devices.end() ? it->second : ranks;
  };

  CollectiveRequest base;
  base.op = op;
  base.ranks = n;
  base.ranks_per_node = ppn;
  base.node_sizes = node_blocks(topo, ranks);
  base.channels = request.channels > 0 ? request.channels : default_ring_channels(topo, ranks, ppn);
  base.mesh_rings = server_mesh_rings(topo, ranks, ppn);
  base.mesh_paths = mesh_rail_paths(topo, ranks, ppn, base.mesh_rings, base.channels);
  if (base.mesh_rings.empty() && base.node_sizes.size() > 1)
    base.mesh_server_paths = mesh_server_paths(topo, ranks, base.node_sizes, base.channels);
  base.pipeline = request.pipeline;
  // The root is the rank the request names, wherever the orders above moved its GPU.
  base.root = static_cast<std::uint32_t>(
      std::find(ranks.begin(), ranks.end(), numbered[request.root]) - ranks.begin());
  base.ps.servers = ps_hosts.empty() ? request.ps_servers
                                     : static_cast<std::uint32_t>(ps_hosts.size());
  base.ps.placement = ps_hosts.empty() ? request.ps_placement : ServerPlacement::Dedicated;
  if (nccl && switch_devices.count(Algorithm::NvlsTree) != 0)
    set_nvls_loops(base, nccl_topology_view(topo, ranks, ppn, Algorithm::NvlsTree));

  // Plans that a request cannot make are bad input (e.g. tree ReduceScatter).
  auto make_plan = [&](Algorithm a, Bytes bytes, Fidelity plan_fidelity) {
    CollectiveRequest r = base;
    r.algorithm = a;
    r.bytes = bytes;
    if (const auto it = sharp_of_local.find(a); it != sharp_of_local.end())
      r.sharp_of_local = it->second;
    if (a == Algorithm::ParameterServer) r.ranks = static_cast<std::uint32_t>(ps_ranks.size());
    try {
      return plan_collective(r, plan_fidelity);
    } catch (const std::invalid_argument& e) {
      throw ConfigError(mark("--algo"), e.what());
    }
  };

  const std::vector<double>& sizes = request.sizes;
  const std::uint32_t busbw_ranks =
      candidates[0] == Algorithm::ParameterServer
          ? ps_worker_count(static_cast<std::uint32_t>(ps_ranks.size()), base.ps) : n;
  const bool nccl_auto = is_auto && nccl;
  std::optional<NcclTopologyView> view;
  if (nccl_auto) {
    std::optional<Algorithm> in_switch;
    for (Algorithm a : {Algorithm::Nvls, Algorithm::NvlsTree})
      if (switch_devices.count(a) != 0) in_switch = a;
    view = nccl_topology_view(topo, ranks, ppn, in_switch);
  }
  Simulation sim(topo, request.simgrid_args);
  if (request.progress) sim.set_progress(request.progress);
  {
    std::vector<std::pair<DeviceId, DeviceId>> pairs;
    // Under NCCL's auto without best only NCCL's choices run: route only their connections
    // (a 16,384-GPU cluster has ~100k per algorithm).
    std::vector<Algorithm> routed = candidates;
    if (nccl_auto && !request.best) {
      routed.clear();
      for (double bytes : sizes) {
        const Algorithm a = nccl_tune(*view, op, Bytes(bytes)).algorithm;
        if (std::find(routed.begin(), routed.end(), a) == routed.end()) routed.push_back(a);
      }
    }
    for (Algorithm a : routed) {
      // The connections a plan uses are those of its flows-only form.
      const auto p = device_pairs(make_plan(a, Bytes(sizes.front()), Fidelity::Flow),
                                  devices_for(a));
      pairs.insert(pairs.end(), p.begin(), p.end());
    }
    sim.build(pairs);
  }

  auto simulate = [&](Algorithm a, double bytes, BenchRow& into) {
    const PlanTiming t = sim.run_plan(make_plan(a, Bytes(bytes), request.fidelity),
                                      devices_for(a), request.fidelity);
    into.time_us = t.time.seconds() * 1e6;
    into.algorithm = std::string(to_string(a));
    into.protocol = t.protocol ? std::string(to_string(*t.protocol)) : std::string();
    into.channels = t.nccl_channels;
    into.fidelity = std::string(to_string(t.fidelity));
    into.flows = t.flows;
  };
  BenchResult result;
  result.topology_name = topo.name();
  result.software = topo.software();
  result.ranks = n;
  result.ranks_per_node = ppn;
  if (std::adjacent_find(base.node_sizes.begin(), base.node_sizes.end(),
                         std::not_equal_to<>()) != base.node_sizes.end())
    result.node_sizes = base.node_sizes;
  result.channels = base.channels;
  result.nccl_view = view;
  const double factor = busbw_factor(op, busbw_ranks);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (request.on_size) request.on_size(i, sizes.size(), Bytes(sizes[i]));
    BenchRow row{};
    if (nccl_auto) simulate(nccl_tune(*view, op, Bytes(sizes[i])).algorithm, sizes[i], row);
    if (!nccl_auto || request.best) {
      BenchRow fastest{};
      for (Algorithm a : candidates) {
        BenchRow r{};
        simulate(a, sizes[i], r);
        if (fastest.time_us < 0 || r.time_us < fastest.time_us) fastest = r;
      }
      if (!nccl_auto) row = fastest;
      row.best_algorithm = fastest.label();
      row.best_time_us = fastest.time_us;
    }
    row.bytes = sizes[i];
    // nccl-tests times back-to-back iterations: with -g G one thread launches G collectives
    // per iteration, so the iteration is the slower of the host's launches and the collective.
    const double host_us = request.gpus_per_thread * kNcclTestsLaunchPerGpuUs;
    row.simulated_us = row.time_us;
    if (request.gpus_per_thread > 1 && row.time_us < host_us) {
      row.time_us = host_us;
      row.host_bound = true;
    }
    if (request.gpus_per_thread > 1 && row.best_time_us >= 0)
      row.best_time_us = std::max(row.best_time_us, host_us);
    row.algbw = row.time_us > 0 ? sizes[i] / (row.time_us * 1e-6) / 1e9 : 0.0;
    row.busbw = row.algbw * factor;
    row.best_busbw =
        row.best_time_us > 0 ? sizes[i] / (row.best_time_us * 1e-6) / 1e9 * factor : 0.0;
    result.rows.push_back(row);
  }
  return result;
}

}  // namespace gradsync
