// The cluster template (README.md, Cluster template): N identical servers (GPUs, an intra-node
// fabric, NICs) joined by a network of a given shape. expand_cluster() turns it into the explicit
// device/link graph (topology.hpp), which is what everything downstream consumes.
//
//   node (one server)                          network shapes
//   ┌──────────────────────────────┐           single-switch : every NIC on one switch
//   │ gpu0 ... gpuG-1              │           leaf-spine    : hosts_per_leaf servers per leaf,
//   │   │  NVSwitch / mesh / PCIe  │                           leaves × spines, uplinks sized by
//   │   └── pcie ── nic0..nicK-1 ──┼── net                     oversubscription
//   └──────────────────────────────┘           fat-tree      : 3-level k-ary fat tree (k = radix)
//                                              rail-optimized: NIC i of every server on rail
//                                                              switch i, rails joined by spines
//                                              direct        : 2 servers, NIC i to NIC i
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gradsync/units/config_error.hpp"
#include "gradsync/topology/topology.hpp"
#include "gradsync/units/units.hpp"

namespace gradsync {

// One group of identical links (`intra`, `pcie`, `network`, `socket_link`).
struct LinkGroupSpec {
  Fabric fabric = Fabric::NvLink;
  BytesPerSecond bandwidth{0.0};
  Seconds latency{0.0};
  std::optional<double> efficiency;  // unset: the fabric's default (fabric_defaults.hpp)
  SourceMark origin;
};

enum class IntraShape {
  Switch,  // NVSwitch (nvlink) or a PCIe switch per socket (pcie): star inside the server
  Mesh,    // nvlink without switch: a direct link between every pair of GPUs
  RootComplex,  // pcie without switch: GPUs hang off the CPU root complex of their socket
};

struct NodeSpec {
  int gpus = 1;
  // Intra-node fabric. For nvlink, bandwidth is per GPU per direction (a mesh splits it
  // evenly over the G-1 peers); for pcie it is each GPU's PCIe link.
  LinkGroupSpec intra;
  IntraShape intra_shape = IntraShape::Switch;
  // nvlink mesh (switch: false): the NVLinks between GPU i and j (node.intra.nvlinks, as
  // `nvidia-smi topo -m` prints NV1, NV2, …; 0 = none), symmetric, zero diagonal. Each link
  // carries intra.bandwidth / (the most links any GPU has); pairs without one talk over
  // node.pcie and the CPUs. Empty: a full mesh, the bandwidth split over the G-1 peers.
  std::vector<std::vector<int>> nvlinks;
  // pcie: GPUs exchange data peer to peer (node.intra.p2p; Device::p2p). Default true: CUDA
  // peer access over PCIe is supported on data-center GPUs (sim/fabric/README.md, PCIe).
  // false under a PCIe switch: traffic turns at the CPU; false on the root complex
  // (GeForce cards): every GPU's traffic is staged in its socket's DRAM (host_memory).
  bool pcie_p2p = true;
  // nvlink with switch: NVLS's share of the GPU port (node.intra.nvls_efficiency); empty =
  // kNvlsBandwidthFactor.
  std::optional<double> nvls_efficiency;
  int sockets = 1;                       // CPU sockets; GPUs and NICs split evenly across them
  std::optional<LinkGroupSpec> socket_link;  // CPU-CPU link (UPI / xGMI) when sockets > 1
  // One socket's DRAM (node.host_memory: peak bandwidth, efficiency), required by pcie on the
  // root complex with p2p: false, where NCCL's SHM transport writes each byte to host memory
  // and the peer reads it back.
  std::optional<LinkGroupSpec> host_memory;
  int nics = 0;                          // nics == gpus: one NIC per GPU (rail-optimized)
  BytesPerSecond nic_bandwidth{0.0};     // network line rate of one NIC
  std::optional<LinkGroupSpec> pcie;     // GPU <-> NIC (nvlink servers) or NIC <-> CPU (pcie)
  // nvlink servers: GPU <-> NIC traffic goes peer to peer through the PCIe switch they share
  // (node.pcie.p2p, GPUDirect RDMA). false: PCIe ACS redirects it to the root complex, or
  // GPUDirect RDMA is unavailable, so each byte climbs the switch's uplink to the CPU and comes
  // back down (sim/fabric/README.md, PCIe).
  bool nic_p2p = true;
  SourceMark origin;
};

// Direct: two servers and no switch, NIC k of one cabled to NIC k of the other.
enum class NetworkShape { SingleSwitch, LeafSpine, FatTree, RailOptimized, Direct };

struct NetworkSpec {
  Fabric fabric = Fabric::InfiniBand;
  NetworkShape shape = NetworkShape::SingleSwitch;
  int hosts_per_leaf = 0;        // leaf-spine: servers per leaf switch (0 = all on one leaf)
  double oversubscription = 1.0; // leaf (or rail) downlink : uplink bandwidth, >= 1
  int spines = 0;                // leaf-spine / rail-optimized: spine switches (0 = automatic)
  int radix = 0;                 // fat-tree: switch radix k (0 = smallest even k that fits)
  Seconds link_latency{0.0};
  Seconds switch_latency{0.0};
  std::optional<double> efficiency;
  std::optional<RoceOptions> roce;
  std::optional<TcpOptions> tcp;  // ethernet only; tcp_model.hpp defaults when absent
  RoutingOptions routing;        // network.routing / qps / ecmp_seed (fabric_model.hpp)
  // network.sharp: every switch reduces in the network (SHARP; Device::sharp). InfiniBand only
  // (Quantum switches with SHARPv3, NVIDIA's SHARP docs; NCCL reaches it through its CollNet
  // plugin, NCCL_COLLNET_ENABLE=1).
  bool sharp = false;
  SourceMark origin;
};

struct ClusterSpec {
  std::string name;
  SoftwareModel software = SoftwareModel::Nccl;
  std::optional<GpuGeneration> gpu;  // `gpu:` (a GPU model); empty = inferred where needed
  std::string gpu_model;             // `gpu:` as written; "" when absent
  NcclSettings nccl;                 // `nccl:` (protocols, tuner rules)
  int nodes = 1;
  NodeSpec node;
  std::optional<NetworkSpec> network;  // required when nodes > 1
  std::optional<CostSpec> cost;
  SourceMark origin;
};

[[nodiscard]] std::string_view to_string(NetworkShape shape);
[[nodiscard]] std::optional<NetworkShape> network_shape_from_string(std::string_view text);
// Every shape's spelling, in declaration order.
[[nodiscard]] std::vector<std::string> network_shape_names();

// Checks the numbers make a buildable cluster (counts in range, divisibility, network present
// when nodes > 1). Throws ConfigError at the offending group's origin.
void validate_cluster(const ClusterSpec& spec);

// Builds the device/link graph. Device names: "n{i}.gpu{j}", "n{i}.nic{k}", "n{i}.nvswitch",
// "n{i}.cpu{s}", "n{i}.pcie{s}"; network switches "switch" (single-switch), "leaf{l}" and
// "spine{j}" (leaf-spine), "rail{r}" or "rail{r}.{g}" and "spine{j}" (rail-optimized),
// "edge{p}.{j}", "agg{p}.{j}", "core{j}" (fat-tree). Calls validate_cluster() first and
// Topology::validate() last.
[[nodiscard]] Topology expand_cluster(const ClusterSpec& spec);

}  // namespace gradsync
