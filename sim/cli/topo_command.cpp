// `gradsync topo TOPOLOGY [--dot OUT] [--json]`: load a topology file, print its summary
// (counts, per-GPU bandwidths, bisection, oversubscription, diameter) as text or as one JSON
// object, and optionally write it as GraphViz dot (OUT, or stdout for `-`).
#include <iostream>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "gradsync/io/command_files.hpp"
#include "gradsync/config/topology_loader.hpp"
#include "gradsync/units/config_error.hpp"
#include "gradsync/topology/topology_summary.hpp"

namespace gradsync::cli {
namespace {

struct TopoOptions {
  std::string file;
  std::string dot;  // empty: no dot output; "-": stdout
  bool json = false;
};

double gigabytes_per_second(BytesPerSecond rate) { return rate.gigabytes_per_second(); }

// The summary's fields, snake_case keys with the unit in the name (README.md, Commands).
nlohmann::ordered_json summary_json(const TopologySummary& s) {
  nlohmann::ordered_json devices = nlohmann::ordered_json::object();
  for (const auto& [kind, count] : s.devices) devices[std::string(to_string(kind))] = count;
  nlohmann::ordered_json links = nlohmann::ordered_json::object();
  for (const auto& [fabric, group] : s.links) {
    links[std::string(to_string(fabric))] = {
        {"count", group.count},
        {"total_bandwidth_GBps", gigabytes_per_second(group.total_bandwidth)}};
  }
  return {
      {"name", s.name},
      {"gpus", s.gpus},
      {"gpu_generation", std::string(to_string(s.gpu_generation))},
      {"gpu_generation_inferred", s.gpu_generation_inferred},
      {"gpu_model", s.gpu_model},
      {"nodes", s.nodes},
      {"devices", devices},
      {"links", links},
      {"gpu_port_bandwidth_GBps", gigabytes_per_second(s.gpu_port_bandwidth)},
      {"gpu_network_bandwidth_GBps", gigabytes_per_second(s.gpu_network_bandwidth)},
      {"bisection_bandwidth_GBps", gigabytes_per_second(s.bisection_bandwidth)},
      {"oversubscription", s.oversubscription},
      {"diameter_hops", s.diameter_hops},
      {"rail_nics_per_gpu", {{"min", s.rail_nics_min}, {"max", s.rail_nics_max}}},
      {"gpus_per_nic_max", s.gpus_per_nic_max},
      {"sharp_switches", s.sharp_switches},
      {"shared_uplinks", s.shared_uplinks},
      {"nvlink_mesh", s.mesh_gpus == 0
                          ? nlohmann::ordered_json(nullptr)
                          : nlohmann::ordered_json{{"gpus", s.mesh_gpus},
                                           {"peers_per_gpu", {{"min", s.mesh_peers_min},
                                                              {"max", s.mesh_peers_max}}},
                                           {"ring_share", s.mesh_ring_share}}},
  };
}

void write_dot(const std::string& out_path, const std::string& dot) {
  if (out_path == "-") {
    std::cout << dot;
    return;
  }
  write_output_file(out_path, dot);  // EnvironmentError (exit 1) when it cannot
}

void run_topo(const TopoOptions& options) {
  if (options.json && options.dot == "-") {
    throw CLI::ValidationError("--dot -", "stdout carries the --json document; give a file");
  }
  // A missing or unreadable file is a ConfigError from the loader: "FILE: error: cannot open".
  const TopologyFile loaded = load_topology_file(options.file);
  const TopologySummary summary = summarize(loaded.topology);
  if (!options.dot.empty()) write_dot(options.dot, to_dot(loaded.topology));
  if (options.json) {
    std::cout << summary_json(summary).dump(2) << '\n';
  } else if (options.dot != "-") {  // with `--dot -`, stdout holds the dot text alone
    std::cout << format_summary(summary);
  }
}

}  // namespace

void add_topo_command(CLI::App& app) {
  auto options = std::make_shared<TopoOptions>();
  CLI::App* topo = app.add_subcommand(
      "topo", "Summarize a topology: devices, links, per-GPU and bisection bandwidth, "
              "oversubscription, diameter");
  topo->add_option("TOPOLOGY", options->file, "topology YAML file (README.md, Topology files)")
      ->required();
  topo->add_option("--dot", options->dot,
                   "also write the graph as GraphViz dot to FILE ('-': stdout, instead of "
                   "the summary)")
      ->type_name("FILE");
  topo->add_flag("--json", options->json, "print the summary as one JSON object");
  topo->callback([options] { run_topo(*options); });
}

}  // namespace gradsync::cli
