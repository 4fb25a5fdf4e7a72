#include "gradsync/topology/fabric_registry.hpp"

#include <array>
#include <cstddef>

namespace gradsync {

namespace {

// Routing defaults (sim/fabric/README.md, Routing models): InfiniBand switches route
// adaptively (NVIDIA Quantum adaptive routing), EFA's SRD sprays each flow's packets over many
// paths (Shalev et al., IEEE Micro 2020); Ethernet and RoCE switches hash each flow onto one
// path (ECMP).
constexpr std::array<FabricInfo, 8> kFabrics{{
    {Fabric::NvLink, "nvlink", false, LinkClass::NvLink, Routing::Static, -1},
    {Fabric::Pcie, "pcie", false, LinkClass::Pci, Routing::Static, -1},
    {Fabric::Socket, "socket", false, LinkClass::Pci, Routing::Static, -1},
    {Fabric::InfiniBand, "infiniband", true, LinkClass::Net, Routing::Adaptive, 2},
    {Fabric::Roce, "roce", true, LinkClass::Net, Routing::Static, 1},
    {Fabric::Ethernet, "ethernet", true, LinkClass::Net, Routing::Static, 0},
    {Fabric::Efa, "efa", true, LinkClass::Net, Routing::Adaptive, 1},
    {Fabric::Memory, "memory", false, LinkClass::Pci, Routing::Static, -1},
}};

constexpr bool rows_in_enum_order() {
  for (std::size_t i = 0; i < kFabrics.size(); ++i)
    if (static_cast<std::size_t>(kFabrics[i].fabric) != i) return false;
  return true;
}
static_assert(rows_in_enum_order(), "kFabrics: one row per Fabric, in the enum's order");

}  // namespace

std::span<const FabricInfo> fabric_registry() { return kFabrics; }

const FabricInfo& fabric_info(Fabric fabric) {
  return kFabrics.at(static_cast<std::size_t>(fabric));
}

}  // namespace gradsync
