// Internal to sim/config: a topology file's schema — the keys of each form and mapping, the
// choices of its enumerations and the bounds of its counts — shared by the readers
// (topology_readers.cpp) and the loader.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "gradsync/topology/cluster_spec.hpp"
#include "gradsync/topology/topology.hpp"

namespace gradsync::config {

// Bounds that catch typos before they become a multi-gigabyte graph.
inline constexpr std::size_t kMaxExplicitDevices = 1'000'000;
inline constexpr std::size_t kMaxExplicitLinks = 4'000'000;
inline constexpr long long kMaxNodes = 100'000;
inline constexpr long long kMaxGpusPerNode = 1024;
inline constexpr long long kMaxGpus = 262'144;
inline constexpr long long kMaxNics = 524'288;      // network endpoints: 2 per GPU at the largest
inline constexpr long long kMaxMeshGpus = 32;       // a full NVLink mesh is G(G-1)/2 links per server

inline const std::vector<std::string> kTemplateKeys{"name", "software", "gpu", "nodes", "node",
                                             "network", "cost", "nccl"};
inline const std::vector<std::string> kExplicitKeys{"name",      "software", "gpu",       "devices",
                                             "links",     "cost",     "roce",      "routing",
                                             "qps",       "ecmp_seed", "tcp",
                                             "nvls_efficiency", "nccl"};
inline const std::vector<std::string> kCostKeys{"currency", "gpu",   "nic",   "switch_port",
                                               "cable",    "node",  "total", "networks"};
// cost.networks entries: another network's NIC, switch-port and cable prices.
inline const std::vector<std::string> kCostNetworkKeys{"fabric", "bandwidth", "nic",
                                                       "switch_port", "cable"};
inline const std::vector<std::string> kRouting{"static", "adaptive"};
inline constexpr long long kMaxQps = 128;  // NCCL_IB_MAX_QPS (NVIDIA/nccl src/transport/net_ib)
inline const std::vector<std::string> kLinkGroupKeys{"fabric",     "switch", "bandwidth", "latency",
                                              "efficiency", "p2p",    "nvls_efficiency", "nvlinks"};
inline const std::vector<std::string> kSoftware = software_names();
inline const std::vector<std::string> kNetworkFabrics = fabric_names(/*network_only=*/true);
inline const std::vector<std::string> kShapes = network_shape_names();
inline const std::vector<std::string> kDeviceKinds = device_kind_names();
inline const std::vector<std::string> kFabrics = fabric_names();

}  // namespace gradsync::config
