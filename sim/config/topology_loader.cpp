// Topology files (README.md, Topology files), both forms: the cluster template (nodes:, node:,
// network:) expanded by expand_cluster(), and the explicit form (devices:, links:).
#include <algorithm>
#include <charconv>
#include <filesystem>
#include <limits>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

#include "gradsync/collective/collective.hpp"
#include "gradsync/config/topology_loader.hpp"
#include "gradsync/fabric/fabric_defaults.hpp"
#include "gradsync/fabric/fabric_model.hpp"
#include "name_ranges.hpp"
#include "topology_keys.hpp"
#include "topology_readers.hpp"
#include "yaml_reader.hpp"

namespace gradsync {

namespace {

using namespace config;  // the loader's own readers, schema and YAML helpers

// ---- cluster template -----------------------------------------------------------------

// node.intra.nvlinks: a G x G matrix of NVLink counts (nvidia-smi topo -m's NV#), symmetric
// with a zero diagonal.
std::vector<std::vector<int>> read_nvlink_matrix(const MapReader& intra, int gpus) {
  constexpr int kMaxPairLinks = 18;  // NVLink5: 18 links per GPU
  const auto rows = config::sequence_of(intra.node("nvlinks"), intra.file(), "node.intra.nvlinks");
  if (rows.size() != static_cast<std::size_t>(gpus))
    intra.fail("nvlinks", fmt::format("needs one row per GPU (node.gpus: {}), got {}", gpus,
                                      rows.size()));
  std::vector<std::vector<int>> m;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto cells = config::sequence_of(rows[i], intra.file(),
                                           fmt::format("node.intra.nvlinks row {}", i));
    if (cells.size() != rows.size())
      throw ConfigError(mark_of(rows[i], intra.file()),
                        fmt::format("node.intra.nvlinks row {} needs {} entries, got {}", i,
                                    rows.size(), cells.size()));
    std::vector<int> row;
    for (std::size_t j = 0; j < cells.size(); ++j) {
      const std::string text = cells[j].IsScalar() ? cells[j].Scalar() : std::string();
      int v = -1;
      const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec != std::errc() || ptr != text.data() + text.size() || v < 0 || v > kMaxPairLinks)
        throw ConfigError(mark_of(cells[j], intra.file()),
                          fmt::format("node.intra.nvlinks[{}][{}]: expected a link count 0 … {}, "
                                      "got '{}'", i, j, kMaxPairLinks, text));
      if (i == j && v != 0)
        throw ConfigError(mark_of(cells[j], intra.file()),
                          fmt::format("node.intra.nvlinks[{}][{}]: a GPU has no NVLink to itself "
                                      "(the diagonal is 0), got {}", i, j, v));
      if (j < i && v != m[j][i])
        throw ConfigError(mark_of(cells[j], intra.file()),
                          fmt::format("node.intra.nvlinks[{}][{}] is {} but [{}][{}] is {}: an "
                                      "NVLink joins both GPUs (the matrix is symmetric)",
                                      i, j, v, j, i, m[j][i]));
      row.push_back(v);
    }
    m.push_back(std::move(row));
  }
  bool any = false;
  for (const auto& row : m)
    for (int v : row) any = any || v > 0;
  if (!any) intra.fail("nvlinks", "has no NVLink at all (use fabric: pcie)");
  return m;
}

