// Rings over direct NVLink meshes (nvlink_rings.hpp) and what uses them: the cluster template's
// node.intra.nvlinks wiring and NCCL's ring graph on it (nccl_tuner.hpp). DGX-1's hybrid
// cube-mesh is the worked case: NCCL's search finds the cycles 0 3 2 1 5 6 7 4 (double links)
// and 0 1 3 7 5 4 6 2 (single links), both directions, the first twice — six channels at one
// link's speed (20 GB/s, NCCL's SM70 NVLink), which a wrong packing or wiring changes.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gradsync/topology/nvlink_rings.hpp"
#include "gradsync/fabric/nccl_model.hpp"
#include "gradsync/fabric/nccl_tuner.hpp"
#include "gradsync/topology/cluster_spec.hpp"
#include "gradsync/topology/topology.hpp"
#include "gradsync/units/units.hpp"
#include "../exact_link_group.hpp"

using namespace gradsync;
using namespace gradsync::literals;

namespace {

using Matrix = std::vector<std::vector<std::uint32_t>>;
using Rings = std::vector<std::vector<std::uint32_t>>;

// DGX-1 (V100): NVLinks per GPU pair (NVIDIA/nccl#671's topology dump, topologies/dgx1-v100.yaml).
const std::vector<std::vector<int>> kCubeMesh{
    {0, 1, 1, 2, 2, 0, 0, 0}, {1, 0, 2, 1, 0, 2, 0, 0}, {1, 2, 0, 2, 0, 0, 1, 0},
    {2, 1, 2, 0, 0, 0, 0, 1}, {2, 0, 0, 0, 0, 1, 1, 2}, {0, 2, 0, 0, 1, 0, 2, 1},
    {0, 0, 1, 0, 1, 2, 0, 2}, {0, 0, 0, 1, 2, 1, 2, 0}};

Matrix cube_mesh_units() {
  Matrix m;
  for (const auto& row : kCubeMesh) m.emplace_back(row.begin(), row.end());
  return m;
}

// How often each directed pair (i -> ring successor) is used by `rings`.
std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> uses(const Rings& rings) {
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> u;
  for (const auto& r : rings)
    for (std::size_t k = 0; k < r.size(); ++k) ++u[{r[k], r[(k + 1) % r.size()]}];
  return u;
}

// One DGX-1: the cube-mesh at 150 GB/s per GPU (25 GB/s per link), 4 NICs on 4 PCIe switches
// (two GPUs each), two sockets.
Topology dgx1() {
  ClusterSpec spec;
  spec.name = "dgx1";
  spec.gpu = GpuGeneration::Volta;
  spec.nodes = 1;
  spec.node.gpus = 8;
  spec.node.intra = exact_link_group(Fabric::NvLink, 150_GBps, "dgx1.yaml");
  spec.node.intra_shape = IntraShape::Mesh;
  spec.node.nvlinks = kCubeMesh;
  spec.node.sockets = 2;
  spec.node.socket_link = exact_link_group(Fabric::Socket, 38.4_GBps, "dgx1.yaml");
  spec.node.nics = 4;
  spec.node.nic_bandwidth = 12.5_GBps;
  spec.node.pcie = exact_link_group(Fabric::Pcie, 16_GBps, "dgx1.yaml");
  spec.node.origin = SourceMark{"dgx1.yaml", 3, 1};
  spec.origin = SourceMark{"dgx1.yaml", 1, 1};
  return expand_cluster(spec);
}

std::vector<DeviceId> first_gpus(const Topology& t, std::size_t n) {
  std::vector<DeviceId> g = t.gpus();
  g.resize(n);
  return g;
}

}  // namespace

TEST_CASE("pack_rings: DGX-1's cube-mesh packs into NCCL's six rings, every link used once") {
  const Rings rings = pack_rings(cube_mesh_units(), 64);
  REQUIRE(rings.size() == 6);
  const Rings expected{{0, 3, 2, 1, 5, 6, 7, 4}, {0, 3, 2, 1, 5, 6, 7, 4},
                       {0, 4, 7, 6, 5, 1, 2, 3}, {0, 4, 7, 6, 5, 1, 2, 3},
                       {0, 1, 3, 7, 5, 4, 6, 2}, {0, 2, 6, 4, 5, 7, 3, 1}};
  CHECK(rings == expected);
  // Each directed pair carries exactly its links: the whole mesh, no more.
  const auto u = uses(rings);
  for (std::uint32_t i = 0; i < 8; ++i)
    for (std::uint32_t j = 0; j < 8; ++j) {
      CAPTURE(i);
      CAPTURE(j);
      const auto it = u.find({i, j});
      CHECK((it == u.end() ? 0 : static_cast<int>(it->second)) == kCubeMesh[i][j]);
    }
}

TEST_CASE("pack_rings: limits, two ranks, no cycle, and a full mesh of four at one and two units") {
  CHECK(pack_rings(cube_mesh_units(), 4).size() == 4);
  CHECK(pack_rings(Matrix{{0, 3}, {3, 0}}, 64) == Rings(3, {0, 1}));
  CHECK(pack_rings(Matrix{{0}}, 64).empty());
  // GPU 3 has one neighbour: no Hamiltonian cycle.
  CHECK(pack_rings(Matrix{{0, 1, 1, 1}, {1, 0, 1, 0}, {1, 1, 0, 0}, {1, 0, 0, 0}}, 64).empty());
  // K4 has no decomposition into three directed Hamiltonian cycles (Tillson): at one unit per
  // pair two fit, at two units six — all of every GPU's links.
  const Matrix k4{{0, 1, 1, 1}, {1, 0, 1, 1}, {1, 1, 0, 1}, {1, 1, 1, 0}};
  CHECK(pack_rings(k4, 64).size() == 2);
  Matrix k4x2 = k4;
  for (auto& row : k4x2)
    for (auto& v : row) v *= 2;
  CHECK(pack_rings(k4x2, 64).size() == 6);
}

