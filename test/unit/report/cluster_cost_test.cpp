// Cluster capital cost from `cost:` prices.
#include <doctest/doctest.h>

#include "gradsync/topology/cluster_spec.hpp"
#include "gradsync/topology/topology_summary.hpp"

using namespace gradsync;

TEST_CASE("cluster cost counts GPUs, NICs, switch ports, cables and servers") {
  ClusterSpec spec;
  spec.name = "priced";
  spec.nodes = 2;
  spec.node.gpus = 4;
  spec.node.intra = LinkGroupSpec{Fabric::NvLink, BytesPerSecond(100e9), Seconds(1e-6), 1.0, {}};
  spec.node.nics = 2;
  spec.node.nic_bandwidth = BytesPerSecond(25e9);
  spec.node.pcie = LinkGroupSpec{Fabric::Pcie, BytesPerSecond(32e9), Seconds(1e-6), 1.0, {}};
  NetworkSpec net;
  net.fabric = Fabric::InfiniBand;
  net.shape = NetworkShape::SingleSwitch;
  spec.network = net;
  CostSpec prices;
  prices.gpu = 1000;
  prices.nic = 100;
  prices.switch_port = 10;
  prices.cable = 1;
  prices.node = 5000;
  spec.cost = prices;
  const Topology t = expand_cluster(spec);
  const auto cost = cluster_cost(t);
  REQUIRE(cost.has_value());
  // 8 GPUs, 4 NICs, 4 network links each with one switch port, 2 servers.
  CHECK(cost->total == doctest::Approx(8 * 1000 + 4 * 100 + 4 * 10 + 4 * 1 + 2 * 5000));
  CHECK(cost->currency == "USD");

  prices.total_override = 123456;
  spec.cost = prices;
  CHECK(cluster_cost(expand_cluster(spec))->total == doctest::Approx(123456));
  spec.cost.reset();
  CHECK_FALSE(cluster_cost(expand_cluster(spec)).has_value());
}