NodeSpec read_node(const MapReader& top) {
  MapReader r(top.node("node"), top.file(), "node",
              {"gpus", "intra", "sockets", "socket_link", "host_memory", "nics", "nic_bandwidth",
               "pcie"});
  NodeSpec n;
  n.origin = r.mark();
  n.gpus = static_cast<int>(r.integer("gpus", 1, kMaxGpusPerNode));
  {
    MapReader intra(r.node("intra"), r.file(), "node.intra", kLinkGroupKeys);
    const auto fabric = *fabric_from_string(intra.choice("fabric", {"nvlink", "pcie"}));
    n.intra = read_group(intra, fabric);
    const bool has_switch = intra.opt_boolean("switch").value_or(true);
    if (!has_switch && fabric == Fabric::NvLink && n.gpus > kMaxMeshGpus)
      intra.fail("switch", fmt::format("false (a direct NVLink mesh) joins at most {} GPUs, got "
                                       "node.gpus: {}; use switch: true (NVSwitch)",
                                       kMaxMeshGpus, n.gpus));
    n.intra_shape = has_switch ? IntraShape::Switch
                    : fabric == Fabric::NvLink ? IntraShape::Mesh
                                               : IntraShape::RootComplex;
    // p2p: whether the PCIe GPUs exchange data peer to peer (Device::p2p).
    if (const auto p2p = intra.opt_boolean("p2p")) {
      if (fabric != Fabric::Pcie)
        intra.fail("p2p", "applies to fabric: pcie only (NVLink is peer to peer)");
      n.pcie_p2p = *p2p;
    }
    if (intra.has("nvlinks")) {
      if (fabric != Fabric::NvLink || has_switch)
        intra.fail("nvlinks", "applies to fabric: nvlink with switch: false only (a direct "
                              "NVLink mesh)");
      n.nvlinks = read_nvlink_matrix(intra, n.gpus);
    }
    if (intra.has("nvls_efficiency")) {
      if (fabric != Fabric::NvLink || !has_switch)
        intra.fail("nvls_efficiency", "applies to fabric: nvlink with switch: true only (NVLS "
                                      "reduces in the NVSwitch)");
      n.nvls_efficiency = nvls_efficiency_of(intra);
    }
  }
  n.sockets = static_cast<int>(r.opt_integer("sockets", 1, 8).value_or(1));
  if (r.has("socket_link")) {
    MapReader s(r.node("socket_link"), r.file(), "node.socket_link",
                {"bandwidth", "latency", "efficiency"});
    n.socket_link = read_group(s, Fabric::Socket);
  }
  // host_memory: one socket's DRAM, which GPUs on the root complex without P2P stage every
  // byte through (NCCL's SHM transport; no GPUDirect RDMA to the NICs either).
  const bool staged = n.intra_shape == IntraShape::RootComplex && !n.pcie_p2p;
  if (r.has("host_memory")) {
    if (!staged)
      r.fail("host_memory", "applies to intra.fabric: pcie with switch: false and p2p: false "
                            "only (GPUs that stage their traffic in host memory)");
    MapReader m(r.node("host_memory"), r.file(), "node.host_memory",
                {"bandwidth", "latency", "efficiency"});
    n.host_memory = read_group(m, Fabric::Memory, /*latency_required=*/false);
  } else if (staged) {
    r.fail("intra", "p2p: false on the CPU root complex (switch: false) stages GPU traffic in "
                    "host memory: give node.host_memory.bandwidth (one socket's DRAM peak)");
  }
  n.nics = static_cast<int>(r.opt_integer("nics", 0, 1024).value_or(0));
  if (r.has("nic_bandwidth")) n.nic_bandwidth = link_rate(r, "nic_bandwidth");
  if (r.has("pcie")) {
    MapReader p(r.node("pcie"), r.file(), "node.pcie",
                {"bandwidth", "latency", "efficiency", "p2p"});
    n.pcie = read_group(p, Fabric::Pcie);
    // p2p: whether GPUs and NICs exchange data peer to peer through their PCIe switch
    // (GPUDirect RDMA); false sends it up to the CPU and back (NodeSpec::nic_p2p).
    if (const auto p2p = p.opt_boolean("p2p")) {
      if (n.intra.fabric != Fabric::NvLink)
        p.fail("p2p", "applies to NVLink servers only (on PCIe servers node.intra.p2p says "
                      "whether traffic turns at the CPU)");
      if (n.nics == 0) p.fail("p2p", "needs node.nics > 0 (it is the GPU <-> NIC path)");
      n.nic_p2p = *p2p;
    }
  }
  const bool partial_mesh = std::any_of(n.nvlinks.begin(), n.nvlinks.end(), [&](const auto& row) {
    return std::count(row.begin(), row.end(), 0) > 1;  // a zero besides the diagonal
  });
  if (partial_mesh && !n.pcie)
    throw ConfigError(r.mark(), "missing required key 'pcie' in node (node.intra.nvlinks leaves "
                                "GPU pairs without NVLink: they talk over PCIe and the CPUs)");
  if (n.nics > 0 && !r.has("nic_bandwidth"))
    throw ConfigError(r.mark(), "missing required key 'nic_bandwidth' in node (node.nics > 0)");
  if (n.nics > 0 && !n.pcie)
    throw ConfigError(r.mark(), "missing required key 'pcie' in node (the GPU/CPU <-> NIC link; "
                                "node.nics > 0)");
  if (n.sockets > 1 && !n.socket_link)
    throw ConfigError(r.mark(), "missing required key 'socket_link' in node (node.sockets > 1)");
  return n;
}

