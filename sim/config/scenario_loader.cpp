// Scenario files (README.md, Scenario files): the model (a preset or an explicit layer list),
// compute, training loop and synchronization, plus the topology they run on (a file relative to the
// scenario, or an inline mapping).
//
// Overrides (--set on the scenario, topology_overrides on the topology) are applied to the YAML
// *text* before it is read (yaml_patch.hpp), so a bad override value is reported where the
// override was written ("--set sync.bucket=5B: error: ...") and every other error keeps its
// file:line:col. The schema is scenario_keys.hpp; the sections are read by scenario_model.cpp
// (model, compute) and scenario_sync.cpp (training, sync, parallel); this file checks the
// --set keys, resolves the topology with its overrides and puts the scenario together.
#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "gradsync/config/topology_loader.hpp"
#include "gradsync/scenario/parallel_layout.hpp"
#include "gradsync/collective/rank_placement.hpp"
#include "gradsync/config/scenario_loader.hpp"
#include "gradsync/topology/server_hosts.hpp"
#include "gradsync/scenario/step_schedule.hpp"
#include "scenario_keys.hpp"
#include "scenario_model.hpp"
#include "scenario_sync.hpp"
#include "yaml_patch.hpp"
#include "yaml_reader.hpp"

namespace gradsync {

namespace config {
namespace {

namespace fs = std::filesystem;

// The scenario's --set keys must name scenario keys: an unknown one is reported at the --set,
// with the closest valid key.
void check_set_path(const Override& o) {
  std::string schema;  // "model.layers.#" for any list entry
  std::string shown;   // "model.layers.3"
  for (std::size_t d = 0; d < o.path.size(); ++d) {
    const std::vector<std::string>* keys = scenario_keys_at(schema);
    if (keys == nullptr) return;
    const std::string& key = o.path[d];
    if (std::find(keys->begin(), keys->end(), key) == keys->end()) {
      const std::string near = config::closest_match(key, *keys);
      const std::string where = shown.empty() ? "at top level" : "in " + shown;
      throw ConfigError(
          o.origin,
          near.empty()
              ? fmt::format("unknown key '{}' {} (valid keys: {})", key, where, join(*keys, ", "))
              : fmt::format("unknown key '{}' {}; did you mean '{}'?", key, where, near));
    }
    schema += (schema.empty() ? "" : ".") + key;
    shown += (shown.empty() ? "" : ".") + key;
    if ((schema == "model.layers" || schema == "sync.buckets") && d + 1 < o.path.size()) {
      schema += ".#";
      shown += "." + o.path[++d];
    }
  }
}

// topology_overrides: {nodes: 2, network.fabric: roce, node: {nics: 4}} → dotted overrides,
// each reported at its value in the scenario file (or the --set that wrote it).
void flatten_overrides(const YAML::Node& node, const std::string& file,
                       std::vector<std::string> prefix, std::vector<Override>& out) {
  for (auto it = node.begin(); it != node.end(); ++it) {
    const YAML::Node key = it->first;
    const YAML::Node value = it->second;
    if (!key.IsScalar()) throw ConfigError(mark_of(key, file), "keys must be plain words");
    std::vector<std::string> path = prefix;
    const std::string& k = key.Scalar();
    std::size_t start = 0;
    while (true) {
      const std::size_t dot = k.find('.', start);
      path.push_back(k.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
      if (path.back().empty())
        throw ConfigError(
            mark_of(key, file),
            fmt::format("topology_overrides: '{}' has an empty part between dots", k));
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    if (value.IsMap()) {
      flatten_overrides(value, file, path, out);
      continue;
    }
    if (!value.IsScalar())
      throw ConfigError(
          mark_of(value.IsNull() ? key : value, file),
          fmt::format("topology_overrides: {} needs a single value", join(path, ".")));
    Override o;
    o.path = path;
    o.value = value.Scalar();
    // In the coordinates of the (possibly --set-patched) scenario text: an error there passes
    // through the scenario's patch too, which maps it to the file or to the --set.
    o.origin = mark_of(value, file);
    o.label = join(path, ".") + "=" + value.Scalar();
    out.push_back(std::move(o));
  }
}

// The inline topology mapping alone, at the same offsets as in the scenario text: everything
// before it becomes spaces (newlines kept), everything from the next top-level key on is cut.
std::string inline_topology_text(const std::string& text, const YAML::Node& root,
                                 const YAML::Node& topology) {
  const auto begin = static_cast<std::size_t>(topology.Mark().pos);
  std::size_t end = text.size();
  for (auto it = root.begin(); it != root.end(); ++it) {
    const auto pos = static_cast<std::size_t>(it->first.Mark().pos);
    if (pos > begin) end = std::min(end, pos);
  }
  std::string out = text.substr(0, end);
  for (std::size_t i = 0; i < begin && i < out.size(); ++i)
    if (out[i] != '\n' && out[i] != '\r') out[i] = ' ';
  return out;
}

LoadedScenario parse_scenario(const std::string& text, const std::string& file,
                              const std::vector<std::string>& sets) {
  // Split the --set overrides: topology_overrides.* go to the topology.
  std::vector<Override> scenario_sets, topology_sets;
  for (const std::string& s : sets) {
    Override o = parse_set(s);
    if (o.path.front() == "topology_overrides") {
      if (o.path.size() == 1)
        throw ConfigError(o.origin, "name the topology key: --set topology_overrides.nodes=2");
      o.path.erase(o.path.begin());
      o.label = join(o.path, ".") + "=" + o.value;
      topology_sets.push_back(std::move(o));
    } else {
      check_set_path(o);
      scenario_sets.push_back(std::move(o));
    }
  }

  const TextPatch scenario_patch(text, file, scenario_sets, "");
  return scenario_patch.guard([&] {
    const YAML::Node root = config::parse_yaml(scenario_patch.text(), file);
    if (!root.IsDefined() || root.IsNull())
      throw ConfigError(SourceMark{file, 1, 1},
                        "empty file: expected a scenario (README.md, Scenario files)");
    MapReader top(root, file, "", kTopKeys);

    LoadedScenario out;
    Scenario& sc = out.scenario;
    sc.file = file;
    sc.sets = sets;
    sc.name = top.opt_string("name").value_or(fs::path(file).stem().string());

    ComputeDraft compute = read_compute(top);
    sc.model = read_model(top, compute);
    sc.compute = compute.spec;
    if (compute.from_flops()) compute.forward = Seconds(1.0), compute.backward = Seconds(2.0);
    sc.compute.forward = *compute.forward;
    sc.compute.backward = *compute.backward;
    if (!((sc.compute.forward + sc.compute.backward).seconds() > 0.0))
      throw ConfigError(MapReader(top.node("compute"), file, "compute", kComputeKeys).mark(),
                        "compute: forward + backward must be positive");
    sc.training = read_training(top);
    sc.sync = read_sync(top);
    const bool data_from_set = std::any_of(sets.begin(), sets.end(), [](const std::string& s) {
      return s.rfind("parallel.data=", 0) == 0;
    });
    sc.parallel = read_parallel(top, data_from_set, sc.notes);
    if (top.has("memory")) {
      const Bytes mem = top.size("memory");
      if (!(mem.bytes() > 0.0) || mem.bytes() > kMaxGpuMemoryBytes)
        top.fail("memory", fmt::format("must be positive and at most 16 TiB per GPU, got {}",
                                       format_size(mem)));
      sc.memory = mem;
    }
    const auto gpus = top.opt_integer("gpus", 1, kMaxScenarioGpus);
    if (gpus) sc.gpus = static_cast<std::uint32_t>(*gpus);

    // Topology overrides: the file's, then the --set ones (later ones win).
    std::vector<Override> topology_overrides;
    if (top.has("topology_overrides")) {
      const YAML::Node node = top.node("topology_overrides");
      if (!node.IsMap())
        throw ConfigError(mark_of(node, file),
                          "topology_overrides must be a mapping of topology keys, e.g. {nodes: 2}");
      flatten_overrides(node, file, {}, topology_overrides);
    }
    for (auto& o : topology_sets) topology_overrides.push_back(o);
    for (const auto& o : topology_overrides) sc.topology_overrides.push_back(o.label);

    const YAML::Node topology = top.node("topology");
    if (topology.IsScalar()) {
      fs::path path(topology.Scalar());
      if (path.is_relative()) path = fs::path(file).parent_path() / path;
      path = path.lexically_normal();
      std::error_code ec;
      if (!fs::is_regular_file(path, ec))
        top.fail("topology",
                 fmt::format("cannot open '{}' (looked for {})", topology.Scalar(), path.string()));
      sc.topology.path = path;
      const std::string topo_file = path.string();
      std::string topo_text;
      (void)config::load_yaml_file(topo_file, &topo_text);
      const TextPatch patch(topo_text, topo_file, topology_overrides,
                            fmt::format("in topology {}: ", topo_file));
      out.topology = patch.guard([&] { return load_topology_text(patch.text(), topo_file); });
    } else if (topology.IsMap()) {
      sc.topology.path = file;
      sc.topology.inline_mapping = true;
      const TextPatch patch(inline_topology_text(scenario_patch.text(), root, topology), file,
                            topology_overrides, "in the inline topology: ");
      out.topology = patch.guard([&] { return load_topology_text(patch.text(), file); });
    } else {
      top.fail("topology", "expected a topology file path or an inline topology mapping");
    }
    out.topology.path = sc.topology.path;

    if (compute.from_flops()) derive_compute(top, compute, out.topology.topology, sc);
    const auto available = static_cast<std::uint32_t>(out.topology.topology.gpu_count());
    if (sc.gpus && *sc.gpus > available)
      top.fail("gpus",
               fmt::format("the topology {} has {} GPUs", out.topology.topology.name(), available));
    const std::uint32_t used = sc.gpus.value_or(available);
    check_parallel(top, sc, used, out.topology.topology);
    // A --set of DDP's bucket rule on a scenario with explicit buckets (an imported trace) is
    // a what-if of bucket sizes: the file's buckets are set aside, its layers are bucketed.
    const bool rule_from_set = std::any_of(sets.begin(), sets.end(), [](const std::string& s) {
      return s.rfind("sync.bucket=", 0) == 0 || s.rfind("sync.first_bucket=", 0) == 0;
    });
    if (rule_from_set && !sc.sync.buckets.empty()) {
      sc.sync.buckets.clear();
      sc.notes.push_back(fmt::format("sync.buckets of {} set aside: --set sync.bucket makes DDP's "
                                     "rule bucket the layers' tensors", file));
    }
    check_explicit_buckets(top, sc);
    // The algorithms that reduce in a switch (the registry's InSwitch rows, spelled as in
    // sync.algorithm): NVLS needs one NVSwitch domain of NVLink4 or later (nvls_switch()), or one
    // per server and SHARP switches between them (nvls_sharp_devices()); NVLSTree one such
    // domain per server, two servers or more (nvls_tree_devices()); CollNet two servers or more
    // whose GPU-l NICs share a SHARP switch (collnet_devices()), CollNetDirect NVSwitch servers
    // too, with one data-parallel group. All under NCCL.
    const std::optional<Algorithm> in_switch = algorithm_from_string(to_string(sc.sync.algorithm));
    if (sc.sync.strategy == SyncStrategy::AllReduce && in_switch &&
        algorithm_info(*in_switch).in_auto == AutoUse::InSwitch) {
      const bool collnet =
          *in_switch == Algorithm::CollNetChain || *in_switch == Algorithm::CollNetDirect;
      const std::string name(to_string(sc.sync.algorithm));
      const MapReader s(top.node("sync"), file, "sync", kSyncKeys);
      const Topology& topo = out.topology.topology;
      if (topo.software() != SoftwareModel::Nccl)
        s.fail("algorithm", name + " is NCCL's algorithm, and the topology has software: none");
      if (used < 2) s.fail("algorithm", name + " needs 2 GPUs or more");
      if (collnet && !sc.parallel.plain())
        s.fail("algorithm", name + " runs with plain data parallelism (parallel: of one "
                                   "data-parallel group)");
      try {
        const std::vector<DeviceId> placed = place_ranks(topo, used);
        (void)in_switch_devices(topo, placed, ranks_per_node(topo, placed), *in_switch);
      } catch (const ConfigError& e) {
        std::string why = e.what();  // "topology.yaml:L:C: error: why"
        if (const auto at = why.find("error: "); at != std::string::npos) why.erase(0, at + 7);
        s.fail("algorithm", name + " cannot run on these GPUs: " + why);
      }
    }
    if (sc.sync.strategy != SyncStrategy::AllReduce && sc.sync.ps.hosts) {
      if (!sc.parallel.plain())
        throw ConfigError(sc.sync.ps.hosts->origin,
                          "sync.ps.hosts: parameter servers run with plain data parallelism "
                          "(parallel: of one data-parallel group)");
      out.server_hosts = add_server_hosts(out.topology.topology, sc.sync.ps.hosts->count,
                                          sc.sync.ps.hosts->nic_bandwidth,
                                          sc.sync.ps.hosts->origin);
    }
    if (sc.sync.strategy != SyncStrategy::AllReduce) {
      const MapReader s(top.node("sync"), file, "sync", kSyncKeys);
      const bool dedicated = sc.sync.ps.placement == PsPlacement::Dedicated;
      if (data_parallel_ranks(used, sc.sync) == 0 || (!dedicated && sc.sync.ps.servers > used)) {
        const std::string msg =
            dedicated ? fmt::format(
                            "{} dedicated servers leave no worker among the {} GPUs "
                            "(the last {} GPUs serve, the others train)",
                            sc.sync.ps.servers, used, sc.sync.ps.servers)
                      : fmt::format("{} colocated servers need at least as many GPUs, got {}",
                                    sc.sync.ps.servers, used);
        if (s.has("ps")) MapReader(s.node("ps"), file, "sync.ps", kPsKeys).fail("servers", msg);
        throw ConfigError(s.mark(), "sync: " + msg);
      }
    }
    return out;
  });
}

}  // namespace
}  // namespace config

TopologyFile load_topology_file(const std::filesystem::path& path,
                                const std::vector<std::string>& sets) {
  if (sets.empty()) return load_topology_file(path);
  std::vector<config::Override> overrides;
  for (const std::string& text : sets) {
    config::Override o = config::parse_set(text);
    if (o.path.size() > 1 && o.path.front() == "topology_overrides") o.path.erase(o.path.begin());
    overrides.push_back(std::move(o));
  }
  const std::string file = path.string();
  std::string text;
  (void)config::load_yaml_file(file, &text);
  const config::TextPatch patch(text, file, overrides, fmt::format("in topology {}: ", file));
  TopologyFile out = patch.guard([&] { return load_topology_text(patch.text(), file); });
  out.path = path;
  return out;
}

LoadedScenario load_scenario_file(const std::filesystem::path& path,
                                  const std::vector<std::string>& sets) {
  const std::string file = path.string();
  std::string text;
  (void)config::load_yaml_file(file, &text);
  return config::parse_scenario(text, file, sets);
}

LoadedScenario load_scenario_text(const std::string& text, const std::string& display_name,
                                  const std::vector<std::string>& sets) {
  return config::parse_scenario(text, display_name, sets);
}

}  // namespace gradsync
