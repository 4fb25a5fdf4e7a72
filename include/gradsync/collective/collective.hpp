// Collective algorithms as plans: pure data saying who sends what to whom, in which order.
// Plans know nothing of SimGrid; the engine replays them (simulation.hpp), and unit tests prove
// them correct without simulating (bytes conserved, every rank ends with the full reduction of
// every chunk) with check_plan().
//
// A plan's ranks are 0..ranks-1; which GPU (or server host) plays each rank is the engine's
// placement. Data is cut into `chunks` pieces of known size; every transfer moves one chunk
// and either reduces it into the receiver's copy (Reduce) or overwrites it (Copy).
//
// Planners (plan_*) are described, with their per-rank bytes and closed-form times, in
// sim/collective/README.md. They throw std::invalid_argument for impossible parameters
// (zero ranks, zero channels, ranks_per_node not dividing ranks, ...).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gradsync/units/units.hpp"

namespace gradsync {

enum class CollectiveOp { AllReduce, ReduceScatter, AllGather, Broadcast, Reduce };
enum class Algorithm {
  Ring, Tree, Hierarchical, ParameterServer, Nvls, NvlsTree, CollNetChain, CollNetDirect
};

[[nodiscard]] std::string_view to_string(CollectiveOp op);
[[nodiscard]] std::string_view to_string(Algorithm algorithm);

// The algorithm registry: every Algorithm once, with its name and what it needs. Names
// (to_string, algorithm_from_string), the CLI's choices, the names a topology's nccl.tuner may
// give and the candidates of `auto` (auto_candidates) all read it. A new algorithm is a row
// here, its planner (sim/collective/) and its case in plan_request (plan_collective.cpp).
enum class AutoUse : std::uint8_t {
  Always,        // auto tries it for every op it plans
  WithoutNccl,   // only under software: none, across servers of several GPUs (NCCL lacks it)
  InSwitch,      // where the GPUs' or the network's switches can reduce (NVLS family, CollNet
                 // over SHARP switches: the callers decide)
  Never,         // an explicit choice only (parameter servers are a strategy, not a contender)
};
struct AlgorithmInfo {
  Algorithm algorithm;
  std::string_view name;
  bool nccl;            // one of NCCL's algorithms: a row of its tuner, nameable in nccl.tuner
  bool allreduce_only;  // plans AllReduce and nothing else
  AutoUse in_auto;
};
[[nodiscard]] std::span<const AlgorithmInfo> algorithm_registry();
[[nodiscard]] const AlgorithmInfo& algorithm_info(Algorithm algorithm);
// The registry's names, in its order, of the algorithms `keep` accepts (all by default).
[[nodiscard]] std::vector<std::string> algorithm_names(
    bool (*keep)(const AlgorithmInfo&) = nullptr);
// What `auto` simulates for `op` over `ranks` ranks, `ranks_per_node` per server, besides the
// in-switch algorithms its caller adds where they can run: Ring; Tree for AllReduce; and,
// without NCCL's software model, Hierarchical across servers of several GPUs.
[[nodiscard]] std::vector<Algorithm> auto_candidates(CollectiveOp op, std::uint32_t ranks,
                                                     std::uint32_t ranks_per_node, bool nccl);

using TransferId = std::uint32_t;
inline constexpr TransferId kNoTransfer = UINT32_MAX;
inline constexpr std::uint32_t kNoRank = UINT32_MAX;
inline constexpr std::uint32_t kNoDepSet = UINT32_MAX;

enum class TransferKind : std::uint8_t { Reduce, Copy };
[[nodiscard]] std::string_view to_string(TransferKind kind);

// One message. It may start once every transfer in its dependencies has been delivered. Most
// plans need at most two dependencies (the receive that brought the data and the previous send
// on the same link), so they are stored inline; `extra_deps` names a set in Plan::extra_deps
// holding the rare rest (a set may be shared by many transfers: "every push to server j").
// Planners put the data dependency first (dep0): check_plan searches it first.
struct Transfer {
  std::uint32_t src = 0;
  std::uint32_t dst = 0;
  std::uint32_t chunk = 0;
  TransferKind kind = TransferKind::Copy;
  // Independent pipeline the transfer belongs to, for reporting and for spreading over NICs:
  // ring channel, tree 0/1, hierarchical rail (the local index owning the data), PS shard.
  std::uint8_t channel = 0;
  TransferId dep0 = kNoTransfer;
  TransferId dep1 = kNoTransfer;
  std::uint32_t extra_deps = kNoDepSet;  // index into Plan::extra_deps, or kNoDepSet
};

// Flow fidelity's view of a plan (simulation.hpp): per barrier-separated phase, the bytes each
// connection (source rank, destination rank, channel) carries over the whole phase, sorted by
// (src, dst, channel), one entry per connection the phase's transfers use (zero bytes
// included), with the phase's latency steps and pipeline fill.
struct PlanFlow {
  std::uint32_t src = 0;
  std::uint32_t dst = 0;
  std::uint8_t channel = 0;
  Bytes bytes{0.0};
};
struct FlowPhase {
  std::uint32_t steps = 0;
  Bytes fill{0.0};
  std::vector<PlanFlow> flows;
};

// Where a rank's data is at the start: rank r < contributors holds its own contribution to
// every chunk (AllReduce, ReduceScatter, Reduce); for AllGather rank chunk_owner[c] holds chunk
// c; for Broadcast the root holds every chunk.
struct Plan {
  CollectiveOp op = CollectiveOp::AllReduce;
  Algorithm algorithm = Algorithm::Ring;
  std::uint32_t ranks = 0;                // all participants, servers included
  std::uint32_t contributors = 0;         // ranks 0..contributors-1 hold input data (workers);
                                          // the rest (parameter servers) start empty
  std::uint32_t root = 0;                 // Broadcast / Reduce root
  Bytes total_bytes{0.0};                 // S, the collective's message size (nccl-tests "size":
                                          // the full vector, also for ReduceScatter/AllGather)
  std::vector<Bytes> chunk_bytes;         // size of each chunk; they add up to total_bytes
  // ReduceScatter: the rank that must end with the chunk reduced; AllGather: the rank that
  // holds the chunk at the start; ParameterServer AllReduce: the server that reduces the chunk
  // (its shard). Empty for the other plans.
  std::vector<std::uint32_t> chunk_owner;
  std::vector<Transfer> transfers;        // in an order compatible with the dependencies
  std::vector<std::vector<TransferId>> extra_deps;
  // Algorithm steps on the critical path, without pipelining (the latency term's count):
  // ring AllReduce 2(n-1), tree 2·height, parameter server 2, ...
  std::uint32_t steps = 0;
  std::uint32_t channels = 1;             // transfers use channel 0..channels-1
  // Barrier-separated stages, for flow fidelity (simulation.hpp), which merges the transfers of a
  // stage between two ranks into one flow: phase i holds transfers [phases[i-1].end,
  // phases[i].end). Empty: one phase holding every transfer, with `steps` and no fill.
  struct Phase {
    TransferId end = 0;        // one past the phase's last transfer
    std::uint32_t steps = 0;   // latency steps on the phase's critical path
    Bytes fill{0.0};           // pipeline fill: bytes that cross a link before the last
                               // edge's stream can start (tree/chain: (depth-1) chunks)
  };
  std::vector<Phase> phases;
  // A flows-only plan (PlanForm::Flows) holds no transfers: flow_phases is what flow fidelity
  // replays, and transfer_count / connection_count say how many transfers and distinct
  // connections the full plan holds (resolve_fidelity() decides on them). chunk_bytes may
  // then fold pipeline chunks that travel the same connections into one.
  bool flows_only = false;
  std::vector<FlowPhase> flow_phases;
  std::uint64_t transfer_count = 0;
  std::uint64_t connection_count = 0;
  std::uint32_t copies = 1;  // independent instances it holds (replicate_plan)
  // Closes the current phase at the current end of `transfers`.
  void end_phase(std::uint32_t phase_steps, Bytes phase_fill = Bytes(0.0)) {
    phases.push_back(Phase{static_cast<TransferId>(transfers.size()), phase_steps, phase_fill});
  }