NetworkSpec read_network(const MapReader& top) {
  MapReader r(top.node("network"), top.file(), "network",
              {"fabric", "shape", "hosts_per_leaf", "oversubscription", "spines", "radix",
               "link_latency", "switch_latency", "efficiency", "roce", "routing", "qps",
               "ecmp_seed", "tcp", "sharp"});
  NetworkSpec net;
  net.origin = r.mark();
  net.fabric = *fabric_from_string(r.choice("fabric", kNetworkFabrics));
  net.shape = *network_shape_from_string(r.choice("shape", kShapes));
  net.hosts_per_leaf = static_cast<int>(r.opt_integer("hosts_per_leaf", 1, kMaxNodes).value_or(0));
  net.oversubscription = r.opt_number("oversubscription").value_or(1.0);
  if (net.oversubscription < 1.0 || net.oversubscription > 64.0)
    r.fail("oversubscription", fmt::format("must be between 1 (non-blocking) and 64, got {}",
                                           net.oversubscription));
  net.spines = static_cast<int>(r.opt_integer("spines", 1, 4096).value_or(0));
  net.radix = static_cast<int>(r.opt_integer("radix", 4, 256).value_or(0));
  if (net.radix % 2 != 0) r.fail("radix", "a fat-tree radix must be even");
  if (net.radix != 0 && net.shape != NetworkShape::FatTree)
    r.fail("radix", "applies to shape: fat-tree only");
  if (net.hosts_per_leaf != 0 && net.shape != NetworkShape::LeafSpine &&
      net.shape != NetworkShape::RailOptimized)
    r.fail("hosts_per_leaf", "applies to shapes leaf-spine and rail-optimized only");
  if (net.shape == NetworkShape::LeafSpine && !r.has("hosts_per_leaf"))
    throw ConfigError(r.mark(), "missing required key 'hosts_per_leaf' in network "
                                "(servers per leaf switch, for shape: leaf-spine)");
  net.link_latency = link_latency(r, "link_latency");
  // A direct cable crosses no switch: switch_latency is optional there (and unused).
  net.switch_latency = net.shape == NetworkShape::Direct && !r.has("switch_latency")
                           ? Seconds(0.0)
                           : link_latency(r, "switch_latency");
  net.efficiency = efficiency_of(r);
  net.routing = read_routing(r);
  net.sharp = r.opt_boolean("sharp").value_or(false);
  if (net.sharp && net.fabric != Fabric::InfiniBand)
    r.fail("sharp", fmt::format("in-network reduction (SHARP) needs fabric: infiniband, not {}",
                                to_string(net.fabric)));
  // `roce:` ("roce only") is accepted and checked on every fabric, so a template keeps it when
  // its fabric is switched (topology_overrides.network.fabric), and takes effect on roce alone.
  if (r.has("roce")) {
    if (net.fabric == Fabric::Efa)
      r.fail("roce", "applies to fabric: roce; EFA's SRD transport has no PFC or ECN to set");
    const RoceOptions roce = read_roce(r, "roce");
    if (net.fabric == Fabric::Roce) net.roce = roce;
  }
  if (r.has("tcp")) {
    const TcpOptions tcp = read_tcp(r, "tcp");
    if (net.fabric != Fabric::Ethernet)
      r.fail("tcp", fmt::format("applies to fabric: ethernet only (this network is {})",
                                to_string(net.fabric)));
    net.tcp = tcp;
  }
  return net;
}