TEST_CASE("pack_rings: larger full meshes pack greedily, every ring a cycle within capacity") {
  for (std::uint32_t n : {12u, 32u}) {
    CAPTURE(n);
    Matrix cap(n, std::vector<std::uint32_t>(n, 2));
    for (std::uint32_t i = 0; i < n; ++i) cap[i][i] = 0;
    const Rings rings = pack_rings(cap, 64);
    // At least 94 % of the 2(n-1) rings that exist (every GPU's links nearly all used).
    CHECK(static_cast<double>(rings.size()) >= 0.94 * 2 * (n - 1));
    for (const auto& r : rings) {
      std::vector<std::uint32_t> sorted = r;
      std::sort(sorted.begin(), sorted.end());
      for (std::uint32_t k = 0; k < n; ++k) CHECK(sorted[k] == k);
    }
    for (const auto& [pair, count] : uses(rings)) CHECK(count <= 2);
  }
}

TEST_CASE("nvlinks wiring: pairs at k links' bandwidth, the others over PCIe and the CPUs") {
  const Topology t = dgx1();
  const auto bw = direct_nvlink_matrix(t, t.gpus(), [](const Link& l) {
    return l.bandwidth.gigabytes_per_second();
  });
  for (std::size_t i = 0; i < 8; ++i)
    for (std::size_t j = 0; j < 8; ++j) CHECK(bw[i][j] == doctest::Approx(25.0 * kCubeMesh[i][j]));
  // GPU 0 and GPU 5 share no NVLink: PCIe switch, CPU 0, the socket link, CPU 1, PCIe switch.
  const Router router(t);
  const Route r = router.route(t.gpus()[0], t.gpus()[5]);
  std::string names;
  for (DeviceId d : r.devices) names += (names.empty() ? "" : " ") + t.device(d).name;
  CHECK(names == "n0.gpu0 n0.pcie0 n0.cpu0 n0.cpu1 n0.pcie2 n0.gpu5");
  std::vector<Fabric> fabrics;
  for (LinkId id : r.links) fabrics.push_back(t.link(id).fabric);
  CHECK(fabrics == std::vector<Fabric>{Fabric::Pcie, Fabric::Pcie, Fabric::Socket, Fabric::Pcie,
                                       Fabric::Pcie});
  // GPU 0 and GPU 3: one hop of NVLink.
  const Route direct = router.route(t.gpus()[0], t.gpus()[3]);
  REQUIRE(direct.links.size() == 1);
  CHECK(t.link(direct.links[0]).fabric == Fabric::NvLink);
}

TEST_CASE("nvlink_mesh_rings: the server's rings in half units; subsets; no mesh, no rings") {
  const Topology t = dgx1();
  REQUIRE(direct_nvlink_mesh(t, t.gpus()));
  const Rings all = nvlink_mesh_rings(t, t.gpus());
  CHECK(all.size() == 12);  // the six rings, each twice (half units)
  const auto u = uses(all);
  CHECK(u.at({0, 3}) == 4);
  CHECK(u.at({0, 1}) == 2);
  CHECK(u.count({0, 5}) == 0);
  // GPUs 0-3: 4 links each among themselves, all of them used.
  const Rings quad = nvlink_mesh_rings(t, first_gpus(t, 4));
  const auto q = uses(quad);
  std::uint32_t out0 = 0;
  for (const auto& [pair, n] : q)
    if (pair.first == 0) out0 += n;
  CHECK(out0 == 8);  // 4 links x 2 half units
  // Two GPUs walk the rank order; GPUs 0-4 have no ring on NVLink (GPU 4 reaches GPU 0 only).
  CHECK(nvlink_mesh_rings(t, first_gpus(t, 2)).empty());
  CHECK(nvlink_mesh_rings(t, first_gpus(t, 5)).empty());
}

TEST_CASE("NCCL's ring graph on the cube-mesh: 6 channels at one link's 20 GB/s, 12 in all") {
  const Topology t = dgx1();
  const NcclTopologyView v = nccl_topology_view(t, t.gpus(), 8, std::nullopt);
  CHECK(v.intra == LinkClass::NvLink);
  CHECK(v.ring.channels == 6);
  CHECK(v.ring.bw_intra == doctest::Approx(20.0));
  CHECK(v.comm_channels == 12);
  CHECK(v.tree.channels == v.ring.channels);  // the chains follow NVLink like the rings
  // GPUs 0-1: their one link, one channel at 20 GB/s.
  const NcclTopologyView pair = nccl_topology_view(t, first_gpus(t, 2), 2, std::nullopt);
  CHECK(pair.ring.channels == 1);
  CHECK(pair.ring.bw_intra == doctest::Approx(20.0));
  // GPUs 0-4: no ring stays on NVLink; NCCL's rings cross PCI.
  const NcclTopologyView five = nccl_topology_view(t, first_gpus(t, 5), 5, std::nullopt);
  CHECK(five.intra == LinkClass::Pci);
  // GPUs 0 and 5 share no NVLink: PCI too (and no LL128, which needs NVLink).
  const NcclTopologyView apart =
      nccl_topology_view(t, {t.gpus()[0], t.gpus()[5]}, 2, std::nullopt);
  CHECK(apart.intra == LinkClass::Pci);
  CHECK_FALSE(apart.ll128);
  CHECK(pair.intra == LinkClass::NvLink);
}
