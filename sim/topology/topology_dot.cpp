// to_dot(): the topology as GraphViz text (`gradsync topo --dot FILE`; render with
// `dot -Tsvg FILE -o topology.svg`). One `subgraph cluster_nodeN` per server, a shape per
// device kind, every link an undirected edge labelled "fabric bandwidth" (line rate per
// direction); half-duplex links are dashed.
#include <iterator>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "gradsync/topology/topology_summary.hpp"

namespace gradsync {
namespace {

// A dot quoted string (IDs and labels): backslashes and quotes escaped.
std::string quoted(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  out += '"';
  return out;
}

std::string_view node_attributes(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::Gpu: return R"(shape=box, style=filled, fillcolor="#c6e5b3")";
    case DeviceKind::NvSwitch: return R"(shape=diamond, style=filled, fillcolor="#f6d8a8")";
    case DeviceKind::PcieSwitch: return R"(shape=hexagon, style=filled, fillcolor="#e3e3e3")";
    case DeviceKind::Cpu: return R"(shape=box3d, style=filled, fillcolor="#d5d0ee")";
    case DeviceKind::Nic: return R"(shape=ellipse, style=filled, fillcolor="#bfdaf2")";
    case DeviceKind::Switch: return R"(shape=octagon, style=filled, fillcolor="#f2c0c0")";
  }
  return "shape=box";
}

void append_device(std::string& out, const Device& device, std::string_view indent) {
  fmt::format_to(std::back_inserter(out), "{}{} [{}];\n", indent, quoted(device.name),
                 node_attributes(device.kind));
}

}  // namespace

std::string to_dot(const Topology& topology) {
  std::string out;
  const auto add = std::back_inserter(out);
  fmt::format_to(add, "graph {} {{\n", quoted(topology.name()));
  fmt::format_to(add, "  label={};\n  labelloc=t;\n", quoted(topology.name()));
  out += "  node [fontname=\"Helvetica\", fontsize=10];\n";
  out += "  edge [fontname=\"Helvetica\", fontsize=8];\n";

  std::map<int, std::vector<DeviceId>> servers;  // node index -> its devices, in id order
  for (DeviceId d = 0; d < topology.devices().size(); ++d) {
    const Device& device = topology.device(d);
    if (device.node >= 0) {
      servers[device.node].push_back(d);
    } else {
      append_device(out, device, "  ");
    }
  }
  for (const auto& [node, members] : servers) {
    fmt::format_to(add, "  subgraph cluster_node{} {{\n    label=\"node {}\";\n", node, node);
    for (const DeviceId d : members) append_device(out, topology.device(d), "    ");
    out += "  }\n";
  }

  for (const Link& link : topology.links()) {
    const std::string label =
        fmt::format("{} {}", to_string(link.fabric), format_rate(link.bandwidth));
    fmt::format_to(add, "  {} -- {} [label={}{}];\n", quoted(topology.device(link.a).name),
                   quoted(topology.device(link.b).name), quoted(label),
                   link.duplex == Duplex::Half ? ", style=dashed" : "");
  }
  out += "}\n";
  return out;
}

}  // namespace gradsync