ClusterSpec read_cluster(const MapReader& top, const std::string& default_name) {
  ClusterSpec spec;
  spec.origin = top.mark();
  spec.name = top.opt_string("name").value_or(default_name);
  spec.software = read_software(top);
  spec.gpu = read_gpu(top);
  spec.gpu_model = top.opt_string("gpu").value_or("");
  spec.nccl = read_nccl(top);
  spec.nodes = static_cast<int>(top.integer("nodes", 1, kMaxNodes));
  spec.node = read_node(top);
  if (top.has("network")) spec.network = read_network(top);
  if (spec.nodes > 1 && !spec.network)
    throw ConfigError(top.mark(), "missing required key 'network' (nodes > 1 need a network)");
  if (spec.network && spec.node.nics == 0)
    throw ConfigError(mark_of(top.node("node"), top.file()),
                      "node.nics must be at least 1 when a network: is given");
  if (top.has("cost")) spec.cost = read_cost(top);
  const long long gpus = static_cast<long long>(spec.nodes) * spec.node.gpus;
  if (gpus > kMaxGpus)
    top.fail("nodes", fmt::format("{} nodes x {} GPUs = {} GPUs; gradsync simulates at most "
                                  "{}", spec.nodes, spec.node.gpus, gpus, kMaxGpus));
  const long long nics = static_cast<long long>(spec.nodes) * spec.node.nics;
  if (nics > kMaxNics) {
    const YAML::Node node_map = top.node("node");
    throw ConfigError(mark_of(node_map["nics"], top.file()),
                      fmt::format("node.nics: {} nodes x {} NICs = {} NICs; gradsync simulates "
                                  "at most {}", spec.nodes, spec.node.nics, nics, kMaxNics));
  }
  return spec;
}

// ---- explicit form --------------------------------------------------------------------

