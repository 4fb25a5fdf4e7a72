// NVLS AllReduce across servers with SHARP between them (collective.hpp): NCCL's NVLS
// algorithm on several nodes, which it runs when CollNet (the SHARP plugin) is enabled
// (NVIDIA/nccl src/graph/tuning.cc: NVLS on nNodes > 1 is disabled unless collnetEnable;
// latency intraLat + interLat, bandwidth min(NVLS intra, NIC) per channel). Per server the
// NVSwitch reduces every GPU's data and hands shard l to local GPU l, as in NVLSTree; GPU l
// sends its server's partial sum of the shard through its NIC to the InfiniBand switch that
// all servers' GPU-l NICs share, which reduces the servers' partial sums in the network
// (SHARP) and returns the total to each of them; GPU l stores it into the NVSwitch, which
// multicasts it to the server's other GPUs.
//
// Ranks: GPUs 0..G-1 node-major, server a's NVSwitch G + a, then the SHARP switches
// G + N + s (options.sharp_of_local[l] = s for local index l). Chunk (c·ppn + l) is shard l of
// pipeline step c. For server a, shard (c, l):
//   push(i):   GPU i → NVSwitch a, Reduce; after push(i) of the previous chunk (same port);
//   deliver:   NVSwitch a → GPU l, Copy; after every push of the chunk in server a;
//   up:        GPU l of a → SHARP switch, Reduce; after the delivery;
//   down:      SHARP switch → GPU l of a, Copy; after every server's up of the chunk;
//   store:     GPU l → NVSwitch a, Copy; after the down;
//   multicast: NVSwitch a → GPU i (i ≠ l), Copy; after the store.
// Per GPU port: S + S/ppn out, S in (as NVLSTree); per NIC: S/ppn each way whatever the
// number of servers (a tree sends up to 3·S/(2·ppn) at interior servers). One phase, 6 steps.
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "gradsync/collective/collective.hpp"
#include "ring_pass.hpp"

namespace gradsync {

Plan plan_nvls_sharp_allreduce(std::uint32_t gpus, Bytes bytes, const NvlsSharpOptions& options) {
  constexpr const char* kPlanner = "plan_nvls_sharp_allreduce";
  const std::uint32_t ppn = options.ranks_per_node;
  const std::uint32_t real_chunks = options.pipeline;
  detail::require_servers(kPlanner, gpus, ppn, real_chunks, bytes.bytes());
  // Flows-only: every pipeline step uses the same connections.
  const std::uint32_t chunks = detail::built_steps(options.flows_only, real_chunks, 1);
  const std::uint32_t sharp_switches = detail::sharp_switch_count(kPlanner, options.sharp_of_local, ppn);
  const std::uint32_t nodes = gpus / ppn;
  const std::uint64_t per_step = std::uint64_t{gpus} * (2 * std::uint64_t{ppn} + 1) +
                                 2 * std::uint64_t{nodes} * ppn;
  detail::require(per_step * real_chunks < kNoTransfer &&
                      std::uint64_t{gpus} + nodes + sharp_switches < kNoRank,
                  kPlanner, "too large a plan");

  Plan plan;
  plan.op = CollectiveOp::AllReduce;
  plan.algorithm = Algorithm::Nvls;
  plan.ranks = gpus + nodes + sharp_switches;
  plan.contributors = gpus;
  plan.total_bytes = bytes;
  plan.chunk_bytes = detail::fold_chunks(
      split_bytes(bytes, real_chunks * ppn), real_chunks, chunks, ppn,
      [ppn](std::uint32_t c, std::uint32_t l, std::uint32_t) { return c * ppn + l; });
  plan.channels = 1;
  detail::reserve_transfers(plan, per_step * chunks, kPlanner);

  const auto gpu = [&](std::uint32_t node, std::uint32_t local) { return node * ppn + local; };
  const auto nvswitch = [&](std::uint32_t node) { return gpus + node; };
  const auto sharp = [&](std::uint32_t local) {
    return gpus + nodes + options.sharp_of_local[local];
  };

  std::vector<TransferId> last_push(gpus, kNoTransfer);       // per GPU port
  // Per NVSwitch → GPU connection, two streams (deliveries of the GPU's own shards and
  // multicasts of the others'), as in NVLSTree.
  std::vector<TransferId> last_delivery(gpus, kNoTransfer);
  std::vector<TransferId> last_multicast(gpus, kNoTransfer);
  std::vector<TransferId> last_store(gpus, kNoTransfer);
  std::vector<TransferId> last_up(gpus, kNoTransfer);    // per GPU → SHARP switch
  std::vector<TransferId> last_down(gpus, kNoTransfer);  // per SHARP switch → GPU
  std::vector<TransferId> pushes(ppn), ups(nodes);

  for (std::uint32_t c = 0; c < chunks; ++c) {
    for (std::uint32_t l = 0; l < ppn; ++l) {
      const std::uint32_t chunk = c * ppn + l;
      for (std::uint32_t a = 0; a < nodes; ++a) {
        for (std::uint32_t i = 0; i < ppn; ++i) {
          const std::uint32_t g = gpu(a, i);
          pushes[i] = last_push[g] =
              plan.add_streamed(g, nvswitch(a), chunk, TransferKind::Reduce, {}, last_push[g]);
        }
        const std::uint32_t g = gpu(a, l);
        // The last push first (dep0: the data dependency check_plan searches first).
        std::rotate(pushes.begin(), pushes.end() - 1, pushes.end());
        const TransferId delivered = last_delivery[g] = plan.add_streamed(
            nvswitch(a), g, chunk, TransferKind::Copy, pushes, last_delivery[g]);
        ups[a] = last_up[g] = plan.add_streamed(g, sharp(l), chunk, TransferKind::Reduce,
                                                std::array{delivered}, last_up[g]);
      }
      // The last server's up first (dep0), then the others.
      std::vector<TransferId> all_ups(ups.rbegin(), ups.rend());
      for (std::uint32_t a = 0; a < nodes; ++a) {
        const std::uint32_t g = gpu(a, l);
        const TransferId down = last_down[g] = plan.add_streamed(
            sharp(l), g, chunk, TransferKind::Copy, all_ups, last_down[g]);
        const TransferId store = last_store[g] = plan.add_streamed(
            g, nvswitch(a), chunk, TransferKind::Copy, std::array{down}, last_store[g]);
        for (std::uint32_t i = 0; i < ppn; ++i) {
          if (i == l) continue;
          const std::uint32_t dst = gpu(a, i);
          last_multicast[dst] = plan.add_streamed(nvswitch(a), dst, chunk, TransferKind::Copy,
                                                  std::array{store}, last_multicast[dst]);
        }
      }
    }
  }
  plan.steps = 6;
  // One phase: pushes, SHARP round trips and multicasts stream; the fill is one pipeline step
  // per stage.
  const Bytes step_bytes = Bytes(bytes.bytes() / real_chunks);
  plan.end_phase(plan.steps, Bytes(step_bytes.bytes() * (plan.steps - 1) / ppn + step_bytes.bytes()));
  if (options.flows_only) make_flows_only(plan, per_step * real_chunks);
  return plan;
}

}  // namespace gradsync
