// A link group with efficiency 1 and 1 µs per link, for unit tests whose expected figures are
// worked out by hand from line rates (NCCL's view of a topology, ring packing). Shared by the
// model tests that build cluster templates in code.
#pragma once

#include <string>

#include "gradsync/topology/cluster_spec.hpp"
#include "gradsync/units/units.hpp"

inline gradsync::LinkGroupSpec exact_link_group(gradsync::Fabric fabric,
                                                gradsync::BytesPerSecond bandwidth,
                                                const std::string& file = "cluster.yaml") {
  gradsync::LinkGroupSpec g;
  g.fabric = fabric;
  g.bandwidth = bandwidth;
  g.latency = gradsync::Seconds(1e-6);
  g.efficiency = 1.0;  // effective bandwidth = line rate: the arithmetic stays exact
  g.origin = gradsync::SourceMark{file, 4, 3};
  return g;
}