Topology read_explicit(const MapReader& top, const std::string& default_name) {
  Topology topo(top.opt_string("name").value_or(default_name));
  topo.set_origin(top.mark());
  topo.set_software(read_software(top));
  topo.set_gpu_generation(read_gpu(top));
  topo.set_gpu_model(top.opt_string("gpu").value_or(""));
  topo.set_nvls_efficiency(nvls_efficiency_of(top));
  topo.set_nccl(read_nccl(top));
  if (top.has("cost")) topo.set_cost(read_cost(top));
  if (top.has("roce")) topo.set_roce(read_roce(top, "roce"));
  if (top.has("tcp")) topo.set_tcp(read_tcp(top, "tcp"));
  topo.set_routing(read_routing(top));

  std::unordered_map<std::string, DeviceId> by_name;
  for (const YAML::Node& item : config::sequence_of(top.node("devices"), top.file(), "devices")) {
    MapReader d(item, top.file(), "device", {"name", "kind", "node", "latency", "p2p", "sharp"});
    const std::string pattern = d.string("name");
    std::vector<config::ExpandedName> names;
    try {
      names = config::expand_name_pattern(pattern,
                                          kMaxExplicitDevices - topo.devices().size());
    } catch (const std::invalid_argument& e) {
      d.fail("name", e.what());
    }
    const auto kind = *device_kind_from_string(d.choice("kind", kDeviceKinds));
    const Seconds latency = d.has("latency") ? link_latency(d, "latency") : Seconds(0.0);
    // p2p (pcie-switch only): false = GPUs under it exchange data through host memory.
    const auto p2p = d.opt_boolean("p2p");
    if (p2p && kind != DeviceKind::PcieSwitch)
      d.fail("p2p", fmt::format("applies to devices of kind pcie-switch only, not {}",
                                to_string(kind)));
    // sharp (switch only): the switch reduces in the network (Device::sharp).
    const auto sharp = d.opt_boolean("sharp");
    if (sharp && kind != DeviceKind::Switch)
      d.fail("sharp", fmt::format("applies to devices of kind switch only, not {}",
                                  to_string(kind)));
    // node: a number, or "$k" = the value of the k-th bracket of the name.
    std::optional<long long> node_fixed;
    std::optional<std::size_t> node_bracket;
    if (d.has("node")) {
      const std::string s = d.string("node");
      if (!s.empty() && s[0] == '$') {
        long long k = 0;
        const auto [ptr, ec] = std::from_chars(s.data() + 1, s.data() + s.size(), k);
        if (ec != std::errc() || ptr != s.data() + s.size() || k < 1 ||
            static_cast<std::size_t>(k) > names.front().indices.size())
          d.fail("node", fmt::format("'{}' names no bracket of '{}' ($1 is the first)", s, pattern));
        node_bracket = static_cast<std::size_t>(k - 1);
      } else {
        node_fixed = d.integer("node", 0, kMaxNodes);
      }
    }
    for (auto& n : names) {
      if (by_name.count(n.name) != 0)
        d.fail("name", fmt::format("device '{}' is declared twice", n.name));
      if (node_bracket && n.indices[*node_bracket] > kMaxNodes)
        d.fail("node", fmt::format("${} gives {} node {}; a node index is at most {}",
                                   *node_bracket + 1, n.name, n.indices[*node_bracket],
                                   kMaxNodes));
      const int node = node_bracket ? static_cast<int>(n.indices[*node_bracket])
                                    : static_cast<int>(node_fixed.value_or(-1));
      Device device{n.name, kind, node, latency, d.mark("name")};
      device.p2p = p2p.value_or(true);
      device.sharp = sharp.value_or(false);
      by_name.emplace(n.name, topo.add_device(std::move(device)));
    }
  }

  std::vector<std::string> all_names;
  auto resolve = [&](const MapReader& l, const YAML::Node& side) {
    if (!side.IsScalar())
      throw ConfigError(mark_of(side, l.file()), "each end of 'between' must be a device name");
    std::vector<config::ExpandedName> names;
    try {
      names = config::expand_name_pattern(side.Scalar(), kMaxExplicitDevices);
    } catch (const std::invalid_argument& e) {
      throw ConfigError(mark_of(side, l.file()), e.what());
    }
    std::vector<DeviceId> ids;
    for (const auto& n : names) {
      const auto it = by_name.find(n.name);
      if (it == by_name.end()) {
        if (all_names.empty())
          for (const auto& dev : topo.devices()) all_names.push_back(dev.name);
        const std::string near = all_names.size() <= 100'000
                                     ? config::closest_match(n.name, all_names) : "";
        throw ConfigError(mark_of(side, l.file()),
                          fmt::format("unknown device '{}'{}", n.name,
                                      near.empty() ? " (declare it under devices:)"
                                                   : fmt::format("; did you mean '{}'?", near)));
      }
      ids.push_back(it->second);
    }
    return ids;
  };

  for (const YAML::Node& item : config::sequence_of(top.node("links"), top.file(), "links")) {
    MapReader l(item, top.file(), "link",
                {"between", "fabric", "bandwidth", "latency", "efficiency", "duplex"});
    const auto ends = config::sequence_of(l.node("between"), l.file(), "link.between");
    if (ends.size() != 2)
      l.fail("between", fmt::format("expected two ends [a, b], got {}", ends.size()));
    const auto left = resolve(l, ends[0]);
    const auto right = resolve(l, ends[1]);
    if (left.size() != right.size() && left.size() != 1 && right.size() != 1)
      l.fail("between", fmt::format("the two ends expand to {} and {} devices; use one device "
                                    "on a side, or equal counts to pair them up",
                                    left.size(), right.size()));
    Link proto;
    proto.fabric = *fabric_from_string(l.choice("fabric", kFabrics));
    proto.bandwidth = link_rate(l, "bandwidth");
    proto.latency = link_latency(l, "latency");
    proto.efficiency = efficiency_of(l).value_or(default_efficiency(proto.fabric));
    proto.duplex = l.opt_choice("duplex", {"full", "half"}).value_or("full") == "half"
                       ? Duplex::Half : Duplex::Full;
    proto.origin = l.mark();
    const std::size_t count = std::max(left.size(), right.size());
    if (topo.links().size() + count > kMaxExplicitLinks)
      l.fail("between", fmt::format("the topology would have more than {} links",
                                    kMaxExplicitLinks));
    for (std::size_t i = 0; i < count; ++i) {
      Link link = proto;
      link.a = left[left.size() == 1 ? 0 : i];
      link.b = right[right.size() == 1 ? 0 : i];
      if (link.a == link.b)
        l.fail("between", fmt::format("links {} to itself", topo.device(link.a).name));
      topo.add_link(link);
    }
  }
  // SHARP is InfiniBand's in-network reduction: a sharp switch reduces what reaches it over
  // InfiniBand only.
  for (DeviceId id = 0; id < topo.devices().size(); ++id) {
    const Device& d = topo.device(id);
    if (!d.sharp) continue;
    for (LinkId l : topo.links_of(id))
      if (topo.link(l).fabric != Fabric::InfiniBand)
        throw ConfigError(d.origin,
                          fmt::format("device.sharp: switch '{}' has a link of fabric {}; in-network "
                                      "reduction (SHARP) needs InfiniBand links only",
                                      d.name, to_string(topo.link(l).fabric)));
  }
  topo.validate();
  return topo;
}

