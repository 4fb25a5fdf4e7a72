// Loading YAML inputs. This is the only part of gradsync that sees yaml-cpp: everything it
// returns is plain structs from the model headers. Every problem is a ConfigError whose
// message reads "file:line:col: error: ..." (1-based).
#pragma once

#include <filesystem>
#include <string>
#include <variant>

#include "gradsync/topology/cluster_spec.hpp"
#include "gradsync/topology/topology.hpp"

namespace gradsync {

// A topology file as written: the cluster template or the explicit device/link form.
struct TopologyFile {
  std::filesystem::path path;
  std::optional<ClusterSpec> cluster;  // set for the template form
  Topology topology;                   // the expanded, validated graph (both forms)
};

// Parses and validates a topology file (either form of README.md, Topology files).
[[nodiscard]] TopologyFile load_topology_file(const std::filesystem::path& path);
// The same, from text; `display_name` is used in error messages.
[[nodiscard]] TopologyFile load_topology_text(const std::string& text,
                                              const std::string& display_name);

}  // namespace gradsync
