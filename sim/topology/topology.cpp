// Topology: devices and links with stable ids, name spellings, and validation.
#include "gradsync/topology/topology.hpp"

#include "gradsync/topology/fabric_registry.hpp"
#include "gradsync/units/name_table.hpp"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/connected_components.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

namespace gradsync {

namespace {

constexpr std::array<std::pair<DeviceKind, std::string_view>, 6> kDeviceKindNames{{
    {DeviceKind::Gpu, "gpu"},
    {DeviceKind::NvSwitch, "nvswitch"},
    {DeviceKind::PcieSwitch, "pcie-switch"},
    {DeviceKind::Cpu, "cpu"},
    {DeviceKind::Nic, "nic"},
    {DeviceKind::Switch, "switch"},
}};

constexpr std::array<std::pair<SoftwareModel, std::string_view>, 2> kSoftwareNames{{
    {SoftwareModel::Nccl, "nccl"},
    {SoftwareModel::None, "none"},
}};

constexpr std::array<std::pair<GpuGeneration, std::string_view>, 4> kGenerationNames{{
    {GpuGeneration::Volta, "volta"},
    {GpuGeneration::Ampere, "ampere"},
    {GpuGeneration::Hopper, "hopper"},
    {GpuGeneration::Blackwell, "blackwell"},
}};

// GPU models by compute capability, which is what NCCL's tables index (major 7, 8, 9, 10+;
// NVIDIA datasheets): V100 sm_70; A100/A800 sm_80, A10/A40 sm_86, L4/L40/L40S/RTX 4090 sm_89
// (Ada, NCCL's sm_8x row); H100/H800/H200/GH200 sm_90; B100/B200/GB200 sm_100, B300/GB300
// sm_103.
// NCCL indexes its tables by compute capability: < 8.0 (Volta, and Turing's 7.5), 8.x (Ampere and
// Ada), 9.x (Hopper), >= 10.0 (Blackwell: sm_100 data-center parts, sm_120 GeForce/RTX Pro and
// sm_121 GB10 alike), src/graph/tuning.cc compCapIndex.
constexpr std::array<std::pair<GpuGeneration, std::string_view>, 33> kGpuModels{{
    {GpuGeneration::Volta, "v100"},       {GpuGeneration::Volta, "t4"},
    {GpuGeneration::Volta, "rtx2080ti"},  {GpuGeneration::Volta, "titan-rtx"},
    {GpuGeneration::Ampere, "a100"},      {GpuGeneration::Ampere, "a800"},
    {GpuGeneration::Ampere, "a30"},       {GpuGeneration::Ampere, "a10"},
    {GpuGeneration::Ampere, "a40"},       {GpuGeneration::Ampere, "a6000"},
    {GpuGeneration::Ampere, "rtx3090"},   {GpuGeneration::Ampere, "l4"},
    {GpuGeneration::Ampere, "l40"},       {GpuGeneration::Ampere, "l40s"},
    {GpuGeneration::Ampere, "rtx4090"},   {GpuGeneration::Hopper, "h100"},
    {GpuGeneration::Hopper, "h800"},      {GpuGeneration::Hopper, "h20"},
    {GpuGeneration::Hopper, "h200"},      {GpuGeneration::Hopper, "gh200"},
    {GpuGeneration::Blackwell, "b100"},   {GpuGeneration::Blackwell, "b200"},
    {GpuGeneration::Blackwell, "gb200"},  {GpuGeneration::Blackwell, "b300"},
    {GpuGeneration::Blackwell, "gb300"},  {GpuGeneration::Blackwell, "rtx5090"},
    {GpuGeneration::Blackwell, "rtx-pro-6000"}, {GpuGeneration::Blackwell, "gb10"},
    {GpuGeneration::Volta, "volta"},      {GpuGeneration::Volta, "turing"},
    {GpuGeneration::Ampere, "ampere"},    {GpuGeneration::Hopper, "hopper"},
    {GpuGeneration::Blackwell, "blackwell"},
}};

}  // namespace

std::string_view to_string(DeviceKind kind) { return name_in(kDeviceKindNames, kind); }
std::string_view to_string(Fabric fabric) { return fabric_info(fabric).name; }
std::string_view to_string(SoftwareModel software) { return name_in(kSoftwareNames, software); }
std::optional<DeviceKind> device_kind_from_string(std::string_view text) {
  return value_in(kDeviceKindNames, text);
}
std::optional<Fabric> fabric_from_string(std::string_view text) {
  for (const FabricInfo& f : fabric_registry())
    if (f.name == text) return f.fabric;
  return std::nullopt;
}
std::optional<SoftwareModel> software_from_string(std::string_view text) {
  return value_in(kSoftwareNames, text);
}
std::vector<std::string> device_kind_names() { return names_in(kDeviceKindNames); }
std::vector<std::string> fabric_names(bool network_only) {
  std::vector<std::string> out;
  for (const FabricInfo& f : fabric_registry())
    if (!network_only || f.network) out.emplace_back(f.name);
  return out;
}
std::vector<std::string> software_names() { return names_in(kSoftwareNames); }
std::string_view to_string(GpuGeneration generation) {
  return name_in(kGenerationNames, generation);
}
std::optional<GpuGeneration> gpu_generation_from_string(std::string_view text) {
  return value_in(kGpuModels, text);
}
const std::vector<std::string>& gpu_model_names() {
  static const std::vector<std::string> names = names_in(kGpuModels);
  return names;
}
std::pair<GpuGeneration, bool> gpu_generation_of(const Topology& topology) {
  if (topology.gpu_generation()) return {*topology.gpu_generation(), false};
  double nvlink = 0.0;
  if (!topology.gpus().empty())
    for (LinkId id : topology.links_of(topology.gpus().front()))
      if (topology.link(id).fabric == Fabric::NvLink)
        nvlink += topology.link(id).bandwidth.bytes_per_second();
  constexpr double kTolerance = 1.0 - 1e-9;
  if (nvlink >= 900e9 * kTolerance) return {GpuGeneration::Blackwell, true};
  if (nvlink >= 450e9 * kTolerance || nvlink == 0.0) return {GpuGeneration::Hopper, true};
  if (nvlink >= 300e9 * kTolerance) return {GpuGeneration::Ampere, true};
  return {GpuGeneration::Volta, true};
}

bool is_network_fabric(Fabric fabric) { return fabric_info(fabric).network; }

DeviceId Topology::add_device(Device device) {
  const DeviceId id = devices_.size();
  if (device.kind == DeviceKind::Gpu) gpus_.push_back(id);
  devices_.push_back(std::move(device));
  adjacency_.emplace_back();
  return id;
}

LinkId Topology::add_link(Link link) {
  if (link.a >= devices_.size() || link.b >= devices_.size())
    throw std::out_of_range("Topology::add_link: unknown device id");
  const LinkId id = links_.size();
  adjacency_[link.a].push_back(id);
  if (link.b != link.a) adjacency_[link.b].push_back(id);
  links_.push_back(std::move(link));
  return id;
}

void Topology::set_link_shares(LinkId id, LinkId primary) {
  if (id >= links_.size() || primary >= id)
    throw std::out_of_range("Topology::set_link_shares: the primary must be an earlier link");
  const Link& p = links_[primary];
  Link& l = links_[id];
  if (p.shares || p.fabric != l.fabric ||
      p.bandwidth.bytes_per_second() != l.bandwidth.bytes_per_second() ||
      p.efficiency != l.efficiency || p.duplex != l.duplex)
    throw std::logic_error("Topology::set_link_shares: not the same physical link");
  l.shares = primary;
}

std::optional<DeviceId> Topology::find_device(std::string_view name) const {
  for (DeviceId id = 0; id < devices_.size(); ++id)
    if (devices_[id].name == name) return id;
  return std::nullopt;
}

std::size_t Topology::node_count() const {
  std::set<int> nodes;
  std::size_t loose = 0;
  for (DeviceId g : gpus_) {
    if (devices_[g].node < 0)
      ++loose;
    else
      nodes.insert(devices_[g].node);
  }
  return nodes.size() + loose;
}

void Topology::validate() const {
  if (gpus_.empty()) throw ConfigError(origin_, "the topology has no GPU (devices of kind gpu)");

  for (const Link& l : links_) {
    const std::string what =
        fmt::format("link {} <-> {}", devices_[l.a].name, devices_[l.b].name);
    if (l.a == l.b) throw ConfigError(l.origin, what + " connects a device to itself");
    if (!(l.bandwidth.bytes_per_second() > 0.0) || !std::isfinite(l.bandwidth.bytes_per_second()))
      throw ConfigError(l.origin, what + ": bandwidth must be positive");
    if (!(l.latency.seconds() >= 0.0) || !std::isfinite(l.latency.seconds()))
      throw ConfigError(l.origin, what + ": latency must not be negative");
    if (!(l.efficiency > 0.0 && l.efficiency <= 1.0))
      throw ConfigError(l.origin,
                        fmt::format("{}: efficiency must be in (0, 1], got {}", what, l.efficiency));
  }
  for (const Device& d : devices_) {
    if (!(d.latency.seconds() >= 0.0) || !std::isfinite(d.latency.seconds()))
      throw ConfigError(d.origin, fmt::format("device {}: latency must not be negative", d.name));
  }
  // p2p: false sends GPU traffic up to the CPU and back, so the switch needs an upstream link.
  for (DeviceId id = 0; id < devices_.size(); ++id) {
    const Device& d = devices_[id];
    if (d.p2p) continue;
    if (d.kind != DeviceKind::PcieSwitch)
      throw ConfigError(d.origin, fmt::format("device {}: p2p applies to PCIe switches only, "
                                              "not to a {}", d.name, to_string(d.kind)));
    const bool upstream = std::any_of(adjacency_[id].begin(), adjacency_[id].end(), [&](LinkId l) {
      return devices_[links_[l].other(id)].kind != DeviceKind::Gpu;
    });
    if (!upstream)
      throw ConfigError(d.origin, fmt::format("device {}: a PCIe switch with p2p: false needs a "
                                              "link to a CPU or another switch (GPUs under it "
                                              "exchange data through host memory)", d.name));
  }

  // Every GPU must reach every other GPU through devices that forward (GPUs do not). A pair
  // is connected when both touch the same component of the graph without GPUs, or share a
  // direct link. (Reachability without GPU transit is not transitive, hence the pair check.)
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS>;
  Graph forwarding(devices_.size());
  for (const Link& l : links_)
    if (devices_[l.a].kind != DeviceKind::Gpu && devices_[l.b].kind != DeviceKind::Gpu)
      boost::add_edge(l.a, l.b, forwarding);
  std::vector<int> component(devices_.size());
  const int components = boost::connected_components(forwarding, component.data());

  const std::size_t n = gpus_.size();
  std::vector<std::size_t> rank_of(devices_.size(), SIZE_MAX);
  for (std::size_t r = 0; r < n; ++r) rank_of[gpus_[r]] = r;
  std::vector<std::set<int>> touches(n);
  std::vector<std::set<std::size_t>> direct(n);
  std::vector<std::size_t> gpus_touching(static_cast<std::size_t>(components), 0);
  for (std::size_t r = 0; r < n; ++r) {
    for (LinkId id : adjacency_[gpus_[r]]) {
      const DeviceId peer = links_[id].other(gpus_[r]);
      if (devices_[peer].kind == DeviceKind::Gpu)
        direct[r].insert(rank_of[peer]);
      else if (touches[r].insert(component[peer]).second)
        ++gpus_touching[static_cast<std::size_t>(component[peer])];
    }
  }
  for (std::size_t c : gpus_touching)
    if (c == n) return;  // one fabric reaches every GPU: the common case, checked in O(V + E)
  auto share_component = [&](std::size_t i, std::size_t j) {
    for (int c : touches[i])
      if (touches[j].count(c) != 0) return true;
    return false;
  };
  auto disconnected = [&](std::size_t i, std::size_t j) {
    if (i > j) std::swap(i, j);
    const Device& lost = devices_[gpus_[j]];
    return ConfigError(lost.origin.line > 0 ? lost.origin : origin_,
                       fmt::format("topology is disconnected: GPU {} cannot reach GPU {} "
                                   "(GPUs do not forward traffic; add a switch or a link)",
                                   lost.name, devices_[gpus_[i]].name));
  };
  // Checking every pair is O(n^2), minutes for 10^5 GPUs. GPUs without direct GPU links that
  // touch the same components are interchangeable, so they form one group checked once; a
  // GPU with direct links is a group of its own. Groups are listed by their lowest rank.
  std::map<std::vector<int>, std::size_t> group_by_touches;
  std::vector<std::vector<std::size_t>> groups;
  for (std::size_t r = 0; r < n; ++r) {
    if (!direct[r].empty()) {
      groups.push_back({r});
      continue;
    }
    const auto [it, inserted] = group_by_touches.emplace(
        std::vector<int>(touches[r].begin(), touches[r].end()), groups.size());
    if (inserted)
      groups.push_back({r});
    else
      groups[it->second].push_back(r);
  }
  for (const auto& g : groups)  // members of a group share every component, unless it has none
    if (g.size() > 1 && touches[g[0]].empty()) throw disconnected(g[0], g[1]);
  for (std::size_t a = 0; a < groups.size(); ++a)
    for (std::size_t b = a + 1; b < groups.size(); ++b) {
      if (share_component(groups[a][0], groups[b][0])) continue;
      // Only direct links can join them, GPU by GPU (stops at the first missing one, so the
      // work is bounded by the number of direct links).
      for (std::size_t i : groups[a])
        for (std::size_t j : groups[b])
          if (direct[i].count(j) == 0) throw disconnected(i, j);
    }
}

}  // namespace gradsync