  // Appends a transfer depending on `deps` (kNoTransfer entries are ignored; beyond two, the
  // rest go to a new extra_deps set).
  TransferId add(std::uint32_t src, std::uint32_t dst, std::uint32_t chunk, TransferKind kind,
                 std::initializer_list<TransferId> deps, std::uint8_t channel = 0);
  TransferId add(std::uint32_t src, std::uint32_t dst, std::uint32_t chunk, TransferKind kind,
                 std::span<const TransferId> deps, std::uint8_t channel = 0);
  // Appends a transfer that streams behind `previous`, the last message on the same connection
  // (dep1: the engine hides the latency of a transfer that its dep1 released), and depends on
  // every transfer in `data` (dep0 = the first, the rest in a new extra_deps set). kNoTransfer
  // entries are ignored; dep1 stays empty when `previous` is kNoTransfer.
  TransferId add_streamed(std::uint32_t src, std::uint32_t dst, std::uint32_t chunk,
                          TransferKind kind, std::span<const TransferId> data,
                          TransferId previous, std::uint8_t channel = 0);
  // Stores a dependency set once, for add_after_set() to share among many transfers.
  std::uint32_t add_dep_set(std::vector<TransferId> deps);
  // Appends a transfer depending on every transfer of set `dep_set`.
  TransferId add_after_set(std::uint32_t src, std::uint32_t dst, std::uint32_t chunk,
                           TransferKind kind, std::uint32_t dep_set, std::uint8_t channel = 0);

