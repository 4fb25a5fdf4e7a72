// What `gradsync topo` reports about a topology: counts, bandwidths, bisection, diameter.
// Pure functions of the graph (no SimGrid, no YAML).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "gradsync/topology/topology.hpp"
#include "gradsync/units/units.hpp"

namespace gradsync {

struct FabricLinks {
  std::size_t count = 0;
  BytesPerSecond total_bandwidth{0.0};  // sum of line rates (one direction)
};

struct TopologySummary {
  std::string name;
  std::size_t gpus = 0;
  std::size_t nodes = 0;
  GpuGeneration gpu_generation = GpuGeneration::Hopper;  // gpu_generation_of()
  bool gpu_generation_inferred = true;                   // from the NVLink rate, not `gpu:`
  std::string gpu_model;                                 // `gpu:` as written ("" if absent)
  std::map<DeviceKind, std::size_t> devices;   // count per kind
  std::map<Fabric, FabricLinks> links;         // count and bandwidth per fabric
  // Per GPU, per direction: the sum of its own links' line rates (intra-node port), and its
  // share of its server's network line rate (NIC bandwidth of the node / GPUs of the node).
  BytesPerSecond gpu_port_bandwidth{0.0};
  BytesPerSecond gpu_network_bandwidth{0.0};
  // Max-flow between the first and second half of the ranks (line rates, one direction).
  BytesPerSecond bisection_bandwidth{0.0};
  // Worst switch ratio of host-facing to switch-facing bandwidth (1 = non-blocking).
  double oversubscription = 1.0;
  std::size_t diameter_hops = 0;  // longest shortest route between two GPUs, in links
  // NIC rails (rail_nics() in fabric_model.hpp): the fewest and most NICs a GPU's traffic
  // between servers is split over, and the most GPUs sharing one such NIC (0 without NICs).
  std::size_t rail_nics_min = 0;
  std::size_t rail_nics_max = 0;
  std::size_t gpus_per_nic_max = 0;
  std::size_t sharp_switches = 0;  // network switches that reduce in the network (SHARP)
  // PCIe switch uplinks that GPU <-> NIC traffic climbs and comes back down (no P2P between
  // them: node.pcie.p2p or node.intra.p2p false; Link::shares), counted once in `links`.
  std::size_t shared_uplinks = 0;
  // The first server's GPUs when NVLinked directly (no NVSwitch, nvlink_rings.hpp): the fewest
  // and most peers a GPU has an NVLink to, of mesh_gpus - 1; the share of the NVLinks that
  // rings along NVLink use (0: none stays on NVLink). mesh_gpus = 0 for other servers.
  std::size_t mesh_gpus = 0;
  std::size_t mesh_peers_min = 0;
  std::size_t mesh_peers_max = 0;
  double mesh_ring_share = 0.0;
};

[[nodiscard]] TopologySummary summarize(const Topology& topology);

// A readable, aligned text block of the summary (what `gradsync topo` prints); every number
// carries its unit. Implemented in sim/report/topology_report.cpp.
[[nodiscard]] std::string format_summary(const TopologySummary& summary);

// GraphViz (dot) text: one cluster per server, edges labelled with fabric and bandwidth.
[[nodiscard]] std::string to_dot(const Topology& topology);

}  // namespace gradsync

namespace gradsync {

// Capital cost of a cluster from its `cost:` prices (README.md, Cluster template): GPUs × gpu +
// NICs × nic + switch ports (link ends at network switches) × switch_port + network links × cable
// + servers × node, or the quoted `total` when given. Empty without `cost:`.
struct ClusterCost {
  std::string currency;
  double total = 0.0;
};
[[nodiscard]] std::optional<ClusterCost> cluster_cost(const Topology& topology);

// Hardware is depreciated over 3 years (36 months, the usual straight-line depreciation
// period for servers), so the cost of one second of the cluster is total / kCostAmortization.
inline constexpr Seconds kCostAmortization{3.0 * 365.0 * 24.0 * 3600.0};

}  // namespace gradsync