TopologyFile load_from_root(const YAML::Node& root, const std::string& file,
                            const std::filesystem::path& path) {
  if (!root.IsDefined() || root.IsNull())
    throw ConfigError(SourceMark{file, 1, 1},
                      "empty file: expected a topology (README.md, Topology files)");
  if (!root.IsMap())
    throw ConfigError(mark_of(root, file), "a topology file must be a mapping (key: value lines)");
  const bool explicit_form = root["devices"].IsDefined() || root["links"].IsDefined();
  const bool template_form = root["nodes"].IsDefined() || root["node"].IsDefined() ||
                             root["network"].IsDefined();
  const std::string default_name = path.stem().string();
  TopologyFile out;
  out.path = path;
  if (explicit_form && template_form) {
    // Point at the first explicit-form key as written.
    SourceMark at = mark_of(root, file);
    for (auto it = root.begin(); it != root.end(); ++it) {
      const YAML::Node key = it->first;
      if (key.IsScalar() && (key.Scalar() == "devices" || key.Scalar() == "links")) {
        at = mark_of(key, file);
        break;
      }
    }
    throw ConfigError(at,
                      "a topology is either a cluster template (nodes:, node:, network:) or an "
                      "explicit graph (devices:, links:), not both");
  }
  if (explicit_form) {
    MapReader top(root, file, "", kExplicitKeys);
    out.topology = read_explicit(top, default_name);
  } else if (template_form) {
    MapReader top(root, file, "", kTemplateKeys);
    out.cluster = read_cluster(top, default_name);
    out.topology = expand_cluster(*out.cluster);
  } else {
    // Neither form: check the keys anyway so a typo ("node s:") gets its suggestion.
    std::vector<std::string> all = kTemplateKeys;
    all.insert(all.end(), kExplicitKeys.begin(), kExplicitKeys.end());
    MapReader top(root, file, "", all);
    throw ConfigError(top.mark(), "expected a cluster template (nodes:, node:) or an explicit "
                                  "graph (devices:, links:)");
  }
  return out;
}

}  // namespace

TopologyFile load_topology_file(const std::filesystem::path& path) {
  const std::string file = path.string();
  const YAML::Node root = config::load_yaml_file(file);
  return load_from_root(root, file, path);
}

TopologyFile load_topology_text(const std::string& text, const std::string& display_name) {
  const YAML::Node root = config::parse_yaml(text, display_name);
  return load_from_root(root, display_name, std::filesystem::path(display_name));
}

}  // namespace gradsync
