// Capital cost of a cluster from its `cost:` prices (see topology_summary.hpp).
#include "gradsync/topology/topology_summary.hpp"

namespace gradsync {

std::optional<ClusterCost> cluster_cost(const Topology& topology) {
  const auto& prices = topology.cost();
  if (!prices) return std::nullopt;
  ClusterCost c;
  c.currency = prices->currency;
  if (prices->total_override > 0.0) {
    c.total = prices->total_override;
    return c;
  }
  double nics = 0.0, switch_ports = 0.0, cables = 0.0;
  for (const Device& d : topology.devices())
    if (d.kind == DeviceKind::Nic) nics += 1.0;
  for (const Link& l : topology.links()) {
    if (!is_network_fabric(l.fabric)) continue;
    cables += 1.0;
    if (topology.device(l.a).kind == DeviceKind::Switch) switch_ports += 1.0;
    if (topology.device(l.b).kind == DeviceKind::Switch) switch_ports += 1.0;
  }
  c.total = static_cast<double>(topology.gpu_count()) * prices->gpu + nics * prices->nic +
            switch_ports * prices->switch_port + cables * prices->cable +
            static_cast<double>(topology.node_count()) * prices->node;
  return c;
}

}  // namespace gradsync
