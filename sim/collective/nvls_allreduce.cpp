// NVLink SHARP (NVLS) AllReduce in one NVSwitch domain (collective.hpp): a parameter-server
// push/pull whose single dedicated server, rank `workers`, is the NVSwitch, which reduces in the
// fabric (multimem.ld_reduce / multimem.st in NCCL's NVLS kernels). Unlike
// plan_parameter_server_allreduce, which shards the gradient over servers and separates push
// and pull by a barrier, the buffer is cut into `pipeline` chunks that stream: worker i pushes
// chunk c after its push of chunk c-1 (same port), and the switch returns the reduced chunk c to
// worker i once every worker's push of chunk c has arrived and after its pull of chunk c-1 to
// worker i. Per GPU port: S out and S in, concurrently; the switch port carries n·S each way
// (the switch itself is non-blocking in the topologies, so only GPU ports limit).
//
// Dependency order (check_plan searches dep0 first, the engine hides the latency of a transfer
// released by its dep1, the previous message on the same connection):
//   push(i,c): dep0 = none (the worker holds its data), dep1 = push(i,c-1);
//   pull(i,c): dep0 = push(n-1,c), dep1 = pull(i,c-1), extra = pushes of chunk c from the other
//              workers.
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "gradsync/collective/collective.hpp"
#include "ring_pass.hpp"

namespace gradsync {

Plan plan_nvls_allreduce(std::uint32_t workers, Bytes bytes, const NvlsOptions& options) {
  constexpr const char* kPlanner = "plan_nvls_allreduce";
  const std::uint32_t chunks = options.pipeline;
  detail::require(workers >= 1, kPlanner, "needs at least one GPU");
  detail::require(chunks >= 1 && chunks <= 65536, kPlanner,
                  fmt::format("pipeline must be 1..65536, got {}", chunks));
  detail::require(bytes.bytes() >= 0.0, kPlanner, "negative size");
  detail::require(std::uint64_t{workers} * chunks * 2 < kNoTransfer, kPlanner, "too large a plan");

  const std::uint32_t server = workers;
  Plan plan;
  plan.op = CollectiveOp::AllReduce;
  plan.algorithm = Algorithm::Nvls;
  plan.ranks = workers + 1;
  plan.contributors = workers;
  plan.total_bytes = bytes;
  plan.chunk_bytes = split_bytes(bytes, chunks);
  plan.channels = 1;
  plan.chunk_owner.assign(chunks, server);
  detail::reserve_transfers(plan, std::uint64_t{2} * workers * chunks, kPlanner);

  std::vector<TransferId> last_push(workers, kNoTransfer);
  std::vector<TransferId> last_pull(workers, kNoTransfer);
  std::vector<TransferId> pushes(workers);
  for (std::uint32_t c = 0; c < chunks; ++c) {
    for (std::uint32_t i = 0; i < workers; ++i) {
      Transfer t;
      t.src = i;
      t.dst = server;
      t.chunk = c;
      t.kind = TransferKind::Reduce;
      t.dep1 = last_push[i];  // same port, no data dependency: dep0 stays empty
      plan.transfers.push_back(t);
      pushes[i] = last_push[i] = static_cast<TransferId>(plan.transfers.size() - 1);
    }
    if (chunks == 1) plan.end_phase(1);  // unpipelined: push, barrier, pull
    // Every pull of chunk c waits for all its pushes: dep0 = the last one, the rest shared.
    const std::uint32_t others =
        workers > 1 ? plan.add_dep_set(std::vector<TransferId>(pushes.begin(), pushes.end() - 1))
                    : kNoDepSet;
    for (std::uint32_t i = 0; i < workers; ++i) {
      Transfer t;
      t.src = server;
      t.dst = i;
      t.chunk = c;
      t.kind = TransferKind::Copy;
      t.dep0 = pushes[workers - 1];
      t.dep1 = last_pull[i];
      t.extra_deps = others;
      plan.transfers.push_back(t);
      last_pull[i] = static_cast<TransferId>(plan.transfers.size() - 1);
    }
  }
  // Pipelined: one phase in which pushes and pulls overlap, flow fidelity paying one chunk of
  // pipeline fill; one chunk: push and pull phases.
  if (chunks == 1)
    plan.end_phase(1);
  else
    plan.end_phase(2, plan.chunk_bytes.front());
  plan.steps = 2;
  return plan;
}

}  // namespace gradsync
