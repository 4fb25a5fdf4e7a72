// One row per link fabric: what gradsync reads about a fabric from its kind alone — its name,
// whether it joins servers, NCCL's latency row, the routing it runs by default, how `advise`
// ranks it at one line rate. Fabrics with behaviour of their own (RoCE's PFC/ECN, TCP's
// incast and host caps) add an engine correction besides (sim/engine/fabric_correction.hpp).
//
// A plain fabric is three edits: the enum value (topology.hpp), its row here
// (sim/topology/fabric_registry.cpp) and its default efficiency with the published rows it
// comes from (sim/fabric/fabric_defaults.cpp). Loaders, `--set` choices, help texts, the NCCL
// view, routing and the advisor read the row.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "gradsync/topology/topology.hpp"

namespace gradsync {

// NCCL's hardware classes for latency (NCCL_HW_NVLINK, NCCL_HW_PCI, NCCL_HW_NET).
enum class LinkClass : std::uint8_t { NvLink, Pci, Net };

struct FabricInfo {
  Fabric fabric;
  std::string_view name;  // the YAML spelling, and the name in every output
  bool network;           // joins servers (network.fabric); false: links inside a server
  LinkClass nccl_class;   // the row of NCCL's latency tables its hops take
  Routing routing;        // what a network of it runs when the topology sets no network.routing
  // `advise` at one line rate: a higher rank carries NCCL better (RDMA without the host TCP
  // stack above TCP, InfiniBand above RoCE-like transports); -1 for fabrics inside a server.
  int advise_rank;
};

// Every fabric, in the enum's order (the order of choice lists and help texts).
[[nodiscard]] std::span<const FabricInfo> fabric_registry();
[[nodiscard]] const FabricInfo& fabric_info(Fabric fabric);

}  // namespace gradsync
