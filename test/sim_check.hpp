// What the engine checks that run as `NAME TOPOLOGY.yaml [--cfg=...]` share: reading their
// arguments and comparing times.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "gradsync/config.hpp"

namespace gradsync::sim_check {

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
