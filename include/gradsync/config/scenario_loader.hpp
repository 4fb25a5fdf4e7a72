// Loading scenario files (README.md, Scenario files). Part of the config layer (the only
// yaml-cpp user): what it returns is plain structs. Every problem is a ConfigError
// "file:line:col: error: ...".
//
// Overrides are applied to the YAML before it is read, so their values are checked exactly
// like values written in the file:
//   - `sets` ("dotted.key=value", the CLI's --set) edit the scenario; a key under
//     `topology_overrides.` adds a topology override instead. A problem with a --set value is
//     reported at "--set KEY=VALUE" (no line: it is not in a file).
//   - `topology_overrides:` in the scenario ({nodes: 2, network.fabric: roce}; nested mappings
//     are dotted paths too), then the --set ones, edit the topology before it is expanded.
//     Keys the topology file does not write are added. A problem in an override's value is
//     reported where the override was written; other topology errors keep their position in
//     the topology file, and say which overrides were applied.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "gradsync/config/topology_loader.hpp"
#include "gradsync/scenario/scenario.hpp"

namespace gradsync {

struct LoadedScenario {
  Scenario scenario;
  TopologyFile topology;  // loaded with the overrides applied (and sync.ps.hosts added)
  // sync.ps.hosts: the servers' CPU devices added to topology.topology (server_hosts.hpp).
  std::vector<DeviceId> server_hosts;
};

[[nodiscard]] LoadedScenario load_scenario_file(const std::filesystem::path& path,
                                                const std::vector<std::string>& sets = {});
// The same, from text; `display_name` is used in messages and a relative `topology:` path is
// resolved against its folder.
[[nodiscard]] LoadedScenario load_scenario_text(const std::string& text,
                                                const std::string& display_name,
                                                const std::vector<std::string>& sets = {});
// A topology file with `sets` ("node.nic_bandwidth=100Gbps", "nodes=4"; a leading
// "topology_overrides." is accepted) applied to its text before it is read, as a scenario's
// topology_overrides are: an error inside a set's value names that --set.
[[nodiscard]] TopologyFile load_topology_file(const std::filesystem::path& path,
                                              const std::vector<std::string>& sets);

}  // namespace gradsync
