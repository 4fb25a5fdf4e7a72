// Parameter servers on hosts of their own (`sync.ps.hosts`, `bench --ps-hosts`): CPU machines
// outside the GPU servers, each with one NIC on the cluster's network, as BytePS's and
// TensorFlow's parameter-server deployments run them (Jiang et al., OSDI'20: CPU machines
// with their own NICs add bandwidth the GPU machines do not have to give).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "gradsync/units/config_error.hpp"
#include "gradsync/topology/topology.hpp"
#include "gradsync/units/units.hpp"

namespace gradsync {

// Adds `count` hosts to `topology` and returns their CPU devices (the server ranks' devices),
// in order. Host j is "ps{j}" (a CPU, node = the topology's nodes + j) behind a NIC "ps{j}.nic"
// of `nic_bandwidth` (empty: the rate of the server NIC it is cabled beside), cabled to the network switch of the j-th NIC in the order NIC 0 of
// every server, then NIC 1, ... (so hosts spread over leaves and rails as the servers' NICs
// do). Its network link copies that NIC's uplink (fabric, latency, efficiency) at
// the host NIC's rate; its PCIe link copies that NIC's link toward its server, at least as fast as
// the NIC (a host's slot is sized for its NIC). Throws ConfigError at `at` when the topology
// has no NIC cabled to a network switch (one server, or two cabled NIC to NIC), or when
// `nic_bandwidth` fails check_host_nic_rate().
// A host NIC's line rate must be positive and at most 100 TB/s (the topology loader's bound on
// any link: beyond is a unit typo); ConfigError at `at` otherwise.
void check_host_nic_rate(BytesPerSecond rate, const SourceMark& at);

std::vector<DeviceId> add_server_hosts(Topology& topology, std::uint32_t count,
                                       std::optional<BytesPerSecond> nic_bandwidth,
                                       const SourceMark& at);

}  // namespace gradsync
