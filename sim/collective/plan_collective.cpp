// Dispatch from a CollectiveRequest to the planner that implements it.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "gradsync/collective/collective.hpp"
#include "gradsync/fabric/nccl_model.hpp"

namespace gradsync {

std::optional<Algorithm> algorithm_from_string(std::string_view text) {
  for (const AlgorithmInfo& a : algorithm_registry())
    if (a.name == text) return a.algorithm;
  return std::nullopt;
}

double busbw_factor(CollectiveOp op, std::uint32_t ranks) {
  const double n = ranks;
  switch (op) {
    case CollectiveOp::AllReduce: return n > 1 ? 2.0 * (n - 1) / n : 0.0;
    case CollectiveOp::ReduceScatter:
    case CollectiveOp::AllGather: return n > 1 ? (n - 1) / n : 0.0;
    case CollectiveOp::Broadcast:
    case CollectiveOp::Reduce: return 1.0;
  }
  return 1.0;
}

namespace {

// Server blocks that list every rank, some server holding several (8 + 4, or 8 + 8).
bool server_blocks(const CollectiveRequest& r) {
  std::uint64_t listed = 0;
  for (std::uint32_t p : r.node_sizes) listed += p;
  return r.node_sizes.size() > 1 && listed == r.ranks &&
         std::any_of(r.node_sizes.begin(), r.node_sizes.end(), [](std::uint32_t p) { return p > 1; });
}

Plan plan_request(const CollectiveRequest& r) {
  const bool flows_only = r.form == PlanForm::Flows;
  auto unsupported = [&]() -> Plan {
    throw std::invalid_argument(fmt::format("{} has no {} algorithm in gradsync",
                                            to_string(r.op), to_string(r.algorithm)));
  };
  // Tree and chain pipelining: one chunk per MiB per tree, 1..256. NCCL pipelines in chunks of
  // a few hundred KiB; the pipeline fill costs about (2·height)/P of the bandwidth term, so
  // 256 chunks keep a 256-rank tree within ~6 % of 2S/B while bounding the event count.
  const auto auto_pipeline = [&](double per_tree_bytes) {
    if (r.pipeline > 0) return r.pipeline;
    return static_cast<std::uint32_t>(std::clamp(per_tree_bytes / 1048576.0, 1.0, 256.0));
  };
  // Broadcast / Reduce chains: NCCL moves each channel's data one step at a time
  // (BROADCAST_CHUNKSTEPS = REDUCE_CHUNKSTEPS = 1, src/include/collectives.h): Simple's step is
  // 512 KiB (a 4 MiB buffer over NCCL_STEPS = 8), LL's 32 KiB of data. Chunks of 32 KiB per
  // channel, at most 256 (512 KiB each from 128 MiB per channel up), so that a chain across a
  // few dozen ranks pipelines as NCCL's does instead of forwarding whole MiB blocks hop by hop.
  const auto chain_pipeline = [&]() -> std::uint32_t {
    if (r.pipeline > 0) return r.pipeline;
    const double per_channel = r.bytes.bytes() / std::max<std::uint32_t>(r.channels, 1);
    return static_cast<std::uint32_t>(std::clamp(std::ceil(per_channel / 32768.0), 1.0, 256.0));
  };
  // NVLSTree / NVLS across servers: one pipeline step per MiB, at least two (every GPU then
  // uses both trees whatever the size: the connections a plan needs, device_pairs, must not
  // depend on the size), at most what keeps the plan near 2M transfers, within 64..1024 steps.
  // The fill costs (stages - 1) / steps of the bandwidth time (7 stages on 4 servers: 11 % at
  // 64 steps, 0.6 % at 1024), which NCCL's chunks of 64-128 KiB make negligible at large sizes.
  const auto in_switch_steps = [&]() -> std::uint32_t {
    if (r.pipeline > 0) return r.pipeline;
    // Servers and shards per step (heads): ranks_per_node each, or on servers of different
    // sizes as many as the smallest holds (plan_nvls_tree_allreduce).
    double ppn = std::max<std::uint32_t>(r.ranks_per_node, 1);
    double nodes = r.ranks / ppn;
    double per_step = r.ranks * (2.0 * ppn + 1.0) + 2.0 * nodes * ppn;
    if (r.ranks_per_node <= 1 && server_blocks(r)) {
      nodes = static_cast<double>(r.node_sizes.size());
      ppn = *std::min_element(r.node_sizes.begin(), r.node_sizes.end());
      per_step = ppn * (2.0 * r.ranks + 3.0 * nodes - 2.0);
    }
    const double cap = std::clamp(std::floor(2097152.0 / per_step), 64.0, 1024.0);
    if (r.algorithm == Algorithm::NvlsTree && r.nvls_channels > 0 && r.nvls_heads > 0)
      return nvls_tree_pipeline_steps(r.bytes, r.nvls_channels, r.nvls_heads,
                                      static_cast<std::uint32_t>(nodes),
                                      static_cast<std::uint32_t>(cap));
    return static_cast<std::uint32_t>(std::clamp(std::ceil(r.bytes.bytes() / 1048576.0), 2.0, cap));
  };
  // CollNet: one chunk per 256 KiB per lane (channel or head), 1..256. A discretisation, not a
  // fitted constant: half NCCL's Simple step (512 KiB: a 4 MiB buffer over NCCL_STEPS = 8),
  // fine enough that flow fidelity's fill estimate stays near step fidelity's replay (chain on
  // 4 × DGX A100: 64 MiB 567 / 559 us, 256 MiB 2035 / 2027; one chunk per MiB, as the tree,
  // left them 1.8× apart at 4–16 MiB).
  const auto collnet_pipeline = [&](std::uint32_t lanes) -> std::uint32_t {
    if (r.pipeline > 0) return r.pipeline;
    return static_cast<std::uint32_t>(
        std::clamp(std::ceil(r.bytes.bytes() / lanes / 262144.0), 1.0, 256.0));
  };
  switch (r.algorithm) {
    case Algorithm::Ring: {
      RingOptions ring{r.channels, r.pipeline > 0 ? r.pipeline : 1, {}, flows_only};
      // Several channels over several nodes: spread the node crossings over the NICs (rails),
      // also over servers filled unevenly (8 + 4 ranks).
      const bool uneven = server_blocks(r);
      if (!r.mesh_rings.empty() && r.mesh_rings.front().size() == r.ranks) {
        const auto rings = static_cast<std::uint32_t>(r.mesh_rings.size());
        ring.channels = std::max(r.channels, rings);
        for (std::uint32_t c = 0; c < ring.channels; ++c) ring.orders.push_back(r.mesh_rings[c % rings]);
      } else if (!r.mesh_paths.empty() && r.ranks % r.mesh_paths.front().size() == 0) {
        ring.orders = rail_ring_orders(r.ranks, r.mesh_paths, r.channels);
      } else if (uneven && r.mesh_server_paths.size() == r.node_sizes.size()) {
        ring.orders = rail_ring_orders(r.node_sizes, r.mesh_server_paths, r.channels);
      } else if (r.channels > 1 && r.ranks_per_node > 1 && r.ranks > r.ranks_per_node &&
          r.ranks % r.ranks_per_node == 0)
        ring.orders = rail_ring_orders(r.ranks, r.ranks_per_node, r.channels);
      else if (r.channels > 1 && uneven)
        ring.orders = rail_ring_orders(r.node_sizes, r.channels);
      switch (r.op) {
        case CollectiveOp::AllReduce: return plan_ring_allreduce(r.ranks, r.bytes, ring);
        case CollectiveOp::ReduceScatter: return plan_ring_reduce_scatter(r.ranks, r.bytes, ring);
        case CollectiveOp::AllGather: return plan_ring_allgather(r.ranks, r.bytes, ring);
        case CollectiveOp::Broadcast: {
          RingOptions chain = ring;
          chain.pipeline = chain_pipeline();
          return plan_ring_broadcast(r.ranks, r.root, r.bytes, chain);
        }
        case CollectiveOp::Reduce: {
          RingOptions chain = ring;
          chain.pipeline = chain_pipeline();
          return plan_ring_reduce(r.ranks, r.root, r.bytes, chain);
        }
      }
      break;
    }
    case Algorithm::Tree:
      if (r.op != CollectiveOp::AllReduce) return unsupported();
    {
      TreeOptions tree{r.ranks_per_node, 1, 2, flows_only, {}};
      // Servers filled unevenly (8 + 4): the trees span the servers, each chaining its own
      // ranks (on NVLink meshes along its per-channel paths, cut at the channel's NIC).
      // (ranks_per_node is 1 where the servers hold different numbers of ranks).
      const bool uneven = r.ranks_per_node <= 1 && server_blocks(r);
      if (uneven) {
        tree.node_sizes = r.node_sizes;
        // A server without NVLink rings has its rank order only (mesh_server_paths): it
        // spreads the pairs' heads over its GPUs instead (no orders).
        if (r.mesh_server_paths.size() == r.node_sizes.size())
          for (const auto& paths : r.mesh_server_paths) {
            const bool rank_order_only =
                paths.size() == 1 && std::is_sorted(paths.front().begin(), paths.front().end());
            tree.server_orders.push_back(
                rank_order_only ? std::vector<std::vector<std::uint32_t>>{} : paths);
          }
      }
      // Across nodes, one pair of trees per channel (NIC); two trees otherwise.
      const bool across = uneven || (r.ranks_per_node > 1 && r.ranks > r.ranks_per_node);
      tree.trees = across ? std::clamp<std::uint32_t>(2 * r.channels, 2, 64) : 2;
      tree.pipeline = auto_pipeline(r.bytes.bytes() / tree.trees);
      // On NVLink meshes the chains follow the server's rings: across servers pair p takes
      // ring p·R/pairs of the R rings (which repeat each ring in proportion to its links, so
      // the chains load the links evenly), turned to start at the GPU by channel p's NIC.
      const bool meshed = !uneven && !r.mesh_rings.empty() &&
                          r.mesh_rings.front().size() == r.ranks_per_node;
      if (meshed && across && !r.mesh_paths.empty()) {
        const std::uint32_t pairs = tree.trees / 2;
        for (std::uint32_t p = 0; p < pairs; ++p) {
          const auto& ring = r.mesh_rings[std::uint64_t{p} * r.mesh_rings.size() / pairs];
          const std::uint32_t head = r.mesh_paths[p % r.mesh_paths.size()].front();
          const auto at = static_cast<std::size_t>(std::find(ring.begin(), ring.end(), head) - ring.begin());
          std::vector<std::uint32_t> chain;
          for (std::size_t k = 0; k < ring.size(); ++k) chain.push_back(ring[(at + k) % ring.size()]);
          tree.local_orders.push_back(std::move(chain));
        }
      } else if (meshed) {
        tree.local_orders = {r.mesh_rings.front()};
      }
      return plan_tree_allreduce(r.ranks, r.bytes, tree);
    }
    case Algorithm::Hierarchical:
      if (r.op != CollectiveOp::AllReduce) return unsupported();
      // Its phase across servers all-reduces local rank j's part among the ranks at position j
      // of every server: servers of different sizes have no such rails.
      if (r.ranks_per_node <= 1 && server_blocks(r))
        throw std::invalid_argument(fmt::format(
            "hierarchical needs the same number of ranks on every server, and these hold {}",
            fmt::join(r.node_sizes, " + ")));
      return plan_hierarchical_allreduce(
          r.ranks, r.bytes,
          HierarchicalOptions{r.ranks_per_node, r.pipeline > 0 ? r.pipeline : 1,
                              !r.mesh_rings.empty() && r.mesh_rings.front().size() == r.ranks_per_node
                                  ? r.mesh_rings : std::vector<std::vector<std::uint32_t>>{}});
    case Algorithm::ParameterServer: {
      if (r.op != CollectiveOp::AllReduce) return unsupported();
      const std::uint32_t workers = ps_worker_count(r.ranks, r.ps);
      if (workers == 0)
        throw std::invalid_argument(fmt::format(
            "{} dedicated servers leave no worker among {} ranks", r.ps.servers, r.ranks));
      return plan_parameter_server_allreduce(workers, r.bytes, r.ps);
    }
    case Algorithm::Nvls: {
      if (r.op != CollectiveOp::AllReduce) return unsupported();
      // `ranks` GPUs plus the NVSwitch as rank `ranks`. NCCL's NVLS kernels stream chunks of
      // a few hundred KiB; one chunk per 256 KiB, 1..256, keeps the fill under 1/256 of S/B
      // at large sizes while bounding the event count.
      if (!r.sharp_of_local.empty())  // across servers with SHARP: pipelined as NVLSTree
        return plan_nvls_sharp_allreduce(
            r.ranks, r.bytes,
            NvlsSharpOptions{r.ranks_per_node, in_switch_steps(), r.sharp_of_local, flows_only});
      const std::uint32_t pipeline =
          r.pipeline > 0 ? r.pipeline
                         : static_cast<std::uint32_t>(
                               std::clamp(std::ceil(r.bytes.bytes() / 262144.0), 1.0, 256.0));
      return plan_nvls_allreduce(r.ranks, r.bytes, NvlsOptions{pipeline});
    }
    case Algorithm::CollNetChain: {
      if (r.op != CollectiveOp::AllReduce) return unsupported();
      // `ranks` GPUs plus the SHARP switches. A chain is 2·ppn stages deep (16 on 8-GPU
      // servers), so it pipelines finer than the tree (collnet_pipeline).
      const std::uint32_t channels = std::clamp<std::uint32_t>(r.channels, 1, 64);
      return plan_collnet_chain_allreduce(
          r.ranks, r.bytes,
          CollNetChainOptions{r.ranks_per_node, channels, collnet_pipeline(channels),
                              r.sharp_of_local, flows_only});
    }
    case Algorithm::CollNetDirect: {
      if (r.op != CollectiveOp::AllReduce) return unsupported();
      // Heads: one per channel (NIC), at most 8 (NCCL_MAX_DIRECT_ARITY + 1) and ppn, spread
      // over the locals.
      const std::uint32_t ppn = std::max<std::uint32_t>(r.ranks_per_node, 1);
      const std::uint32_t count = std::clamp<std::uint32_t>(std::min(r.channels, ppn), 1, 8);
      std::vector<std::uint32_t> heads;
      for (std::uint32_t p = 0; p < count; ++p) heads.push_back(p * ppn / count);
      return plan_collnet_direct_allreduce(
          r.ranks, r.bytes,
          CollNetDirectOptions{ppn, std::move(heads), collnet_pipeline(count), r.sharp_of_local,
                               flows_only});
    }
    case Algorithm::NvlsTree: {
      if (r.op != CollectiveOp::AllReduce) return unsupported();
      // `ranks` GPUs plus one NVSwitch rank per server; steps: in_switch_steps().
      NvlsTreeOptions nvls_tree{r.ranks_per_node, in_switch_steps(), flows_only, {}};
      if (r.ranks_per_node <= 1 && server_blocks(r)) nvls_tree.node_sizes = r.node_sizes;
      return plan_nvls_tree_allreduce(r.ranks, r.bytes, nvls_tree);
    }
  }
  return unsupported();
}

}  // namespace

std::uint32_t nvls_tree_pipeline_steps(Bytes bytes, std::uint32_t channels, std::uint32_t heads,
                                       std::uint32_t nodes, std::uint32_t max_steps) {
  if (channels == 0 || heads == 0) throw std::invalid_argument("nvls_tree_pipeline_steps: no channels");
  const double chunk =
      nccl_nvls_chunk(Algorithm::NvlsTree, bytes, channels, heads, std::max<std::uint32_t>(nodes, 1))
          .bytes();
  const double loops = std::ceil(bytes.bytes() / (static_cast<double>(channels) * heads * chunk));
  return static_cast<std::uint32_t>(
      std::clamp(2.0 * loops, 2.0, static_cast<double>(std::max<std::uint32_t>(max_steps, 2))));
}

Plan plan_collective(const CollectiveRequest& r) {
  Plan plan = plan_request(r);
  // Planners without a flows-only form (hierarchical, parameter server, NVLS in one domain)
  // are summed from their transfers.
  if (r.form == PlanForm::Flows) make_flows_only(plan);
  return plan;
}

}  // namespace gradsync
