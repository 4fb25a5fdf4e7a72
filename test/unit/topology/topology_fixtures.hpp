// Builders the topology tests share: a device by name and kind, and a DGX-like cluster spec.
#pragma once

#include <string>

#include "gradsync/topology/cluster_spec.hpp"
#include "gradsync/topology/topology.hpp"
#include "gradsync/units/units.hpp"

namespace gradsync::test {

inline DeviceId add(Topology& t, const std::string& name, DeviceKind kind, int node = -1) {
  Device device;
  device.name = name;
  device.kind = kind;
  device.node = node;
  return t.add_device(device);
}

// `nodes` servers of 8 GPUs on 450 GB/s NVLink, 8 NICs of 400 Gb/s behind 64 GB/s PCIe, on an
// InfiniBand network of `shape` (2 servers per leaf where the shape has leaves).
inline ClusterSpec dgx_cluster(int nodes, NetworkShape shape) {
  using namespace gradsync::literals;
  ClusterSpec spec;
  spec.name = "dgx";
  spec.nodes = nodes;
  spec.node.gpus = 8;
  spec.node.intra = LinkGroupSpec{Fabric::NvLink, 450_GBps, 1_us, std::nullopt, {}};
  spec.node.nics = 8;
  spec.node.nic_bandwidth = 400_Gbps;
  spec.node.pcie = LinkGroupSpec{Fabric::Pcie, 64_GBps, 1_us, std::nullopt, {}};
  NetworkSpec net;
  net.fabric = Fabric::InfiniBand;
  net.shape = shape;
  net.hosts_per_leaf = 2;
  spec.network = net;
  return spec;
}

}  // namespace gradsync::test
