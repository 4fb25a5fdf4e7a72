// Rings over a direct NVLink mesh (sim/topology/nvlink_rings.cpp, model library: no
// SimGrid): what a server's NVLink wiring admits. A server whose GPUs are NVLinked to each other without an NVSwitch has no single
// ring that uses its links: in rank order a ring takes one of each GPU's links (a full mesh
// of 4 H100s: 1 of 3 peers), or crosses PCIe where the next rank has no NVLink — DGX-1's
// hybrid cube-mesh (each V100 has 6 NVLink2 links to 4 of its 7 peers, one or two links per
// pair) sends GPU 3 → GPU 4 over PCIe and the CPUs. NCCL's graph search (src/graph/search.cc, ring
// pattern) instead looks for rings that follow NVLink hops only, each ring a channel that
// takes `speed` of every NVLink it crosses, as many channels as the links carry; on DGX-1 it
// finds the two Hamiltonian cycles 0 3 2 1 5 6 7 4 (all double links) and 0 1 3 7 5 4 6 2
// (all single links), each in both directions, the first twice: six channels, every link
// used once per direction, a ring busbw of 6 × 25 GB/s × efficiency.
// The orders collective plans walk on such servers are in collective/mesh_ring_orders.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "gradsync/topology/topology.hpp"

namespace gradsync {

// capacity[i][j]: how many ring channels the direct NVLink from rank i to rank j carries (0
// when there is none). The directed Hamiltonian cycles (rank 0 first, next rank = the ring's
// successor) that pack into these capacities, as many as possible and at most `max_rings`:
// every cycle uses one unit of each directed pair it crosses. Exact where a bounded search
// enumerates every cycle (up to 1,024 of them: DGX-1's cube-mesh, full meshes of up to 7
// GPUs), cycles along the widest pairs first; otherwise the best of a few greedy schedules,
// one ring at a time (on full meshes of 8 to 32 GPUs at two units per pair, 94-100 % of the
// rings that exist). Empty when no cycle exists or there are fewer than 2 ranks. Two ranks:
// the ring 0 → 1 → 0 (both directions of the pair).
[[nodiscard]] std::vector<std::vector<std::uint32_t>> pack_rings(
    const std::vector<std::vector<std::uint32_t>>& capacity, std::size_t max_rings);

// The NVLink between each pair of these GPUs (rank order): `weight` summed over the direct
// NVLink links joining them (0 where none).
[[nodiscard]] std::vector<std::vector<double>> direct_nvlink_matrix(
    const Topology& topology, const std::vector<DeviceId>& ranks,
    const std::function<double(const Link&)>& weight);

// Whether these GPUs talk over direct NVLinks without an NVSwitch: all in one server, some
// pair joined by a direct NVLink (a full mesh, a partial one such as DGX-1's, bridged pairs),
// none of them on an NVSwitch. False for NVSwitch servers, PCIe servers, GPUs of several
// servers and a single GPU.
[[nodiscard]] bool direct_nvlink_mesh(const Topology& topology, const std::vector<DeviceId>& ranks);

// The ring orders a ring collective over these GPUs (one server, three or more) walks on a
// direct NVLink mesh, one per channel: pack_rings() with each pair's capacity its NVLink
// bandwidth in half units of the narrowest NVLinked pair's (half units: a full mesh of 4 or 6
// GPUs has no decomposition into directed Hamiltonian cycles at one unit per pair, Tillson
// 1980, but has one at two). Empty when the GPUs are no direct mesh or no ring stays on
// NVLink (the rank order then crosses PCIe, as NCCL's search falls back to PCI paths); with
// two GPUs the rank order is the only ring.
[[nodiscard]] std::vector<std::vector<std::uint32_t>> nvlink_mesh_rings(
    const Topology& topology, const std::vector<DeviceId>& ranks);

// The share of these GPUs' NVLink capacity (one server, a direct mesh) that their rings
// (nvlink_mesh_rings()) use, in [0, 1]: 1 when the mesh decomposes into NVLink rings (DGX-1, full
// meshes of 3 to 7 GPUs), 0 when no ring stays on NVLink or the GPUs are no direct mesh.
[[nodiscard]] double nvlink_ring_share(const Topology& topology, const std::vector<DeviceId>& gpus);

}  // namespace gradsync
