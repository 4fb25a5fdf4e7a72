// Internal to sim/collective: one ring pass (reduce-scatter or all-gather) appended to a plan,
// shared by the ring and hierarchical planners, plus argument checks common to all planners.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "gradsync/collective/collective.hpp"
#include "gradsync/units/memory_budget.hpp"

namespace gradsync::detail {

// Throws std::invalid_argument("<planner>: <what>") unless `ok`.
inline void require(bool ok, const char* planner, const std::string& what) {
  if (!ok) throw std::invalid_argument(std::string(planner) + ": " + what);
}

// Throws std::invalid_argument("<planner>: <message>") unless `order` lists each of 0 … n-1
// once (ring orders, local orders, local paths).
inline void require_permutation(const std::vector<std::uint32_t>& order, std::uint32_t n,
                                const char* planner, const char* message) {
  require(order.size() == n, planner, message);
  std::vector<bool> seen(n, false);
  for (std::uint32_t r : order) {
    require(r < n && !seen[r], planner, message);
    seen[r] = true;
  }
}

// The most transfers one plan may hold: 300M (8.4 GB of 28-byte transfers, a third of a
// 24 GB machine). A 16,384-rank ring on 8 channels would need 4.3G (120 GB): such a request is
// refused with its size rather than failing to allocate.
inline constexpr std::uint64_t kMaxPlanTransfers = 300'000'000;

// Reserves room for `n` transfers, or throws std::invalid_argument saying why not.
inline void reserve_transfers(Plan& plan, std::uint64_t n, const char* planner) {
  if (n > kMaxPlanTransfers)
    throw std::invalid_argument(
        std::string(planner) + ": this plan needs " + std::to_string(n / 1000000) +
        "M transfers (" + std::to_string(n * sizeof(Transfer) / 1000000000) +
        " GB), more than the " + std::to_string(kMaxPlanTransfers / 1000000) +
        "M gradsync holds in one plan: fewer ranks, channels or pipeline steps");
  require_memory(static_cast<double>(n) * MemoryCost::kPlanTransfer,
                 std::string(planner) + ": this plan's " + std::to_string(n) + " transfers",
                 "fewer ranks, channels or pipeline steps, or --fidelity flow");
  plan.transfers.reserve(static_cast<std::size_t>(n));
}

// Flows-only planning of a pipelined planner whose pipeline step k uses the connections of
// step k mod `period` (its flows are then those of `period` steps carrying all the bytes): the
// steps to build, and the built plan's chunk bytes, built chunk index(s mod built, j) adding
// the bytes of real chunk index(s, j) for step s < steps and lane j < lanes. `index(s, j)` is
// the planner's chunk layout for its current step count (passed as the third argument).
inline std::uint32_t built_steps(bool flows_only, std::uint32_t steps, std::uint32_t period) {
  return flows_only ? std::min(steps, period) : steps;
}
template <typename Index>
std::vector<Bytes> fold_chunks(const std::vector<Bytes>& real, std::uint32_t steps,
                               std::uint32_t built, std::uint32_t lanes, Index&& index) {
  if (built == steps) return real;
  std::vector<Bytes> out(std::size_t{built} * lanes, Bytes(0.0));
  for (std::uint32_t s = 0; s < steps; ++s)
    for (std::uint32_t j = 0; j < lanes; ++j)
      out[index(s % built, j, built)] += real[index(s, j, steps)];
  return out;
}
// The first chunk of split_bytes(total, parts), without the vector.
inline Bytes first_chunk(Bytes total, std::uint32_t parts) {
  return parts <= 1 ? total : Bytes(std::floor(total.bytes() / parts));
}

// The checks of the in-switch planners over servers (NVLSTree, NVLS with SHARP): GPUs in whole
// servers of 1..256, 1..65536 pipeline steps, a size >= 0.
inline void require_servers(const char* planner, std::uint32_t gpus, std::uint32_t ppn,
                            std::uint32_t steps, double bytes) {
  require(gpus >= 1, planner, "needs at least one GPU");
  require(ppn >= 1 && gpus % ppn == 0, planner,
          "ranks_per_node " + std::to_string(ppn) + " does not divide " + std::to_string(gpus) +
              " GPUs");
  require(ppn <= 256, planner, "at most 256 GPUs per server");
  require(steps >= 1 && steps <= 65536, planner,
          "pipeline must be 1..65536, got " + std::to_string(steps));
  require(bytes >= 0.0, planner, "negative size");
}

// The SHARP switches a plan across servers uses (NVLS with SHARP, CollNet): one entry of
// `sharp_of_local` per local GPU index, naming switches 0..count-1, at most ppn of them.
inline std::uint32_t sharp_switch_count(const char* planner,
                                        const std::vector<std::uint32_t>& sharp_of_local,
                                        std::uint32_t ppn) {
  require(sharp_of_local.size() == ppn, planner, "one SHARP switch per local GPU index");
  std::uint32_t count = 0;
  for (std::uint32_t s : sharp_of_local) count = std::max(count, s + 1);
  require(count <= ppn, planner, "more SHARP switches than local GPUs");
  return count;
}

// The start of a CollNet plan (CollNetChain, CollNetDirect): `gpus` in whole servers of `ppn`,
// two or more, then the SHARP switches as ranks; `lanes` independent lanes (chains, heads) of
// `steps` pipeline chunks each, chunk lane·steps + k (one chunk per lane when flows_only), 2·gpus
// transfers per chunk reserved. Sets `nodes` and `built` (the chunks per lane planned).
inline Plan start_collnet_plan(const char* planner, Algorithm algorithm, std::uint32_t gpus,
                               Bytes bytes, std::uint32_t ppn,
                               const std::vector<std::uint32_t>& sharp_of_local,
                               std::uint32_t lanes, std::uint32_t steps, bool flows_only,
                               std::uint32_t& nodes, std::uint32_t& built) {
  require_servers(planner, gpus, ppn, steps, bytes.bytes());
  require(gpus / ppn >= 2, planner, "needs two servers or more");
  const std::uint32_t sharp_switches = sharp_switch_count(planner, sharp_of_local, ppn);
  nodes = gpus / ppn;
  built = built_steps(flows_only, steps, 1);  // every chunk of a lane uses its connections
  const std::uint64_t full = std::uint64_t{2} * gpus * lanes * std::uint64_t{steps};
  require(full < kNoTransfer && std::uint64_t{gpus} + sharp_switches < kNoRank, planner,
          "too large a plan");
  Plan plan;
  plan.op = CollectiveOp::AllReduce;
  plan.algorithm = algorithm;
  plan.ranks = gpus + sharp_switches;
  plan.contributors = gpus;
  plan.total_bytes = bytes;
  plan.chunk_bytes = fold_chunks(split_bytes(bytes, lanes * steps), steps, built, lanes,
                                 [](std::uint32_t k, std::uint32_t c, std::uint32_t p) {
                                   return c * p + k;
                                 });
  plan.channels = lanes;
  reserve_transfers(plan, flows_only ? full / steps : full, planner);
  return plan;
}

// The transfers of one appended pass, laid out step by step, member by member, lane by lane.
struct RingPass {
  TransferId first = kNoTransfer;
  std::uint32_t members = 0;
  std::uint32_t lanes = 0;
  [[nodiscard]] std::uint32_t steps() const { return members == 0 ? 0 : members - 1; }
  // The transfer member `member` sends at `step` on `lane`.
  [[nodiscard]] TransferId at(std::uint32_t step, std::uint32_t member, std::uint32_t lane) const {
    return first + (step * members + member) * lanes + lane;
  }
};

enum class RingPassKind { ReduceScatter, AllGather };

// The data of a pass is m = members.size() blocks; block j is the chunks
// base + j·block_stride + u for lanes u in [0, lanes), each lane travelling independently.
//   ReduceScatter: at step s member i reduces block (i-1-s) mod m into member i+1; member i
//                  ends with block i reduced over all members (received at step m-2 from i-1).
//   AllGather:     at step s member i copies block (i-s) mod m to member i+1; member i starts
//                  with block i.
// Step s ≥ 1 depends on the data's arrival (step s-1 from member i-1, same lane) and on the
// previous send on the same link and lane (step s-1 from member i). Step 0 takes its
// dependencies from first_deps(i, chunk) → {data, link} (kNoTransfer when none).
// When the pass follows another phase that already reduced into the blocks a reduce-scatter
// member forwards (hierarchical AllReduce), prior_write(i, chunk) names that write: the
// forwarding send must wait for it too, and it replaces the link dependency (two inline
// dependencies). channel_of(chunk) gives each transfer's channel.
template <typename FirstDeps, typename PriorWrite, typename ChannelOf>
RingPass append_ring_pass(Plan& plan, std::span<const std::uint32_t> members,
                          std::uint32_t base, std::uint32_t block_stride, std::uint32_t lanes,
                          RingPassKind pass_kind, FirstDeps&& first_deps,
                          PriorWrite&& prior_write, ChannelOf&& channel_of) {
  const auto m = static_cast<std::uint32_t>(members.size());
  RingPass pass{static_cast<TransferId>(plan.transfers.size()), m, lanes};
  const TransferKind kind =
      pass_kind == RingPassKind::ReduceScatter ? TransferKind::Reduce : TransferKind::Copy;
  for (std::uint32_t s = 0; s + 1 < m; ++s) {
    for (std::uint32_t i = 0; i < m; ++i) {
      const std::uint32_t shift = pass_kind == RingPassKind::ReduceScatter ? 1 + s : s;
      const std::uint32_t block = (i + m - shift % m) % m;
      const std::uint32_t src = members[i];
      const std::uint32_t dst = members[(i + 1) % m];
      for (std::uint32_t u = 0; u < lanes; ++u) {
        const std::uint32_t chunk = base + block * block_stride + u;
        std::array<TransferId, 2> deps{kNoTransfer, kNoTransfer};
        if (s == 0) {
          deps = first_deps(i, chunk);
        } else {
          const TransferId prior = pass_kind == RingPassKind::ReduceScatter
                                       ? prior_write(i, chunk)
                                       : kNoTransfer;
          deps = {pass.at(s - 1, (i + m - 1) % m, u),
                  prior != kNoTransfer ? prior : pass.at(s - 1, i, u)};
        }
        plan.add(src, dst, chunk, kind, std::span<const TransferId>(deps), channel_of(chunk));
      }
    }
  }
  return pass;
}

inline constexpr auto kNoFirstDeps = [](std::uint32_t, std::uint32_t) {
  return std::array<TransferId, 2>{kNoTransfer, kNoTransfer};
};
inline constexpr auto kNoPriorWrite = [](std::uint32_t, std::uint32_t) { return kNoTransfer; };

}  // namespace gradsync::detail
