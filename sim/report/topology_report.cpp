// format_summary(): the text `gradsync topo` prints. A pure function of the summary: one
// aligned "label  value" line per fact, every number with its unit, e.g.
//
//   name                    dgx-h100-4node-ib
//   GPUs                    32 GPUs
//   nodes                   4 nodes, 8 GPUs per node
//   devices                 32 gpu, 4 nvswitch, 32 nic, 12 switch
//   links: nvlink           32 links, 14.4 TB/s total line rate
//   ...
//   NIC rails               2 NICs per GPU (its traffic between servers split over them), ...
//   oversubscription        1:1 (host-facing : switch-facing, worst switch)
//   diameter                6 hops between GPUs
#include <algorithm>
#include <iterator>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "gradsync/topology/topology_summary.hpp"

namespace gradsync {
namespace {

constexpr int kLabelWidth = 24;

void line(std::string& out, std::string_view label, std::string_view value) {
  fmt::format_to(std::back_inserter(out), "{:<{}}{}\n", label, kLabelWidth, value);
}

std::string plural(std::size_t count, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", count, count == 1 ? one : many);
}

std::string nodes_text(const TopologySummary& s) {
  std::string text = plural(s.nodes, "node", "nodes");
  if (s.nodes == 0) return text;
  if (s.gpus % s.nodes == 0) {
    return fmt::format("{}, {} per node", text, plural(s.gpus / s.nodes, "GPU", "GPUs"));
  }
  return fmt::format("{}, {:.3g} GPUs per node on average", text,
                     static_cast<double>(s.gpus) / static_cast<double>(s.nodes));
}

std::string devices_text(const TopologySummary& s) {
  std::string text;
  for (const auto& [kind, count] : s.devices) {
    if (!text.empty()) text += ", ";
    text += fmt::format("{} {}", count, to_string(kind));
  }
  return text.empty() ? "none" : text;
}

std::string ratio_text(double ratio) { return fmt::format("{:.3g}:1", ratio); }

}  // namespace

std::string format_summary(const TopologySummary& s) {
  std::string out;
  line(out, "name", s.name.empty() ? "(unnamed)" : s.name);
  line(out, "GPUs", plural(s.gpus, "GPU", "GPUs"));
  // The generation is the row of NCCL's tables the GPU uses (by compute capability): an Ada
  // L40S shares Ampere's sm_8x row, so name the model and say which row.
  const std::string_view row = to_string(s.gpu_generation);
  if (s.gpu_generation_inferred)
    line(out, "GPU generation", fmt::format("{} (inferred from the NVLink rate; set gpu:)", row));
  else if (!s.gpu_model.empty() && s.gpu_model != row)
    line(out, "GPU", fmt::format("{} (NCCL's tables: the {} row, by compute capability)",
                                 s.gpu_model, row));
  else
    line(out, "GPU generation", std::string(row));
  line(out, "nodes", nodes_text(s));
  line(out, "devices", devices_text(s));

  std::size_t count_width = 1;
  for (const auto& [fabric, links] : s.links) {
    count_width = std::max(count_width, fmt::formatted_size("{}", links.count));
  }
  for (const auto& [fabric, links] : s.links) {
    const std::string count = fmt::format("{:>{}} {},", links.count, count_width,
                                          links.count == 1 ? "link" : "links");
    // A memory link carries the DRAM's writes one way and its reads the other: its line rate
    // is half the DRAM peak each way, which the line says rather than leave 2x to the reader.
    line(out, fmt::format("links: {}", to_string(fabric)),
         fmt::format("{:<{}} {} total line rate{}", count, count_width + 7,
                     format_rate(links.total_bandwidth),
                     fabric == Fabric::Memory
                         ? fmt::format(" each way (DRAM peak {}: writes one way, reads the other)",
                                       format_rate(links.total_bandwidth * 2.0))
                         : std::string()));
  }
  if (s.links.empty()) line(out, "links", "none");

  if (s.mesh_gpus > 0) {
    const std::string peers = s.mesh_peers_min == s.mesh_peers_max
                                  ? fmt::format("{}", s.mesh_peers_max)
                                  : fmt::format("{}-{}", s.mesh_peers_min, s.mesh_peers_max);
    line(out, "NVLink mesh",
         fmt::format("{} of {} peers per GPU, no NVSwitch; {}", peers, s.mesh_gpus - 1,
                     s.mesh_ring_share > 0.0
                         ? fmt::format("rings along NVLink use {:.0f} % of the NVLinks",
                                       100.0 * s.mesh_ring_share)
                         : std::string("no ring stays on NVLink (rings cross PCIe)")));
  }
  line(out, "GPU port bandwidth", fmt::format("{} per GPU, per direction",
                                              format_rate(s.gpu_port_bandwidth)));
  line(out, "GPU network bandwidth",
       s.nodes <= 1 ? std::string("none (single node)")
                    : fmt::format("{} per GPU, per direction (server NICs / GPUs)",
                                  format_rate(s.gpu_network_bandwidth)));
  if (s.nodes > 1 && s.rail_nics_max > 0) {
    const std::string per_gpu =
        s.rail_nics_min == s.rail_nics_max
            ? plural(s.rail_nics_max, "NIC", "NICs")
            : fmt::format("{}-{} NICs", s.rail_nics_min, s.rail_nics_max);
    line(out, "NIC rails",
         fmt::format("{} per GPU{}, {}", per_gpu,
                     s.rail_nics_max > 1 ? " (its traffic between servers split over them)" : "",
                     s.gpus_per_nic_max <= 1
                         ? std::string("none shared")
                         : fmt::format("shared by up to {} GPUs", s.gpus_per_nic_max)));
  }
  if (s.shared_uplinks > 0)
    line(out, "GPU <-> NIC",
         fmt::format("through the CPU, no peer to peer: {} carry each NIC's traffic both ways "
                     "(up and back down)",
                     plural(s.shared_uplinks, "PCIe switch uplink", "PCIe switch uplinks")));
  if (s.sharp_switches > 0)
    line(out, "in-network reduction",
         fmt::format("SHARP on {} (NVLS across servers)",
                     plural(s.sharp_switches, "switch", "switches")));
  line(out, "bisection bandwidth",
       fmt::format("{} (first half of the ranks to the second, line rate)",
                   format_rate(s.bisection_bandwidth)));
  line(out, "oversubscription",
       fmt::format("{} (host-facing : switch-facing, worst switch)",
                   ratio_text(s.oversubscription)));
  line(out, "diameter", fmt::format("{} between GPUs",
                                    plural(s.diameter_hops, "hop", "hops")));
  return out;
}

}  // namespace gradsync
