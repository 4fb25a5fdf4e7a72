// Collective algorithms as plans: pure data saying who sends what to whom, in which order.
// Plans know nothing of SimGrid; the engine replays them (engine.hpp), and unit tests prove
// them correct without simulating (bytes conserved, every rank ends with the full reduction of
// every chunk) with check_plan().
//
// A plan's ranks are 0..ranks-1; which GPU (or server host) plays each rank is the engine's
// placement. Data is cut into `chunks` pieces of known size; every transfer moves one chunk
// and either reduces it into the receiver's copy (Reduce) or overwrites it (Copy).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gradsync/units.hpp"

namespace gradsync {

enum class CollectiveOp { AllReduce, ReduceScatter, AllGather, Broadcast, Reduce };
enum class Algorithm { Ring, Tree, Hierarchical, ParameterServer };

[[nodiscard]] std::string_view to_string(CollectiveOp op);
[[nodiscard]] std::string_view to_string(Algorithm algorithm);

using TransferId = std::uint32_t;
inline constexpr TransferId kNoTransfer = UINT32_MAX;

enum class TransferKind : std::uint8_t { Reduce, Copy };

// One message. It may start once every transfer in `deps` has been delivered. Most plans need
// at most two dependencies (the previous send on the same channel and the receive that brought
// the data), so they are stored inline; `extra_deps` holds the rare rest.
struct Transfer {
  std::uint32_t src = 0;
  std::uint32_t dst = 0;
  std::uint32_t chunk = 0;
  TransferKind kind = TransferKind::Copy;
  std::uint8_t channel = 0;  // independent pipeline (ring channel, tree 0/1, …) for reporting
  TransferId dep0 = kNoTransfer;
  TransferId dep1 = kNoTransfer;
  std::uint32_t extra_deps = UINT32_MAX;  // index into Plan::extra_deps, or UINT32_MAX
};

// Where a rank's data is at the start: rank r holds its own contribution to every chunk
// (AllReduce, ReduceScatter, Reduce), or only the chunks listed (AllGather: its own shard;
// Broadcast: the root holds all).
struct Plan {
  CollectiveOp op = CollectiveOp::AllReduce;
  Algorithm algorithm = Algorithm::Ring;
  std::uint32_t ranks = 0;                // all participants, servers included
  std::uint32_t contributors = 0;         // ranks 0..contributors-1 hold input data (workers);
                                          // the rest (parameter servers) start empty
  std::uint32_t root = 0;                 // Broadcast / Reduce root
  Bytes total_bytes{0.0};                 // S, the collective's message size (nccl-tests "size")
  std::vector<Bytes> chunk_bytes;         // size of each chunk
  // ReduceScatter: the rank that must end with the chunk reduced; AllGather: the rank that
  // holds the chunk at the start. Empty for the other operations.
  std::vector<std::uint32_t> chunk_owner;
  std::vector<Transfer> transfers;        // in an order compatible with the dependencies
  std::vector<std::vector<TransferId>> extra_deps;
  // Number of algorithm steps on the critical path (for latency terms and reporting).
  std::uint32_t steps = 0;
  std::uint32_t channels = 1;

  // Appends a transfer depending on `deps` (kNoTransfer entries are ignored).
  TransferId add(std::uint32_t src, std::uint32_t dst, std::uint32_t chunk, TransferKind kind,
                 std::initializer_list<TransferId> deps, std::uint8_t channel = 0);
  [[nodiscard]] Bytes bytes_of(const Transfer& t) const { return chunk_bytes[t.chunk]; }
  // Calls fn(dep) for every dependency of transfer `id`.
  template <typename Fn>
  void for_each_dep(TransferId id, Fn&& fn) const {
    const Transfer& t = transfers[id];
    if (t.dep0 != kNoTransfer) fn(t.dep0);
    if (t.dep1 != kNoTransfer) fn(t.dep1);
    if (t.extra_deps != UINT32_MAX)
      for (TransferId d : extra_deps[t.extra_deps]) fn(d);
  }
  // Bytes each rank sends (and receives), summed over transfers.
  [[nodiscard]] std::vector<Bytes> bytes_sent_per_rank() const;
  [[nodiscard]] std::vector<Bytes> bytes_received_per_rank() const;
};

// What check_plan() found; `ok` is false with a reason when the plan is wrong.
struct PlanCheck {
  bool ok = true;
  std::string problem;
};

// Executes the plan symbolically (which ranks' contributions each copy of each chunk holds)
// in dependency order and checks the end state the operation promises: AllReduce → every rank
// holds every chunk reduced over all ranks; ReduceScatter → rank r holds chunk(s) it owns fully
// reduced; AllGather/Broadcast → every rank holds every chunk; Reduce → the root holds the full
// reduction. It also rejects races (a chunk read while an unordered write to it is pending),
// double counting (a contribution reduced twice) and dependencies that point forward.
[[nodiscard]] PlanCheck check_plan(const Plan& plan);

}  // namespace gradsync
