// What the engine checks that run as `NAME TOPOLOGY.yaml [--cfg=...]` share: reading their
// arguments and comparing times; the ideal star the closed-form checks run on.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "gradsync/config/topology_loader.hpp"

namespace gradsync::sim_check {

// The closed forms' cluster: every GPU on one switch, efficiency 1, zero switch latency, no
// software model; each GPU's link of `link_bandwidth` (B/s per direction) and `link_latency`
// (s; a GPU -> GPU hop crosses two links).
inline Topology ideal_star(std::uint32_t n, double link_bandwidth, double link_latency) {
  Topology t("ideal-star");
  t.set_software(SoftwareModel::None);
  const DeviceId sw = t.add_device(Device{"sw", DeviceKind::Switch, -1, Seconds(0.0), {}});
  for (std::uint32_t i = 0; i < n; ++i) {
    const DeviceId g = t.add_device(
        Device{"gpu" + std::to_string(i), DeviceKind::Gpu, static_cast<int>(i), Seconds(0.0), {}});
    t.add_link(Link{g, sw, Fabric::InfiniBand, BytesPerSecond(link_bandwidth),
                    Seconds(link_latency), 1.0, Duplex::Full, {}});
  }
  return t;
}

struct Input {
  TopologyFile file;
  std::vector<std::string> simgrid_args;  // the arguments after the topology
};

// The topology and SimGrid options, or nullopt after printing the usage line.
inline std::optional<Input> read_input(int argc, char** argv, const char* name) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s TOPOLOGY.yaml [--cfg=...]\n", name);
    return std::nullopt;
  }
  Input in{load_topology_file(argv[1]), {}};
  for (int i = 2; i < argc; ++i) in.simgrid_args.emplace_back(argv[i]);
  return in;
}

inline bool same(double a, double b, double tolerance) {
  return std::abs(a - b) <= tolerance * std::max(std::abs(a), std::abs(b));
}

}  // namespace gradsync::sim_check
