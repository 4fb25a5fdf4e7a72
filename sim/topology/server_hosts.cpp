// Parameter-server hosts on the cluster's network (include/gradsync/topology/server_hosts.hpp).
#include "gradsync/topology/server_hosts.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <tuple>

#include <fmt/format.h>

#include "gradsync/fabric/fabric_defaults.hpp"

namespace gradsync {

namespace {

// A server's NIC with its link to a network switch and its link toward the server.
struct Uplink {
  int node = 0;
  int nic_of_node = 0;  // 0 for the server's first NIC, 1 for the next, ...
  DeviceId switch_id = 0;
  LinkId network = 0;
  std::optional<LinkId> inside;
};

std::vector<Uplink> server_uplinks(const Topology& topology) {
  std::vector<Uplink> out;
  std::vector<int> nics_seen;
  for (DeviceId d = 0; d < topology.devices().size(); ++d) {
    const Device& nic = topology.device(d);
    if (nic.kind != DeviceKind::Nic || nic.node < 0) continue;
    Uplink u;
    bool cabled = false;
    for (LinkId id : topology.links_of(d)) {
      const DeviceId other = topology.link(id).other(d);
      if (topology.device(other).kind == DeviceKind::Switch && !cabled) {
        u.switch_id = other;
        u.network = id;
        cabled = true;
      } else if (topology.device(other).node == nic.node && !u.inside) {
        u.inside = id;
      }
    }
    if (!cabled) continue;
    if (nics_seen.size() <= static_cast<std::size_t>(nic.node)) nics_seen.resize(nic.node + 1, 0);
    u.node = nic.node;
    u.nic_of_node = nics_seen[nic.node]++;
    out.push_back(u);
  }
  std::stable_sort(out.begin(), out.end(), [](const Uplink& a, const Uplink& b) {
    return std::tie(a.nic_of_node, a.node) < std::tie(b.nic_of_node, b.node);
  });
  return out;
}

}  // namespace

void check_host_nic_rate(BytesPerSecond rate, const SourceMark& at) {
  const double r = rate.bytes_per_second();
  if (!(r > 0.0)) throw ConfigError(at, "a parameter-server host's NIC rate must be positive");
  if (r > 100e12)
    throw ConfigError(at, fmt::format("{:.4g}GB/s is beyond any link (at most 100TB/s): a unit "
                                      "typo?", r / 1e9));
}

std::vector<DeviceId> add_server_hosts(Topology& topology, std::uint32_t count,
                                       std::optional<BytesPerSecond> host_nic,
                                       const SourceMark& at) {
  if (host_nic) check_host_nic_rate(*host_nic, at);
  const std::vector<Uplink> uplinks = server_uplinks(topology);
  if (uplinks.empty())
    throw ConfigError(at, fmt::format("parameter-server hosts need a network switch to be cabled "
                                      "to, and topology '{}' has no NIC on one (one server, or "
                                      "two cabled NIC to NIC)",
                                      topology.name()));
  int nodes = 0;
  for (const Device& d : topology.devices()) nodes = std::max(nodes, d.node + 1);
  std::vector<DeviceId> hosts;
  for (std::uint32_t j = 0; j < count; ++j) {
    const Uplink& u = uplinks[j % uplinks.size()];
    const BytesPerSecond nic_bandwidth = host_nic.value_or(topology.link(u.network).bandwidth);
    const std::string name = fmt::format("ps{}", j);
    if (topology.find_device(name) || topology.find_device(name + ".nic"))
      throw ConfigError(at, fmt::format("topology '{}' already has a device named {}: "
                                        "parameter-server hosts are named ps0, ps1, ...",
                                        topology.name(), name));
    Device cpu;
    cpu.name = name;
    cpu.kind = DeviceKind::Cpu;
    cpu.node = nodes + static_cast<int>(j);
    cpu.origin = at;
    Device nic = cpu;
    nic.name = name + ".nic";
    nic.kind = DeviceKind::Nic;
    const DeviceId cpu_id = topology.add_device(cpu);
    const DeviceId nic_id = topology.add_device(nic);

    Link slot;
    slot.fabric = Fabric::Pcie;
    slot.efficiency = default_efficiency(Fabric::Pcie);
    slot.bandwidth = nic_bandwidth;
    if (u.inside) {
      slot = topology.link(*u.inside);
      slot.bandwidth = BytesPerSecond(std::max(slot.bandwidth.bytes_per_second(),
                                               nic_bandwidth.bytes_per_second()));
    }
    slot.a = cpu_id;
    slot.b = nic_id;
    slot.origin = at;
    topology.add_link(slot);

    Link cable = topology.link(u.network);
    cable.a = nic_id;
    cable.b = u.switch_id;
    cable.bandwidth = nic_bandwidth;
    cable.origin = at;
    topology.add_link(cable);
    hosts.push_back(cpu_id);
  }
  return hosts;
}

}  // namespace gradsync
