// What a run of a collective needs before it reaches the engine (sim/collective/rank_placement.cpp,
// part of the model library: no SimGrid): the fidelity a plan is replayed at and the plan for
// it, which GPU plays each rank, the extra devices of in-switch (NVLS) algorithms, server
// blocks and NCCL-like channel counts, and the device pairs a plan sends between. The engine
// (simulation.hpp) replays what these choose; the config layer checks scenarios with them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gradsync/collective/collective.hpp"
#include "gradsync/fabric/nccl_model.hpp"
#include "gradsync/topology/topology.hpp"

namespace gradsync {

// Fidelity of a replay (simulation.hpp says what each one simulates).
enum class Fidelity { Auto, Step, Flow };
[[nodiscard]] std::string_view to_string(Fidelity fidelity);
[[nodiscard]] std::optional<Fidelity> fidelity_from_string(std::string_view text);
[[nodiscard]] std::vector<std::string> fidelity_names();  // "auto", "step", "flow"


inline constexpr std::size_t kAutoStepTransfers = 300'000;
inline constexpr double kAutoStepWork = 4e6;
[[nodiscard]] Fidelity resolve_fidelity(Fidelity requested, const Plan& plan);
// Whether `algorithm` under NCCL's `protocol` forwards data through its pipeline stages as it
// arrives. LL flags every 16-byte line (NVIDIA/nccl src/device/prims_ll.h), so a tree rank
// passes each line on to its parent or children as soon as it is there, not once a chunk has
// arrived; a tree's full plan moves small messages as whole chunks hop after hop (one chunk
// per tree below 1 MiB), which LL never waits for: auto replays LL trees at flow fidelity with
// no pipeline fill (each tree edge one flow, the collective's step latencies once), the step
// plan's cut-through limit. On 4 x DGX H100 at 64 / 128 KiB: 45 / 59 us, against 51 / 56 us
// measured (GH-nccltests309-H100-4x8-a-*), 57 / 88 us store-and-forward. LL128 is left to its
// chunks although its 128-byte lines are flagged too: across servers its trees measure like
// store-and-forward of ~1 MiB per tree (same cluster, 4 / 8 MiB: 151 / 217 us measured, 154 /
// 234 us so, 108 / 141 us streamed); what holds them back is not modelled. Rings gain nothing
// (every step's transfers already overlap: step and flow agree), Simple waits for its slices.
[[nodiscard]] bool streams_through_stages(Algorithm algorithm,
                                          std::optional<NcclProtocol> protocol);
// The plan a run at `fidelity` replays: the full plan for step fidelity; the flows-only plan
// for flow fidelity, and for auto when resolve_fidelity() picks flow on it (else the full
// plan). Large collectives are then planned without their transfers.
[[nodiscard]] Plan plan_collective(CollectiveRequest request, Fidelity fidelity);

// Which GPU plays each rank (contention studies depend on it).
enum class PlacementKind { InOrder, Strided, Random };
[[nodiscard]] std::string_view to_string(PlacementKind kind);  // "in-order", "strided", "random"
[[nodiscard]] std::optional<PlacementKind> placement_kind_from_string(std::string_view text);
[[nodiscard]] std::vector<std::string> placement_kind_names();
struct PlacementOptions {
  PlacementKind kind = PlacementKind::InOrder;
  std::uint32_t stride = 0;  // strided: rank r → GPU (r·stride) mod n, walking cosets; 0 = GPUs per node
  std::uint64_t seed = 1;    // random: a seeded shuffle
};
// The GPUs (DeviceIds) of ranks 0..ranks-1; throws ConfigError when ranks exceeds the GPUs.
[[nodiscard]] std::vector<DeviceId> place_ranks(const Topology& topology, std::uint32_t ranks,
                                                const PlacementOptions& options = {});
// The order NCCL's rings and trees visit these ranks' GPUs in, whatever the ranks' numbering:
// servers in the order of their first rank (NCCL numbers nodes by the first rank on each host,
// init.cc), each server's GPUs together in device order (its graph search chains a node's
// GPUs by the topology, connect.cc), so `mpirun --map-by node` (strided) or a shuffled rank
// file runs as fast as ranks filled in order. Unchanged where a GPU has no server.
[[nodiscard]] std::vector<DeviceId> nccl_server_order(const Topology& topology,
                                                      const std::vector<DeviceId>& placed);
// A node-major placement with its last `servers` ranks as dedicated parameter servers
// (plan_parameter_server_allreduce: servers are ranks workers..workers+k-1) spread over the
// servers' machines: server j is the last free GPU of machine N-1-(j mod N), so k servers
// sit behind k different NICs (as a job places one server process per host), not all behind
// the last machine's. Workers keep their order. One machine, or k = 0: unchanged.
[[nodiscard]] std::vector<DeviceId> spread_dedicated_servers(const Topology& topology,
                                                             const std::vector<DeviceId>& devices,
                                                             std::uint32_t servers);

// The NVSwitch that plays the extra rank of an NVLS plan (plan_nvls_allreduce) over these GPUs:
// the NVSwitch device directly linked to every one of them. Throws ConfigError for 2 GPUs or
// fewer (NCCL's ncclNvlsInit turns NVLS off there), when there is
// none (no NVSwitch, e.g. PCIe or direct NVLink meshes) or when the GPUs span several NVLink
// domains (several servers: that is nvls_tree_devices()' NVLSTree), or when several switches
// qualify (split NVSwitch planes are not modelled), or when the GPUs are older than Hopper
// (gpu_generation_of(): the topology's `gpu:`, else inferred from the NVLink rate; A100/V100
// have no NVLS).
[[nodiscard]] DeviceId nvls_switch(const Topology& topology, const std::vector<DeviceId>& gpus);
// The devices of an NVLSTree plan (plan_nvls_tree_allreduce) over these node-major GPUs,
// `ranks_per_node` per server: the GPUs, then each server's NVSwitch (nvls_switch() of its
// block). Throws ConfigError when the GPUs sit in one NVLink domain (use NVLS), when they do
// not fill whole servers node-major, or when a server's block cannot run NVLS.
[[nodiscard]] std::vector<DeviceId> nvls_tree_devices(const Topology& topology,
                                                      const std::vector<DeviceId>& gpus,
                                                      std::uint32_t ranks_per_node);

// The devices of an NVLS plan across servers with SHARP (plan_nvls_sharp_allreduce) over these
// node-major GPUs, `ranks_per_node` per server: the GPUs, each server's NVSwitch, then the
// SHARP switches; and per local GPU index the SHARP switch that reduces its shard, the
// network switch its NIC (its first rail NIC, rail_nics() in fabric_model.hpp) is cabled to,
// which must be the same on every server (one switch, or rail switch l on a rail-optimized
// network) and have `sharp`. Throws ConfigError saying which condition fails.
struct NvlsSharpDevices {
  std::vector<DeviceId> devices;
  std::vector<std::uint32_t> sharp_of_local;
};
[[nodiscard]] NvlsSharpDevices nvls_sharp_devices(const Topology& topology,
                                                  const std::vector<DeviceId>& gpus,
                                                  std::uint32_t ranks_per_node);

// The devices of a CollNet plan (plan_collnet_chain_allreduce) over these node-major GPUs,
// `ranks_per_node` per server, two servers or more: the GPUs, then the SHARP switches, with
// sharp_of_local as for NVLS across servers (no NVSwitch needed). Throws ConfigError saying
// which condition fails.
[[nodiscard]] NvlsSharpDevices collnet_devices(const Topology& topology,
                                               const std::vector<DeviceId>& gpus,
                                               std::uint32_t ranks_per_node);

// The devices of an in-switch AllReduce `algorithm` over these node-major GPUs
// (`ranks_per_node` per server): Nvls in one NVLink domain (the GPUs, then nvls_switch()), Nvls
// across servers (nvls_sharp_devices(), with sharp_of_local), NvlsTree (nvls_tree_devices()),
// CollNetChain (collnet_devices()), CollNetDirect (the same, on NVSwitch servers only).
// Throws ConfigError saying why it cannot run, std::invalid_argument for another algorithm.
[[nodiscard]] NvlsSharpDevices in_switch_devices(const Topology& topology,
                                                 const std::vector<DeviceId>& gpus,
                                                 std::uint32_t ranks_per_node,
                                                 Algorithm algorithm);

// Ranks per server of a node-major placement: the size of every server's consecutive run of
// ranks when the runs (node_blocks()) are all the same size; 1 otherwise (8 + 4, strided).
[[nodiscard]] std::uint32_t ranks_per_node(const Topology& topology,
                                           const std::vector<DeviceId>& rank_devices);
// The sizes of the consecutive runs of ranks on one server, in rank order: 8, 4 for 12 ranks
// placed in order on 8-GPU servers (as torchrun or mpirun fill hosts); a rank without a server
// is a run of its own. Empty when a server's ranks are not consecutive (strided or random
// placement): there are no server blocks then.
[[nodiscard]] std::vector<std::uint32_t> node_blocks(const Topology& topology,
                                                     const std::vector<DeviceId>& rank_devices);
// Ring channels like NCCL's: one per NIC of a server when the ranks span several servers
// (rail-aligned orders then use every NIC), else 1 (inside one server channels change nothing
// in a fluid model). Between 1 and 64.
[[nodiscard]] std::uint32_t default_ring_channels(const Topology& topology,
                                                  const std::vector<DeviceId>& rank_devices,
                                                  std::uint32_t ranks_per_node);

// The directed device pairs a plan sends between (for Simulation::build).
[[nodiscard]] std::vector<std::pair<DeviceId, DeviceId>> device_pairs(
    const Plan& plan, const std::vector<DeviceId>& rank_devices);

}  // namespace gradsync
