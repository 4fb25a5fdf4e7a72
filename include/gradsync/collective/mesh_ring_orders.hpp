// The ring orders and chains collective plans walk on servers whose GPUs are NVLinked
// directly (sim/collective/mesh_ring_orders.cpp, model library: no SimGrid), from the rings
// their wiring admits (topology/nvlink_rings.hpp): one server's rings, each channel's path
// across servers cut at its NIC, servers filled unevenly, and the ranks renumbered along NVLink.
#pragma once

#include <cstdint>
#include <vector>

#include "gradsync/topology/nvlink_rings.hpp"
#include "gradsync/topology/topology.hpp"

namespace gradsync {

// The NVLink rings of one server of these ranks (node-major, ranks_per_node per server), in
// local ranks: nvlink_mesh_rings() of the ranks when they are on one server; across servers
// those of the first server when every server's GPUs give the same ones. Empty otherwise
// (NVSwitch or PCIe servers, servers that differ).
[[nodiscard]] std::vector<std::vector<std::uint32_t>> server_mesh_rings(
    const Topology& topology, const std::vector<DeviceId>& ranks, std::uint32_t ranks_per_node);

// For rings across servers of identical meshes (`rings` = server_mesh_rings()): one local path
// per channel, each a ring cut open between two GPUs, the path entering at one and leaving
// from the other (rail_ring_orders() with local paths). As NCCL's search builds each channel
// from NIC to NIC over NVLink, channel c uses NIC c mod NICs: the cut prefers two GPUs nearest
// that NIC, else one nearest it and one nearest the next NIC (as the rail rings cross when
// each NIC has one GPU), and among equals the ring used least so far (on DGX-1 the four
// channels cut rings between GPUs 0 and 1, 2 and 3, 4 and 5, 6 and 7, one of the four rings
// each). Empty when `rings` is, or the ranks are one server.
[[nodiscard]] std::vector<std::vector<std::uint32_t>> mesh_rail_paths(
    const Topology& topology, const std::vector<DeviceId>& ranks, std::uint32_t ranks_per_node,
    const std::vector<std::vector<std::uint32_t>>& rings, std::uint32_t channels);

// Servers filled unevenly (node_sizes[k] consecutive ranks on server k, e.g. 8 + 4): each
// server's local path per channel as mesh_rail_paths() cuts it from that server's own rings,
// the rank order on a server without rings (one or two GPUs, NVSwitch, PCIe). Empty when no
// server has rings.
[[nodiscard]] std::vector<std::vector<std::vector<std::uint32_t>>> mesh_server_paths(
    const Topology& topology, const std::vector<DeviceId>& ranks,
    const std::vector<std::uint32_t>& node_sizes, std::uint32_t channels);

// These ranks (node-major, ranks_per_node per server, or all on one server) with each
// server's GPUs renumbered along its first NVLink ring when the server is a direct NVLink
// mesh (nvlink_mesh_rings()), unchanged otherwise. NCCL builds its trees' chains inside a
// server along NVLink whatever the ranks' numbering; renumbering lets planners that chain a
// server's ranks in order (trees, hierarchical) do the same. For one collective over whole
// servers (bench, a data-parallel job): a job's own groups (tensor parallel) keep the
// numbering it gives them.
[[nodiscard]] std::vector<DeviceId> nvlink_chain_order(const Topology& topology,
                                                       std::vector<DeviceId> ranks,
                                                       std::uint32_t ranks_per_node);

}  // namespace gradsync
