// Parameter-server AllReduce as push/pull (sim/collective/README.md): gradients are sharded by
// bytes over k servers; every worker pushes shard j to server j (Reduce), and server j, once every
// push to it has arrived, pulls the reduced shard back to every worker (Copy). Pushes to a server
// arrive at once (incast), which is the point of modelling it.
//
// Placement: dedicated servers are extra ranks workers..workers+k-1 with no gradients of their
// own; colocated server j is worker floor(j·n/k), spread over the node-major rank range, and
// sends nothing to itself. chunk j = shard j, chunk_owner[j] = server of shard j, channel = j.
// Dedicated: each worker sends and receives S; server j receives and sends n·|shard j|.
// Time ≈ 2·n·S/(k·B_server) + 2α when server NICs are the bottleneck.
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "gradsync/collective/collective.hpp"
#include "ring_pass.hpp"

namespace gradsync {

Plan plan_parameter_server_allreduce(std::uint32_t workers, Bytes bytes,
                                     const ParameterServerOptions& options) {
  constexpr const char* kPlanner = "plan_parameter_server_allreduce";
  const std::uint32_t k = options.servers;
  const bool dedicated = options.placement == ServerPlacement::Dedicated;
  detail::require(workers >= 1, kPlanner, "needs at least one worker");
  detail::require(k >= 1 && k <= 256, kPlanner, fmt::format("servers must be 1..256, got {}", k));
  detail::require(dedicated || k <= workers, kPlanner,
                  fmt::format("{} colocated servers need at least as many workers, got {}", k,
                              workers));
  detail::require(bytes.bytes() >= 0.0, kPlanner, "negative size");
  detail::require(std::uint64_t{workers} * k * 2 + k < kNoTransfer, kPlanner,
                  "too large a plan");

  Plan plan;
  plan.op = CollectiveOp::AllReduce;
  plan.algorithm = Algorithm::ParameterServer;
  plan.ranks = dedicated ? workers + k : workers;
  plan.contributors = workers;
  plan.total_bytes = bytes;
  plan.chunk_bytes = split_bytes(bytes, k);
  plan.channels = k;
  plan.chunk_owner.resize(k);
  for (std::uint32_t j = 0; j < k; ++j)
    plan.chunk_owner[j] = dedicated
                              ? workers + j
                              : static_cast<std::uint32_t>(std::uint64_t{j} * workers / k);
  detail::reserve_transfers(plan, std::uint64_t{2} * workers * k, kPlanner);

  std::vector<std::vector<TransferId>> pushes(k);
  for (std::uint32_t i = 0; i < workers; ++i) {
    for (std::uint32_t j = 0; j < k; ++j) {
      const std::uint32_t server = plan.chunk_owner[j];
      if (server == i) continue;
      pushes[j].push_back(plan.add(i, server, j, TransferKind::Reduce, {},
                                   static_cast<std::uint8_t>(j)));
    }
  }
  plan.end_phase(1);  // push
  for (std::uint32_t j = 0; j < k; ++j) {
    const std::uint32_t server = plan.chunk_owner[j];
    const std::uint32_t all_pushes = plan.add_dep_set(std::move(pushes[j]));
    for (std::uint32_t i = 0; i < workers; ++i) {
      if (i == server) continue;
      plan.add_after_set(server, i, j, TransferKind::Copy, all_pushes,
                         static_cast<std::uint8_t>(j));
    }
  }
  plan.end_phase(1);  // pull
  plan.steps = plan.transfers.empty() ? 0 : 2;
  return plan;
}

}  // namespace gradsync