  [[nodiscard]] std::size_t chunks() const { return chunk_bytes.size(); }
  [[nodiscard]] Bytes bytes_of(const Transfer& t) const { return chunk_bytes[t.chunk]; }
  // Calls fn(dep) for every dependency of transfer `id`.
  template <typename Fn>
  void for_each_dep(TransferId id, Fn&& fn) const {
    const Transfer& t = transfers[id];
    if (t.dep0 != kNoTransfer) fn(t.dep0);
    if (t.dep1 != kNoTransfer) fn(t.dep1);
    if (t.extra_deps != kNoDepSet)
      for (TransferId d : extra_deps[t.extra_deps]) fn(d);
  }
  // Bytes each rank sends (and receives), summed over transfers (flows-only: over the flows).
  [[nodiscard]] std::vector<Bytes> bytes_sent_per_rank() const;
  [[nodiscard]] std::vector<Bytes> bytes_received_per_rank() const;
};

// The plan's flow phases: flow_phases of a flows-only plan, else its transfers summed per
// phase and connection (Plan::phases; none = one phase of `steps` with no fill).
[[nodiscard]] std::vector<FlowPhase> flow_phases_of(const Plan& plan);
// Transfers and distinct (src, dst, channel) connections of the full plan.
[[nodiscard]] std::uint64_t plan_transfer_count(const Plan& plan);
[[nodiscard]] std::uint64_t plan_connection_count(const Plan& plan);
// Turns a plan into its flows-only form (flow_phases_of, the counts; transfers freed), counting
// `full_transfers` transfers for the full plan (0: the plan's own).
void make_flows_only(Plan& plan, std::uint64_t full_transfers = 0);
// `copies` independent instances of `plan` at once (every tensor rank's data-parallel group,
// every stage pair's sends): a flows-only plan of copies × plan.ranks ranks, copy c's rank r
// being rank c·plan.ranks + r; contributors, total_bytes and steps stay those of one instance
// (the engine's NCCL view is the first copy's GPUs).
[[nodiscard]] Plan replicate_plan(const Plan& plan, std::uint32_t copies);

// What check_plan() found; `ok` is false with a reason when the plan is wrong.
struct PlanCheck {
  bool ok = true;
  std::string problem;
};

// Executes the plan symbolically (which ranks' contributions each copy of each chunk holds)
// in the given order and checks the end state the operation promises: AllReduce → every
// contributor holds every chunk reduced over all contributors; ReduceScatter → the owner of
// each chunk holds it fully reduced; AllGather/Broadcast → every rank holds every chunk (with
// its one contributor); Reduce → the root holds the full reduction. It also rejects races (a
// chunk read or overwritten while a write to it, or a read of it, is not ordered by the
// dependencies; concurrent Reduce writes into one copy are allowed), double counting (a
// contribution reduced twice), sends of a chunk the sender does not hold, sends to oneself,
// dependencies that do not point backward, and chunk sizes that do not add up to total_bytes.
// Cost: O(ranks·chunks·ranks/64) memory and an ancestor search per hazard, short when planners
// list the data dependency first: a 64-rank, 4-channel ring checks in ~10 ms, but a ring costs
// ~n³ (n=256 with 8 sub-chunks 3 s, n=1024 80 s and 390 MB): a test tool, not a per-run check.
// A flows-only plan is refused (ok false): it holds no transfers to execute.
[[nodiscard]] PlanCheck check_plan(const Plan& plan);

// ---- planners -------------------------------------------------------------------------------

// Ring algorithms over ranks 0 → 1 → … → n-1 → 0 (ranks are node-major, so the ring crosses
// each node boundary once). `channels` independent rings each carry 1/channels of the data (the
// engine may map channels to NICs/rails); `pipeline` cuts each step's block into sub-chunks that
// travel as independent lanes (in a fluid model this only costs events).
struct RingOptions {
  std::uint32_t channels = 1;  // 1..256
  std::uint32_t pipeline = 1;  // ≥ 1
  // Optional ring order per channel: orders[c] is a permutation of the ranks that channel c
  // visits (position i sends to position i+1). Empty: every channel visits 0, 1, …, n-1.
  // rail_ring_orders() builds NCCL-like orders that spread the node crossings over NICs.
  std::vector<std::vector<std::uint32_t>> orders;
  // Build the flows-only plan (Plan::flows_only) directly, in O(ranks · channels · pipeline).
  bool flows_only = false;
};
// Ring orders that keep every node crossing on one rail and spread the channels over the rails,
// as NCCL's rings do on rail-optimized clusters (same NIC index on both sides; NCCL gets there
// with PXN). Channel c walks each node along the local path x, x+2, …, x+ppn-1, x+1 with
// x = c·ppn/channels: forward on even nodes, backward on odd ones, so crossings alternate
// between rails x+1 and x (with an odd node count the wrap-around crosses rails once). With
// one channel per NIC, every NIC sends in one channel and receives in another.
[[nodiscard]] std::vector<std::vector<std::uint32_t>> rail_ring_orders(
    std::uint32_t ranks, std::uint32_t ranks_per_node, std::uint32_t channels);
// The same over servers of different sizes (node_sizes[k] consecutive ranks on server k, e.g.
// 8 + 4): each server's local path as above with its own size.
[[nodiscard]] std::vector<std::vector<std::uint32_t>> rail_ring_orders(
    const std::vector<std::uint32_t>& node_sizes, std::uint32_t channels);
// The same with channel c walking every server along local_paths[c mod paths] (local ranks,
// all of one size dividing `ranks`): servers whose GPUs are NVLinked to some peers only
// (mesh_ring_orders.hpp) cross between servers where the path ends, not through PCIe inside.
[[nodiscard]] std::vector<std::vector<std::uint32_t>> rail_ring_orders(
    std::uint32_t ranks, const std::vector<std::vector<std::uint32_t>>& local_paths,
    std::uint32_t channels);
// Over servers of different sizes, each with its own local paths (server_paths[k][c mod
// paths] for server k and channel c, local ranks of that server).
[[nodiscard]] std::vector<std::vector<std::uint32_t>> rail_ring_orders(
    const std::vector<std::uint32_t>& node_sizes,
    const std::vector<std::vector<std::vector<std::uint32_t>>>& server_paths,
    std::uint32_t channels);
// Reduce-scatter then all-gather: 2(n-1) steps of S/n per rank (per channel S/(n·channels)).
// Time: 2(n-1)·α + 2(n-1)/n · S/B.
[[nodiscard]] Plan plan_ring_allreduce(std::uint32_t ranks, Bytes bytes,
                                       const RingOptions& options = {});
// n-1 steps; rank r ends with block r (chunk_owner) reduced. Time: (n-1)·α + (n-1)/n · S/B.
[[nodiscard]] Plan plan_ring_reduce_scatter(std::uint32_t ranks, Bytes bytes,
                                            const RingOptions& options = {});
// n-1 steps; rank r starts with block r (chunk_owner). Time: (n-1)·α + (n-1)/n · S/B.
[[nodiscard]] Plan plan_ring_allgather(std::uint32_t ranks, Bytes bytes,
                                       const RingOptions& options = {});
// Pipelined chain root → root+1 → … → root-1 (NCCL's ring Broadcast), `pipeline` chunks per
// channel. Time per channel: (n-1 + P-1)·(α + S/(C·P·B)).
[[nodiscard]] Plan plan_ring_broadcast(std::uint32_t ranks, std::uint32_t root, Bytes bytes,
                                       const RingOptions& options = {});
// Pipelined chain root+1 → root+2 → … → root-1 → root (same direction as the ring), reducing
// on the way. Same time as Broadcast.
[[nodiscard]] Plan plan_ring_reduce(std::uint32_t ranks, std::uint32_t root, Bytes bytes,
                                    const RingOptions& options = {});

// NCCL's double binary tree over `nodes` (src/graph/trees.cc): tree 0 is a binary tree rooted
// at 0 whose root has a single child; tree 1 mirrors it (node i plays tree 0's node
// nodes-1-i) when `nodes` is even and shifts it by one (node i plays node i-1) when odd.
// With an even node count every node is interior (has children) in at most one tree.
struct BinaryTree {
  std::uint32_t root = 0;
  std::vector<std::uint32_t> parent;                   // kNoRank for the root
  std::vector<std::array<std::uint32_t, 2>> children;  // kNoRank where absent
};
[[nodiscard]] std::array<BinaryTree, 2> build_double_binary_tree(std::uint32_t nodes);

struct TreeOptions {
  std::uint32_t ranks_per_node = 1;  // must divide ranks; ranks are node-major
  std::uint32_t pipeline = 1;        // chunks per tree (each tree carries S/trees)
  // Trees (NCCL's tree channels), even, 2..64. With 2, tree 0 hangs from local rank 0 and
  // tree 1 from local ppn-1. With more, pair p hangs both its trees (the two shapes of the
  // double binary tree) from local rank h_p = p·ppn/(trees/2): every pair leaves the node
  // through its own GPU, hence its own NIC, and since a node is interior in one shape and a leaf
  // in the other, every NIC carries 4·S/trees each way (NCCL runs twice as many tree channels
  // as NICs, channel c and c + NICs on the same NIC, each with one of the two shapes).
  std::uint32_t trees = 2;
  bool flows_only = false;  // build the flows-only plan from one pipeline chunk per tree
  // The chains inside each node (local ranks): pair p walks local_orders[p mod orders]
  // cyclically, its head the order's first rank (with 2 trees, tree 1's head its last), one
  // way for one shape and the other way for the other. Empty: 0 … ppn-1 as above. On a
  // direct NVLink mesh these are the server's rings cut at each channel's NIC (mesh_ring_orders.hpp),
  // as NCCL chains each channel along its own ring.
  std::vector<std::vector<std::uint32_t>> local_orders;
  // Servers filled unevenly (12 ranks as 8 + 4, as torchrun and mpirun fill hosts): the sizes
  // of the consecutive rank blocks, one per server, summing to the ranks; ranks_per_node is
  // then ignored. The trees span the servers as above; a server of m ranks hangs pair p's
  // chains from its local rank p·m/(trees/2) (with 2 trees, tree 1 from its last), as NCCL
  // chains each node's own local ranks. Empty: every server holds ranks_per_node ranks.
  std::vector<std::uint32_t> node_sizes;
  // Per server, orders of its local ranks used as local_orders are (pair p: order p mod count);
  // for servers of different sizes or wiring (an NVLink mesh of 8 and one of 4). Empty: the
  // same local_orders everywhere.
  std::vector<std::vector<std::vector<std::uint32_t>>> server_orders;
};
// Double-binary-tree AllReduce (NCCL style): the trees span nodes, and inside each node the
// ranks form a chain hanging from the node's head (tree 0: head local 0, chain 0←1←…; tree 1:
// head local ppn-1, chain walked the other way, so the trees' inter-node traffic leaves from
// different GPUs; further pairs rotate the heads, see TreeOptions::trees). Each tree reduces
// its share (S/trees) up and broadcasts it down, in `pipeline` chunks:
// chunk k goes up a level once chunk k arrived from every child, and follows chunk k-1 on each
// link. height = ceil(log2 nodes) + ppn - 1; steps = 2·height.
// Time ≈ (2·height + P - 1)·α + 2S/B for large P (every port carries ~2S each way).
[[nodiscard]] Plan plan_tree_allreduce(std::uint32_t ranks, Bytes bytes,
                                       const TreeOptions& options = {});

struct HierarchicalOptions {
  std::uint32_t ranks_per_node = 1;  // must divide ranks; ranks are node-major
  std::uint32_t pipeline = 1;        // sub-chunks per step
  // The orders (local ranks) the intra-node rings walk, one sub-plan each on 1/orders of the
  // data, side by side; position j of order k plays local rank j (its part is reduced across
  // servers among the ranks at position j). Empty: one order, 0 … ppn-1. On a direct NVLink
  // mesh these are the server's NVLink rings (topology/nvlink_rings.hpp), as NCCL's intra-node
  // ReduceScatter and AllGather use every ring it finds.
  std::vector<std::vector<std::uint32_t>> local_orders;
};
// Ring reduce-scatter inside each node (ppn ranks), ring AllReduce of each part across nodes
// on its rail (ranks with the same local index), ring all-gather inside each node.
// steps = 2(ppn-1) + 2(nodes-1). Time: 2(ppn-1)·α_intra + (ppn-1)/ppn·2S/B_intra
// + 2(nodes-1)·α_inter + 2(nodes-1)/nodes · S/(ppn·B_rail).
[[nodiscard]] Plan plan_hierarchical_allreduce(std::uint32_t ranks, Bytes bytes,
                                               const HierarchicalOptions& options = {});

enum class ServerPlacement : std::uint8_t {
  Dedicated,  // servers are extra ranks workers..workers+k-1 that hold no gradients
  Colocated,  // server j is worker floor(j·workers/k) (spread over nodes); k ≤ workers
};
// "dedicated", "colocated": bench's --ps-placement and a scenario's sync.ps.placement.
[[nodiscard]] std::string_view to_string(ServerPlacement placement);
[[nodiscard]] std::optional<ServerPlacement> server_placement_from_string(std::string_view text);
[[nodiscard]] std::vector<std::string> server_placement_names();
struct ParameterServerOptions {
  std::uint32_t servers = 1;  // k, 1..256
  ServerPlacement placement = ServerPlacement::Dedicated;
};

// The ranks that train (push gradients, pull parameters) when `ranks` take part and `options`
// say where the servers are: all of them with colocated servers, the others with dedicated
// ones (the last options.servers ranks serve); 0 when dedicated servers leave none.
[[nodiscard]] constexpr std::uint32_t ps_worker_count(std::uint32_t ranks,
                                                      const ParameterServerOptions& options) {
  if (options.placement != ServerPlacement::Dedicated) return ranks;
  return ranks > options.servers ? ranks - options.servers : 0;
}
// Push/pull: gradients are sharded by bytes over k servers (floor(S/k) each, the last shard
// takes the remainder; chunk j = shard j, chunk_owner[j] = its server). Push: every worker
// reduces its shard j into server j; pull: server j copies the reduced shard back to every
// worker once every push to it has arrived. A colocated server sends nothing to itself.
// steps = 2. Time (dedicated) ≈ 2·S·n/(k·B_server) + 2α.
[[nodiscard]] Plan plan_parameter_server_allreduce(std::uint32_t workers, Bytes bytes,
                                                   const ParameterServerOptions& options = {});

struct NvlsOptions {
  std::uint32_t pipeline = 1;  // chunks (≥ 1): push of chunk c+1 overlaps the pull of chunk c
};
// NVLink SHARP (NVLS) AllReduce inside one NVSwitch domain: the switch reduces in the fabric.
// A parameter-server plan whose single dedicated server, rank `ranks`, is the NVSwitch (the
// caller maps that rank to the NVSwitch device; nvls_switch() in rank_placement.hpp finds it). The
// data is cut into `pipeline` chunks; every worker pushes chunk c to the switch (Reduce, after
// its push of chunk c-1 on the same port) and the switch sends the reduced chunk c back to
// every worker once every push of chunk c has arrived (Copy, after its pull of chunk c-1), so
// pushes and pulls stream concurrently as in NCCL. Each GPU port carries S each way (ring:
// 2(n-1)/n·S). ranks = workers + 1, contributors = workers, chunk_owner[c] = the switch,
// steps = 2, one phase (pushes and pulls overlap) with one chunk of fill.
// Time ≈ 2α + (S + S/P)/B_port.
[[nodiscard]] Plan plan_nvls_allreduce(std::uint32_t workers, Bytes bytes,
                                       const NvlsOptions& options = {});

struct NvlsTreeOptions {
  std::uint32_t ranks_per_node = 1;  // GPUs per server (one NVSwitch each); divides the GPUs
  std::uint32_t pipeline = 1;        // pipeline steps (≥ 1), each cut into one shard per GPU
  bool flows_only = false;           // build the flows-only plan from two pipeline steps
  // Servers of different sizes (12 GPUs as 8 + 4): the consecutive blocks, ranks_per_node then
  // ignored; each step is cut into one shard per GPU of the smallest server, headed by local
  // GPUs 0 … H-1 of every server. Empty: ranks_per_node each.
  std::vector<std::uint32_t> node_sizes;
};
// NVLSTree AllReduce over several NVSwitch servers (NCCL_ALGO_NVLS_TREE, NCCL's default for
// large messages on multi-node Hopper and later): in each server the NVSwitch reduces every
// GPU's data and hands shard l to local GPU l; GPU l all-reduces its shard with GPU l of the
// other servers along NCCL's double binary tree of servers (shard (c, l) on tree (c+l) mod 2);
// then GPU l stores the result into the switch, which multicasts it to the server's other GPUs.
// Ranks: GPUs 0..G-1 node-major, then server a's NVSwitch is rank G + a (the caller maps them:
// nvls_tree_devices() in rank_placement.hpp). contributors = G, channels = 2 (the trees), one phase
// (everything streams), steps = 4 + 2·ceil(log2 servers). Per GPU port: S + S/ppn out, S in
// (ring: 2(n-1)/n·S); per NIC: the tree traffic of the GPU's shard, S/ppn each way on 2
// servers. Time ≈ max(S/B_port, S/(ppn·B_nic)) for large P on 2 servers.
[[nodiscard]] Plan plan_nvls_tree_allreduce(std::uint32_t gpus, Bytes bytes,
                                            const NvlsTreeOptions& options = {});

struct NvlsSharpOptions {
  std::uint32_t ranks_per_node = 1;  // GPUs per server (one NVSwitch each); divides the GPUs
  std::uint32_t pipeline = 1;        // pipeline steps (≥ 1), each cut into one shard per GPU
  // Per local GPU index l: which SHARP switch (0, 1, …, after the NVSwitch ranks) reduces
  // shard l, the one every server's GPU-l NIC reaches (nvls_sharp_devices() in rank_placement.hpp).
  std::vector<std::uint32_t> sharp_of_local;
  bool flows_only = false;  // build the flows-only plan from one pipeline step
};
// NVLS AllReduce across servers with InfiniBand SHARP between them (NCCL_ALGO_NVLS on several
// nodes, which NCCL runs with CollNet enabled): in each server the NVSwitch reduces every GPU's
// data and hands shard l to local GPU l; GPU l sends it through its NIC to the SHARP switch,
// which reduces the servers' partial sums in the network and returns the total; GPU l stores
// it into the NVSwitch, which multicasts it to the other GPUs. Ranks: GPUs 0..G-1 node-major,
// server a's NVSwitch G + a, SHARP switch s at G + N + s. contributors = G, one phase, 6 steps.
// Per GPU port: S + S/ppn out, S in; per NIC: S/ppn each way at any server count.
[[nodiscard]] Plan plan_nvls_sharp_allreduce(std::uint32_t gpus, Bytes bytes,
                                             const NvlsSharpOptions& options);

struct CollNetChainOptions {
  std::uint32_t ranks_per_node = 1;  // GPUs per server; divides the GPUs, two servers or more
  std::uint32_t channels = 1;        // chains per server, 1..64, each from its own head GPU
  std::uint32_t pipeline = 1;        // chunks per channel
  // Per local GPU index l: which SHARP switch (0, 1, …, after the GPUs) the servers' GPU-l
  // NICs share (collnet_devices() in rank_placement.hpp).
  std::vector<std::uint32_t> sharp_of_local;
  bool flows_only = false;  // build the flows-only plan from one chunk per channel
};
// NCCL's CollNetChain AllReduce (NVIDIA/nccl src/device/all_reduce.h, the CollNet chain; the
// network part through the SHARP plugin, NCCL_COLLNET_ENABLE=1): on channel c the GPUs of each
// server form a chain hanging from head GPU h_c = c·ppn/channels (then h_c+1, …, wrapping);
// a chunk is reduced up the chain, the head sends the server's partial sum through its NIC to
// the SHARP switch, which reduces the servers' sums in the network and returns the total to
// every head, and the chain broadcasts it back down. Ranks: GPUs 0..G-1 node-major, then SHARP
// switch s at G + s. contributors = G; steps = 2·ppn (ppn − 1 NVLink hops and one network hop
// each way). Per GPU port ~2S(ppn−1)/ppn each way (as a ring inside one server); per NIC
// S/min(channels, NICs) each way whatever the number of servers. Time ≈ (2·ppn + P − 1)·α +
// 2S(ppn−1)/(ppn·B) for large P.
[[nodiscard]] Plan plan_collnet_chain_allreduce(std::uint32_t gpus, Bytes bytes,
                                                const CollNetChainOptions& options);

struct CollNetDirectOptions {
  std::uint32_t ranks_per_node = 1;  // GPUs per server; divides the GPUs, two servers or more
  // The head GPUs (local indices, distinct, 1..8 of them: NCCL_MAX_DIRECT_ARITY + 1), each
  // reducing its part of every chunk and sending it through its NIC.
  std::vector<std::uint32_t> heads;
  std::uint32_t pipeline = 1;        // steps, each cut into one part per head
  std::vector<std::uint32_t> sharp_of_local;  // as CollNetChainOptions
  bool flows_only = false;  // build the flows-only plan from one step
};
// NCCL's CollNetDirect AllReduce (NVIDIA/nccl src/device/all_reduce.h, RunWorkColl<…
// NCCL_ALGO_COLLNET_DIRECT…>: scatter, reduce-and-send, receive-and-broadcast, gather; NCCL
// runs it on NVSwitch servers only): in each server every GPU sends part p of each step
// straight to head p (Reduce), the head sends the server's sum of part p through its NIC to
// the SHARP switch of its local index, which reduces the servers' sums and returns the
// total, and the head sends it straight to every GPU of its server (Copy). Ranks: GPUs node-
// major, then the SHARP switches. contributors = G; steps = 4 (2 with one GPU per server).
// Per GPU port with a head per GPU: 2S(ppn−1)/ppn each way, as the chain, in 4 steps instead
// of 2·ppn; per head NIC S/heads each way at any server count.
[[nodiscard]] Plan plan_collnet_direct_allreduce(std::uint32_t gpus, Bytes bytes,
                                                 const CollNetDirectOptions& options);

// Splits `total` into `parts` pieces of floor(total/parts) bytes, the last one taking the
// remainder, so whole-byte sizes stay whole and the pieces add up to `total` exactly.
[[nodiscard]] std::vector<Bytes> split_bytes(Bytes total, std::uint32_t parts);

}  // namespace gradsync

namespace gradsync {

// Transfers: the full plan (step fidelity needs it); Flows: the flows-only plan flow fidelity
// replays, built without the full plan where a planner can (rings in O(ranks · channels),
// pipelined plans from one pipeline period) — what lets 16k-GPU collectives be planned.
enum class PlanForm : std::uint8_t { Transfers, Flows };

// One collective to plan: the operation, the algorithm and its knobs. plan_collective()
// dispatches to the planners above; the CLI and the scenario runner use it.
struct CollectiveRequest {
  CollectiveOp op = CollectiveOp::AllReduce;
  Algorithm algorithm = Algorithm::Ring;
  std::uint32_t ranks = 1;           // participants (workers + dedicated servers for ps)
  std::uint32_t ranks_per_node = 1;  // tree / hierarchical: ranks are node-major
  // The consecutive runs of ranks on one server (node_blocks() in rank_placement.hpp): rings,
  // trees and NVLSTree over servers filled unevenly (8 + 4: ranks_per_node 1 then; hierarchical
  // refuses them); empty: ranks_per_node describes them.
  std::vector<std::uint32_t> node_sizes;
  // nvls across servers (with SHARP): NvlsSharpOptions::sharp_of_local; empty = one NVLink
  // domain (plan_nvls_allreduce). collnetchain, collnetdirect: CollNetChainOptions::sharp_of_local
  // (collnetdirect's heads: min(8, ranks_per_node, channels) locals, h = p·ppn/heads).
  std::vector<std::uint32_t> sharp_of_local;
  // Servers whose GPUs are NVLinked directly (mesh_ring_orders.hpp), in local ranks: the rings
  // NCCL's search finds along one server's NVLink pairs (server_mesh_rings()), and across
  // servers one local path per channel (mesh_rail_paths()). Ring on one server: max(channels,
  // rings) channels, channel c on ring c mod rings; across servers each channel walks every
  // server along its path (rail_ring_orders). Hierarchical: the rings are its intra-node
  // orders. Empty: rank order (NVSwitch or PCIe servers).
  std::vector<std::vector<std::uint32_t>> mesh_rings;
  std::vector<std::vector<std::uint32_t>> mesh_paths;
  // Servers filled unevenly (node_sizes), some of them NVLink meshes: each server's local
  // paths per channel (mesh_server_paths() in mesh_ring_orders.hpp); empty: the rank order.
  std::vector<std::vector<std::vector<std::uint32_t>>> mesh_server_paths;
  Bytes bytes{0.0};
  std::uint32_t channels = 1;        // ring
  std::uint32_t pipeline = 0;        // 0 = automatic (tree: one chunk per MiB, 1..64)
  // NVLSTree under NCCL: its NVLS channels (comm->nvlsChannels) and heads per channel (the
  // NVLS graph's channels): the automatic pipeline then follows NCCL's loops (see
  // nvls_tree_pipeline_steps); 0 = unknown (one step per MiB).
  std::uint32_t nvls_channels = 0;
  std::uint32_t nvls_heads = 0;
  std::uint32_t root = 0;            // broadcast / reduce
  PlanForm form = PlanForm::Transfers;
  ParameterServerOptions ps;         // ps: dedicated servers are the last ps.servers ranks
                                     // nvls: `ranks` GPUs; the plan adds rank `ranks`, the
                                     // NVSwitch (pipeline 0 = one chunk per 256 KiB, 1..256);
                                     // nvlstree: `ranks` GPUs, ranks_per_node per server, the
                                     // plan adds one NVSwitch rank per server (pipeline 0 =
                                     // one step per MiB, 2..64)
};

// The pipeline steps of an NVLSTree plan that follow NCCL's own loops. NCCL's NVLSTree kernel
// (NVIDIA/nccl 2.30.7 src/device/all_reduce.h, RunWorkColl<…NCCL_ALGO_NVLS_TREE…>) walks
// each channel's share of the message in loops of nHeads × chunkSize: every role (scatter,
// reduce and send up the tree, receive and broadcast down, gather) handles one loop's chunk
// per head before the next, so the loop is the grain its stages pipeline at, and the pipeline
// fills over a loop per stage. With NCCL's chunk for this size (nccl_nvls_chunk) that is
// loops = ceil(bytes / (channels × heads × chunk)); the plan alternates its steps over the two
// trees, which NCCL runs side by side on half the channels each, so it takes 2 × loops steps,
// clamped to [2, max_steps]. On 2 × DGX H100 at 64 MiB: 4 loops of 16 MiB, 8 steps (one per
// MiB gave 64): 297 GB/s busbw against 270 / 264 measured (GH-nccltests309-H100-2x8-a/-b), 357
// with 64 steps.
[[nodiscard]] std::uint32_t nvls_tree_pipeline_steps(Bytes bytes, std::uint32_t channels,
                                                     std::uint32_t heads, std::uint32_t nodes,
                                                     std::uint32_t max_steps);

[[nodiscard]] std::optional<CollectiveOp> collective_op_from_string(std::string_view text);
// Every spelling collective_op_from_string() accepts, in CollectiveOp's order (bench --op).
[[nodiscard]] std::vector<std::string> collective_op_names();
[[nodiscard]] std::optional<Algorithm> algorithm_from_string(std::string_view text);

// Throws std::invalid_argument when the combination is not supported (e.g. tree ReduceScatter)
// or the sizes do not fit (ranks not a multiple of ranks_per_node, too many servers).
[[nodiscard]] Plan plan_collective(const CollectiveRequest& request);

// nccl-tests' bus-bandwidth factor for `op` over n ranks: AllReduce 2(n−1)/n, ReduceScatter
// and AllGather (n−1)/n, Broadcast and Reduce 1 (NVIDIA/nccl-tests doc/PERFORMANCE.md).
[[nodiscard]] double busbw_factor(CollectiveOp op, std::uint32_t ranks);

}  // namespace gradsync
