// NCCL 2.30.7's graph search and tuner choice, restated (see nccl_tuner.hpp). NCCL's units:
// GB/s and µs; the tables below are NCCL's, with the file each comes from.
#include "gradsync/fabric/nccl_tuner.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <span>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "gradsync/units/config_error.hpp"
#include "gradsync/topology/nvlink_rings.hpp"
#include "gradsync/collective/rank_placement.hpp"
#include "gradsync/fabric/fabric_defaults.hpp"
#include "gradsync/fabric/fabric_model.hpp"

namespace gradsync {

namespace {

// src/graph/search.cc: per-channel speeds tried, fastest first (GB/s).
constexpr double kSpeedsIntra[] = {40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0,
                                   5.0, 4.0, 3.0};
constexpr double kSpeedsIntraSm90[] = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0,
                                       3.0};
constexpr double kSpeedsIntraSm100[] = {90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0,
                                        20.0, 19.0, 18.0};
constexpr double kSpeedsInter[] = {48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0,
                                   7.0, 6.0, 5.0, 4.0, 3.0, 2.4, 1.2, 0.24, 0.12};
constexpr double kSpeedsInterSm90[] = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5,
                                       15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12};
constexpr double kSpeedsInterSm100[] = {96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0,
                                        20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12};
// search.cc: a lower speed is tried only while it is more than 0.49 of the best so far.
constexpr double kSpeedStepRatio = 0.49;
// device.h MAXCHANNELS; init.cc: the ring/tree graphs search up to MAXCHANNELS/2.
constexpr std::uint32_t kMaxChannels = 64;
constexpr std::uint32_t kGraphMaxChannels = kMaxChannels / 2;
// device.h NCCL_MAX_NVLS_ARITY.
constexpr std::uint32_t kMaxNvlsArity = 32;
constexpr std::uint32_t kMaxDirectHeads = 8;  // NCCL_MAX_DIRECT_ARITY + 1 (search.cc)
constexpr double kMaxThreadsCollNet = 640.0;  // maxThreads[COLLNET_*][SIMPLE] = NCCL_MAX_NTHREADS
// transport/nvls.cc: NVLS_NCHANNELS_SM90 / _SM100 (several nodes) / _SM100_NVL (one node).
constexpr std::uint32_t kNvlsChannelsHopper = 16;
constexpr std::uint32_t kNvlsChannelsBlackwell = 32;
constexpr std::uint32_t kNvlsChannelsBlackwellOneNode = 24;
// graph/tuning.cc: nvlsEfficiency per architecture (Volta, Ampere have no NVLS).
constexpr double kNvlsEfficiency[4] = {0.0, 0.0, 0.85, 0.74};
// tuning.cc: perChMaxNVLSTreeBws [generation][1 node, 2 nodes, more].
constexpr double kPerChMaxNvlsTreeBw[4][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 80.0}};
// tuning.cc: NVLS and NVLSTree latencies (µs): base 0, NVLink hop 25 (both), NET hop 18
// (NVLS) and 20.9 (NVLSTree).
constexpr double kNvlsNvlinkLat = 25.0;
constexpr double kNvlsTreeNetLat = 20.9;
constexpr double kNvlsNetLat = 18.0;  // hwLatencies[NET][NVLS][Simple]
// device.h / comm.h: threads per channel and bytes per thread before a channel is added.
constexpr double kMaxThreadsSimple = 512.0;  // NCCL_SIMPLE_MAX_NTHREADS
constexpr double kMaxThreadsPcieRing = 256.0;  // Ring/Simple when channels × bw <= PCI_BW
constexpr double kPciBw = 12.0;                // topo.h PCI_BW (GB/s)
constexpr double kMaxThreadsLL = 512.0;        // NCCL_LL_MAX_NTHREADS
constexpr double kMaxThreadsLL128 = 640.0;     // NCCL_LL128_MAX_NTHREADS
constexpr double kThresholdLL = 8.0;           // NCCL_LL_THREAD_THRESHOLD (× ranks for Ring)
constexpr double kThresholdLL128 = 8.0;        // NCCL_LL128_THREAD_THRESHOLD
constexpr double kThresholdSimple = 64.0;      // NCCL_SIMPLE_THREAD_THRESHOLD
constexpr double kThresholdCollNet = 512.0;    // threadThresholds[COLLNET_*][SIMPLE] (tuning.cc)
// enqueue.cc scheduleCollTasksToPlan: MinTrafficPerChannel.
constexpr double kMinTrafficPerChannel = 32.0 * 1024;

std::span<const double> speeds(GpuGeneration gpu, bool inter) {
  if (gpu == GpuGeneration::Blackwell)
    return inter ? std::span<const double>(kSpeedsInterSm100) : std::span<const double>(kSpeedsIntraSm100);
  if (gpu == GpuGeneration::Hopper)
    return inter ? std::span<const double>(kSpeedsInterSm90) : std::span<const double>(kSpeedsIntraSm90);
  return inter ? std::span<const double>(kSpeedsInter) : std::span<const double>(kSpeedsIntra);
}

// The search with a channel bound that depends on the speed (NICs across nodes).
// `ring`: the ring pattern's second pass (a faster speed for the channels found); trees raise
// their intra-node speed instead (tree_graph()).
template <typename ChannelsAt>
NcclGraph search(GpuGeneration gpu, bool inter, double total_bw, double max_path_bw,
                 ChannelsAt channels_at, bool ring) {
  const std::span<const double> s = speeds(gpu, inter);
  std::size_t i = 0;
  // (1e-9: 400 Gb/s x 0.96 is 47.99999... GB/s in binary, and NCCL's 48 must fit it.)
  while (i + 1 < s.size() && (s[i] > max_path_bw + 1e-9 || s[i] > total_bw + 1e-9)) ++i;
  std::uint32_t best_ch = 0;
  double best_bw = 0.0;
  for (; i < s.size(); ++i) {
    const std::uint32_t ch = channels_at(s[i]);
    if (ch > 0 && ch * s[i] > best_ch * best_bw + 1e-9) {
      best_ch = ch;
      best_bw = s[i];
    }
    if (best_ch > 0 && best_ch * best_bw >= total_bw - 1e-9) break;  // "perfect"
    if (i + 1 < s.size() && best_ch > 0 && s[i + 1] / best_bw <= kSpeedStepRatio) break;
  }
  if (best_ch == 0) return NcclGraph{1, s.back(), s.back()};  // NCCL's simple-order fallback
  // ncclTopoDupChannels (rings and trees; NVLS graphs are not duplicated).
  if (best_bw >= 25.0 &&
      !(gpu >= GpuGeneration::Hopper && best_bw < 50.0 && best_ch > 4)) {
    const std::uint32_t dup = std::min(2 * best_ch, kGraphMaxChannels);
    best_bw /= std::ceil(static_cast<double>(dup) / best_ch);
    best_ch = dup;
  }
  // Second pass (rings): a faster speed that still gives every channel found.
  if (ring)
    for (std::size_t k = 0; k < s.size(); ++k)
      if (s[k] > best_bw && s[k] <= max_path_bw && best_ch * s[k] <= total_bw + 1e-9 &&
          channels_at(s[k]) >= best_ch) {
        best_bw = s[k];
        break;
      }
  return NcclGraph{best_ch, best_bw, best_bw};
}

// A link's bandwidth as NCCL's topology detection sees it, GB/s — from the hardware, not the
// link's own `efficiency:` (a measured property NCCL's search does not know, and what
// `gradsync calibrate` fits: a fitted efficiency must not switch NCCL's graphs):
//   NVLink: NCCL's per-link bandwidth per generation (src/graph/topo.h SM70/SM80_NVLINK_BW 20,
//     SM90 20.6, SM100 40.1 GB/s) over the link's per-direction rate (25 GB/s per NVLink
//     2/3/4 link, 50 per NVLink 5 link): 450 GB/s on an H100 -> 18 x 20.6 = 370.8;
//   PCIe, CPU and network links: the fabric's default payload share (fabric_defaults.hpp).
//     NCCL reads a NIC's port speed, so its view of a 400 Gb/s NIC is 50 GB/s, not 48; at the
//     line rate the tuner moves the 4-server 100 GbE TCP cluster (GTC-100GbE-TCP) to an
//     NVLSTree that simulates at 0.61 of the measured busbw, so the default share stays until
//     NVLSTree over TCP is modelled (sim/fabric/README.md).
double nccl_link_bw(const Link& l, GpuGeneration gpu) {
  const double line = l.bandwidth.bytes_per_second() / 1e9;
  if (l.fabric != Fabric::NvLink) return line * default_efficiency(l.fabric);
  switch (gpu) {
    case GpuGeneration::Volta:
    case GpuGeneration::Ampere: return line * 20.0 / 25.0;
    case GpuGeneration::Hopper: return line * 20.6 / 25.0;
    case GpuGeneration::Blackwell: return line * 40.1 / 50.0;
  }
  return line;
}

// The first rank's GPU links: NVLink (or PCIe/socket) total and fastest single path, GB/s.
struct GpuLinks {
  double total = 0.0;
  double max_path = 0.0;
  bool nvlink = false;
  double pci = 0.0;  // the fastest PCIe/socket link
};

GpuLinks gpu_links(const Topology& topo, DeviceId gpu, GpuGeneration generation) {
  std::map<DeviceId, double> nvlink_to;
  double pci = 0.0;
  for (LinkId id : topo.links_of(gpu)) {
    const Link& l = topo.link(id);
    const double bw = nccl_link_bw(l, generation);
    if (l.fabric == Fabric::NvLink) nvlink_to[l.other(gpu)] += bw;
    else if (l.fabric == Fabric::Pcie || l.fabric == Fabric::Socket) pci = std::max(pci, bw);
  }
  GpuLinks g;
  g.pci = pci;
  if (!nvlink_to.empty()) {
    g.nvlink = true;
    for (const auto& [peer, bw] : nvlink_to) {
      g.total += bw;
      g.max_path = std::max(g.max_path, bw);
    }
  } else {
    g.total = g.max_path = pci;
  }
  return g;
}

// The NICs of a server: how many, and the network bandwidth of one (GB/s).
struct NodeNics {
  std::uint32_t count = 0;
  double bw = 0.0;
};

NodeNics node_nics(const Topology& topo, int node) {
  NodeNics n;
  for (DeviceId d = 0; d < topo.devices().size(); ++d) {
    const Device& dev = topo.device(d);
    if (dev.kind != DeviceKind::Nic || dev.node != node) continue;
    double bw = 0.0;
    for (LinkId id : topo.links_of(d)) {
      const Link& l = topo.link(id);
      if (is_network_fabric(l.fabric)) bw += nccl_link_bw(l, GpuGeneration::Hopper);  // (any)
    }
    if (!(bw > 0.0)) continue;
    ++n.count;
    n.bw = n.bw > 0.0 ? std::min(n.bw, bw) : bw;
  }
  return n;
}

// The NICs NCCL's search may use on `node` for these ranks: every NIC of the server when the
// communicator holds all its GPUs; else the NICs its GPUs there reach first (rail_nics), as
// search.cc takes the nets closest to each GPU. A communicator of one GPU per server then runs
// at most 4 channels through that GPU's NIC, as NCCL 2.30.4 did on 4 x p5en
// (NCCL_TESTS_SPLIT_MASK=0x7, test/data/nccl-tests/tuning), not 16 from the server's 8 NICs.
NodeNics comm_nics(const Topology& topo, const std::vector<DeviceId>& rank_devices, int node) {
  std::set<DeviceId> gpus;
  for (DeviceId d : rank_devices)
    if (topo.device(d).node == node) gpus.insert(d);
  std::size_t server_gpus = 0;
  for (DeviceId g : topo.gpus()) server_gpus += topo.device(g).node == node;
  if (gpus.size() >= server_gpus) return node_nics(topo, node);
  std::set<DeviceId> nics;
  for (DeviceId g : gpus)
    for (const RailNic& r : rail_nics(topo, g)) nics.insert(r.nic);
  NodeNics all = node_nics(topo, node);
  if (nics.empty() || all.count == 0) return all;
  all.count = static_cast<std::uint32_t>(std::min<std::size_t>(nics.size(), all.count));
  return all;
}

double traffic_per_byte(CollectiveOp op, std::uint32_t ranks) {
  switch (op) {
    case CollectiveOp::AllReduce: return 2.0;
    case CollectiveOp::AllGather:
    case CollectiveOp::ReduceScatter: return static_cast<double>(ranks);
    case CollectiveOp::Broadcast:
    case CollectiveOp::Reduce: return 1.0;
  }
  return 1.0;
}

// NVLS / NVLSTree (tuning.cc): latency and algorithm bandwidth, or bandwidth 0 when off.
NcclCandidate nvls_candidate(const NcclTopologyView& v, Algorithm a, CollectiveOp op,
                             double bytes) {
  NcclCandidate c{a, NcclProtocol::Simple};
  const int gen = static_cast<int>(v.gpu);
  const int index2 = v.nodes <= 2 ? static_cast<int>(v.nodes) - 1 : 2;
  const double ch = v.nvls.channels;
  if (ch < 2 || op != CollectiveOp::AllReduce) return c;
  double intra_bw = v.nvls.bw_intra * kNvlsEfficiency[gen] * (ch - 1) / ch * 2.0;
  const double inter_bw =
      v.nvls.bw_inter * (a == Algorithm::NvlsTree && v.nodes <= 2 ? 2.0 : 1.0);
  double bw = std::min(intra_bw, inter_bw);
  if (a == Algorithm::NvlsTree) bw = std::min(bw, kPerChMaxNvlsTreeBw[gen][index2]);
  const double bus = ch * bw;
  c.bandwidth_GBps = bus * v.ranks / nccl_nsteps(op, v.ranks);
  c.latency_us = kNvlsNvlinkLat;
  if (a == Algorithm::NvlsTree) c.latency_us += 2.0 * nccl_log2i(v.nodes) * kNvlsTreeNetLat;
  if (a == Algorithm::Nvls && v.nodes > 1) c.latency_us += kNvlsNetLat;  // with SHARP
  c.predicted_us = c.latency_us + bytes / (1000.0 * c.bandwidth_GBps);
  return c;
}

// The NVLS graph (search.cc, pattern NVLS): one channel per head GPU, at most
// min(NCCL_MAX_NVLS_ARITY, GPUs) and, across nodes, one per NIC (each head its own NIC).
// ncclTopoSearchTryNvls charges bwIntra on every GPU's NVSwitch link for each channel, twice on
// the head's own, so k channels at speed s need (k + 1) × s of a head's NVLink bandwidth:
// 8 × H100 on 18 × 20 GB/s links take 40 GB/s, not 50 (9 × 50 > 360; NVIDIA/nccl#1197's log,
// "Pattern 5, crossNic 0, nChannels 8, bw 40.000000/60.000000").
//   One node: the channels are fixed (minChannels = maxChannels) and the speed drops from the
//     first whose channels fit totalBw × n/(n-1) until that bound holds.
//   Across nodes: the speed drops while more channels fit, as NVLS graphs with more channels
//     win (ncclTopoCompareGraphs), until every GPU heads one ("perfect"), the channels × speed
//     reach totalBw or the next speed is under 0.49 of the best.
// Pass 2 then raises bwInter one speed at a time while it is below twice bwIntra: unbounded on
// one node (nothing there charges bwInter), within the NIC path across nodes. GB200 NVL72:
// 32 × 20/40 GB/s on one rack and across racks; DGX H100 across servers 8 × 40/48.
NcclGraph nvls_graph(GpuGeneration gpu, std::uint32_t nodes, std::uint32_t ppn, double link_bw,
                     double max_path, const NodeNics& nics) {
  const std::uint32_t max_channels = std::min(kMaxNvlsArity, ppn);
  const double total = ppn > 1 ? link_bw * ppn / (ppn - 1) : link_bw;  // non-ring totalBw
  const auto fits = [&](std::uint32_t k, double s) { return (k + 1) * s <= link_bw + 1e-9; };
  const std::span<const double> s = speeds(gpu, nodes > 1);
  if (nodes > 1 && nics.count > 0) max_path = std::min(max_path, nics.bw);
  std::size_t i = 0;
  const std::uint32_t min_channels = nodes == 1 ? max_channels : 1;
  while (i + 1 < s.size() && (s[i] > max_path + 1e-9 || s[i] * min_channels > total + 1e-9)) ++i;
  std::uint32_t best_ch = 0;
  double best_bw = 0.0;
  if (nodes == 1) {
    while (i < s.size() && !fits(max_channels, s[i])) ++i;
    if (i == s.size() || max_channels < 2) return NcclGraph{0, 0.0, 0.0};
    best_ch = max_channels;
    best_bw = s[i];
  } else {
    const std::uint32_t cap = nics.count > 0 ? std::min(max_channels, nics.count) : max_channels;
    for (; i < s.size(); ++i) {
      const double room = std::floor(link_bw / s[i] + 1e-9);
      const std::uint32_t k = room >= 2.0 ? std::min(cap, static_cast<std::uint32_t>(room) - 1) : 0;
      if (k > best_ch || k * s[i] > best_ch * best_bw + 1e-9) {
        best_ch = k;
        best_bw = s[i];
      }
      if (best_ch == max_channels || (best_ch > 0 && best_ch * best_bw >= total - 1e-9)) break;
      if (i + 1 < s.size() && best_ch > 0 && s[i + 1] / best_bw <= kSpeedStepRatio) break;
    }
    if (best_ch == 0) return NcclGraph{0, 0.0, 0.0};
  }
  double inter = best_bw;
  for (std::size_t k = s.size(); k-- > 0;) {
    if (!(inter < 2.0 * best_bw - 1e-9)) break;
    if (s[k] <= inter + 1e-9) continue;
    if (nodes > 1 && s[k] > max_path + 1e-9) break;
    inter = s[k];
  }
  return NcclGraph{best_ch, best_bw, inter};
}

// A protocol's spelling in nccl.protocols / nccl.tuner (ll, ll128, simple).
bool nccl_protocol_named(NcclProtocol p, const std::string& name) {
  switch (p) {
    case NcclProtocol::LL: return name == "ll";
    case NcclProtocol::LL128: return name == "ll128";
    case NcclProtocol::Simple: return name == "simple";
  }
  return false;
}

}  // namespace

NcclGraph nccl_search_graph(GpuGeneration gpu, bool inter, double total_bw, double max_path_bw,
                            std::uint32_t channel_limit) {
  return search(gpu, inter, total_bw, max_path_bw,
                [&](double s) {
                  return std::min<std::uint32_t>(
                      channel_limit, static_cast<std::uint32_t>(std::floor(total_bw / s + 1e-9)));
                },
                true);
}

NcclTopologyView nccl_topology_view(const Topology& topology,
                                    const std::vector<DeviceId>& rank_devices,
                                    std::uint32_t ranks_per_node,
                                    std::optional<Algorithm> in_switch) {
  if (rank_devices.empty()) throw std::invalid_argument("nccl_topology_view: no rank");
  NcclTopologyView v;
  v.gpu = gpu_generation_of(topology).first;
  v.ranks = static_cast<std::uint32_t>(rank_devices.size());
  std::set<int> nodes;
  for (DeviceId d : rank_devices) nodes.insert(topology.device(d).node);
  v.nodes = static_cast<std::uint32_t>(std::max<std::size_t>(nodes.size(), 1));
  v.nvls_efficiency = topology.nvls_efficiency();
  v.settings = topology.nccl();
  v.cpu = v.settings.cpu_amd ? CpuVendor::Amd : CpuVendor::Intel;
  GpuLinks g = gpu_links(topology, rank_devices.front(), v.gpu);
  v.intra = g.nvlink ? LinkClass::NvLink : LinkClass::Pci;
  v.ll128 = v.intra == LinkClass::NvLink;
  // GPUs per server; on servers filled unevenly (8 + 4) the smallest server's, as NCCL keeps
  // the channels every node's search found, the fewest (init.cc: the minimum over nodes).
  std::uint32_t ppn = std::max<std::uint32_t>(ranks_per_node, 1);
  if (ppn == 1 && v.nodes > 1) {
    const std::vector<std::uint32_t> blocks = node_blocks(topology, rank_devices);
    if (!blocks.empty()) ppn = *std::min_element(blocks.begin(), blocks.end());
  }
  // NCCL's view when these GPUs' paths to each other are PCI although they have NVLinks.
  const auto over_pci = [&] {
    v.intra = LinkClass::Pci;
    v.ll128 = false;
    g.nvlink = false;
    g.total = g.max_path = g.pci;
  };
  bool mesh_rings = false;  // one server's GPUs NVLinked directly, rings found on NVLink
  if (v.nodes == 1 && direct_nvlink_mesh(topology, rank_devices)) {
    // GPUs NVLinked directly (DGX-1's cube-mesh, bridged pairs, full meshes): the search's
    // rings follow NVLink pairs, each channel taking `s` of every pair it crosses
    // (nvlink_rings.hpp), over the links to this communicator's GPUs only.
    const auto bw = direct_nvlink_matrix(topology, rank_devices,
                                         [&](const Link& l) { return nccl_link_bw(l, v.gpu); });
    const auto rings_at = [&](double s) {
      std::vector<std::vector<std::uint32_t>> cap(bw.size(), std::vector<std::uint32_t>(bw.size()));
      for (std::size_t i = 0; i < bw.size(); ++i)
        for (std::size_t j = 0; j < bw.size(); ++j)
          cap[i][j] = static_cast<std::uint32_t>(std::floor(bw[i][j] / s + 1e-9));
      return static_cast<std::uint32_t>(pack_rings(cap, kGraphMaxChannels).size());
    };
    const double row = std::accumulate(bw.front().begin(), bw.front().end(), 0.0);
    const double widest = *std::max_element(bw.front().begin(), bw.front().end());
    if (rings_at(speeds(v.gpu, false).back()) > 0) {
      g.total = row;  // the links to this communicator's GPUs
      g.max_path = widest;
      mesh_rings = true;
      v.ring = search(v.gpu, false, row, widest, rings_at, true);
    } else {  // no ring stays on NVLink: NCCL's rings cross PCI (the rank order)
      over_pci();
      v.ring = nccl_search_graph(v.gpu, false, g.total, g.max_path, kGraphMaxChannels);
    }
  } else if (v.nodes == 1) {
    // NVLinked GPUs of which no two of these ranks share an NVLink (no NVSwitch either: GPUs
    // 0 and 5 of a DGX-1) talk over PCI, as NCCL's paths say (PATH_SYS).
    if (g.nvlink && v.ranks > 1) {
      bool nvswitch = false;
      for (LinkId id : topology.links_of(rank_devices.front()))
        nvswitch = nvswitch || (topology.link(id).fabric == Fabric::NvLink &&
                                topology.device(topology.link(id).other(rank_devices.front())).kind ==
                                    DeviceKind::NvSwitch);
      if (!nvswitch) over_pci();
    }
    v.ring = nccl_search_graph(v.gpu, false, g.total, g.max_path, kGraphMaxChannels);
  } else {
    // Across nodes each channel leaves through a NIC: at speed s a NIC carries floor(bw / s)
    // channels, and every GPU carries each channel once over its links.
    const NodeNics nics =
        comm_nics(topology, rank_devices, topology.device(rank_devices.front()).node);
    const double nic_bw = nics.count > 0 ? nics.bw : g.total;
    const std::uint32_t nic_count = std::max<std::uint32_t>(nics.count, 1);
    v.ring = search(v.gpu, true, g.total, std::min(nic_bw, g.max_path),
                    [&](double s) {
                      const auto per_nic = static_cast<std::uint32_t>(std::floor(nic_bw / s + 1e-9));
                      return std::min({kGraphMaxChannels, nic_count * per_nic,
                                       static_cast<std::uint32_t>(std::floor(g.total / s + 1e-9))});
                    },
                    true);
  }
  // Tree graph (pattern BALANCED_TREE): non-ring patterns see the GPU's links × n/(n-1); on
  // one node its own search, across nodes the ring's channels and network speed, with the
  // intra-node speed raised up to twice the network one where the links allow (search.cc
  // pass 2: "increase bwIntra for trees (2 nodes or collnet)"), which is how NCCL's tuner sees
  // a 2-node tree's halved network traffic.
  const double tree_total = ppn > 1 ? g.total * ppn / (ppn - 1) : g.total;
  if (v.nodes == 1 && mesh_rings) {
    // On a direct mesh the tree's chains follow NVLink like the rings: the same channels.
    v.tree = v.ring;
  } else if (v.nodes == 1) {
    // init.cc: the tree graph searches exactly the ring graph's channels (treeGraph->minChannels
    // = maxChannels = ringGraph->nChannels), from the first speed whose channels fit totalBw ×
    // n/(n-1) down to one every GPU's links carry (each channel's chain sends and receives s
    // on every GPU). 8 × H100: 12 × 30, as NCCL's own log (NVIDIA/nccl#1197: "Pattern 1,
    // crossNic 0, nChannels 12, bw 30.000000/30.000000"), not 14 × 30.
    const std::span<const double> s = speeds(v.gpu, false);
    const double ch = v.ring.channels;
    std::size_t i = 0;
    while (i + 1 < s.size() && (s[i] > g.max_path + 1e-9 || s[i] * ch > tree_total + 1e-9)) ++i;
    while (i + 1 < s.size() && s[i] * ch > g.total + 1e-9) ++i;
    v.tree = NcclGraph{v.ring.channels, s[i], s[i]};
  } else {
    v.tree = v.ring;
    for (double s : speeds(v.gpu, true))
      if (s > v.tree.bw_intra && s <= 2.0 * v.ring.bw_inter + 1e-9 &&
          v.tree.channels * s <= tree_total + 1e-9 && s <= g.max_path + 1e-9) {
        v.tree.bw_intra = s;
        break;
      }
  }
  // connect.cc: twice the ring graph's channels; Hopper+ across nodes doubles again below 16
  // channels when the ring speed is above 45 GB/s.
  v.comm_channels = std::min(kMaxChannels, 2 * v.ring.channels);
  if (v.gpu >= GpuGeneration::Hopper && v.nodes > 1 && v.ring.bw_intra > 45.0 && v.comm_channels < 16)
    v.comm_channels = std::min(kMaxChannels, 2 * v.comm_channels);
  // CollNetDirect's graph: one channel per head GPU with its own NIC, at most
  // NCCL_MAX_DIRECT_ARITY + 1, at the fastest speed the NICs and the GPUs' links (× n/(n-1), a
  // non-ring pattern) carry. (search.cc charges a head's links once per channel and the
  // others 1/(n-1) of it; the bound here is stricter, and the NICs bind first on every
  // shipped topology.)
  const auto collnet_direct_graph = [&] {
    const std::uint32_t heads = std::min(kMaxDirectHeads, ppn);
    const double total = ppn > 1 ? g.total * ppn / (ppn - 1) : g.total;
    double max_path = g.max_path;
    std::uint32_t channels = heads;
    const NodeNics nics = node_nics(topology, topology.device(rank_devices.front()).node);
    if (nics.count > 0) {
      channels = std::min(heads, nics.count);
      max_path = std::min(max_path, nics.bw);
    }
    const std::span<const double> s = speeds(v.gpu, true);
    std::size_t i = 0;
    while (i + 1 < s.size() && (s[i] > max_path + 1e-9 || s[i] * channels > total + 1e-9)) ++i;
    return NcclGraph{channels, s[i], s[i]};
  };
  if (v.nodes > 1) {
    try {
      (void)collnet_devices(topology, rank_devices, ranks_per_node);
      v.collnet = true;
      (void)in_switch_devices(topology, rank_devices, ranks_per_node, Algorithm::CollNetDirect);
      v.collnet_direct = collnet_direct_graph();
    } catch (const ConfigError&) {
    }
  }
  if (in_switch && v.gpu >= GpuGeneration::Hopper && g.nvlink) {
    NodeNics nics;
    if (v.nodes > 1) nics = node_nics(topology, topology.device(rank_devices.front()).node);
    v.nvls = nvls_graph(v.gpu, v.nodes, ppn, g.total, g.max_path, nics);
    if (v.nodes > 1) {
      try {
        (void)nvls_sharp_devices(topology, rank_devices, ranks_per_node);
        v.sharp = true;
      } catch (const ConfigError&) {
      }
    }
    v.nvls_channels = v.gpu == GpuGeneration::Blackwell
                          ? (v.nodes > 1 ? kNvlsChannelsBlackwell : kNvlsChannelsBlackwellOneNode)
                          : kNvlsChannelsHopper;
  }
  return v;
}

void set_nvls_loops(CollectiveRequest& request, const NcclTopologyView& view) {
  request.nvls_channels = view.nvls_channels;
  request.nvls_heads = view.nvls.channels;  // the NVLS graph has one channel per head
}

const NcclGraph& nccl_graph(const NcclTopologyView& view, Algorithm algorithm) {
  if (algorithm == Algorithm::CollNetDirect) return view.collnet_direct;
  return algorithm == Algorithm::Tree || algorithm == Algorithm::CollNetChain ? view.tree
                                                                              : view.ring;
}

BytesPerSecond nccl_bus_bandwidth(const NcclTopologyView& view, Algorithm algorithm) {
  const NcclGraph& g = nccl_graph(view, algorithm);
  // tuning.cc: bwIntra on up to 2 nodes and for CollNet, bwInter beyond.
  const bool collnet =
      algorithm == Algorithm::CollNetChain || algorithm == Algorithm::CollNetDirect;
  const double per_channel = view.nodes <= 2 || collnet ? g.bw_intra : g.bw_inter;
  return BytesPerSecond(g.channels * per_channel * 1e9);
}

NcclOptions nccl_options(const NcclTopologyView& view, Algorithm algorithm) {
  NcclOptions o;
  o.gpu = view.gpu;
  o.cpu = view.cpu;
  o.channels = nccl_graph(view, algorithm).channels;
  o.allow_ll128 = view.ll128 && view.settings.ll128;
  o.allow_ll = view.settings.ll;
  o.allow_simple = view.settings.simple;
  o.nvls_efficiency = view.nvls_efficiency;
  o.nvls_channels = view.nvls_channels;
  o.nvls_heads = view.nvls.channels;  // the NVLS graph has one channel per head
  o.comm_channels = view.comm_channels;
  o.latency_scale = view.settings.latency_scale;
  o.channel_scale = view.settings.channel_scale;
  if (view.settings.nvls_chunk_overhead_s)
    o.nvls_chunk_overhead_us = *view.settings.nvls_chunk_overhead_s * 1e6;
  return o;
}

NcclTuning nccl_tune(const NcclTopologyView& view, CollectiveOp op, Bytes bytes,
                     const std::vector<Algorithm>& allowed) {
  const double n = bytes.bytes();
  // nccl.algorithms (NCCL_ALGO) narrows NCCL's own AllReduce choice (the other collectives run
  // NCCL's Ring in this model); one algorithm named by the caller (bench --algo, a scenario's
  // sync.algorithm) runs whatever it says.
  const std::vector<std::string>& algo_env = view.settings.algorithms;
  const bool choosing = allowed.size() != 1 && op == CollectiveOp::AllReduce;
  const auto ok = [&](Algorithm a) {
    if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), a) == allowed.end())
      return false;
    return !choosing || algo_env.empty() ||
           std::find(algo_env.begin(), algo_env.end(), to_string(a)) != algo_env.end();
  };
  NcclTuning t;
  if (view.ranks <= 1) {  // tuning.cc: one rank is a Ring/Simple copy
    t.candidates.push_back(NcclCandidate{Algorithm::Ring, NcclProtocol::Simple});
    return t;
  }
  std::vector<Algorithm> algorithms;
  if (op == CollectiveOp::AllReduce) algorithms.push_back(Algorithm::Tree);
  algorithms.push_back(Algorithm::Ring);
  if (op == CollectiveOp::AllReduce && view.nvls.channels >= 2) {
    algorithms.push_back(view.nodes == 1 ? Algorithm::Nvls : Algorithm::NvlsTree);
    // NVLS across servers runs with CollNet (SHARP) only (tuning.cc: disabled unless
    // collnetEnable when nNodes > 1).
    if (view.nodes > 1 && view.sharp) algorithms.push_back(Algorithm::Nvls);
  }
  if (op == CollectiveOp::AllReduce && view.collnet) algorithms.push_back(Algorithm::CollNetChain);
  if (op == CollectiveOp::AllReduce && view.collnet_direct.channels > 0)
    algorithms.push_back(Algorithm::CollNetDirect);
  for (Algorithm a : algorithms) {
    if (!ok(a)) continue;
    if (a == Algorithm::Nvls || a == Algorithm::NvlsTree) {
      const NcclCandidate c = nvls_candidate(view, a, op, n);
      if (c.bandwidth_GBps > 0.0 && view.settings.simple) t.candidates.push_back(c);
      continue;
    }
    const NcclOptions options = nccl_options(view, a);
    const BytesPerSecond bus = nccl_bus_bandwidth(view, a);
    for (NcclProtocol p : {NcclProtocol::LL, NcclProtocol::LL128, NcclProtocol::Simple}) {
      if (!nccl_protocol_enabled(p, view.intra, options)) continue;
      if ((a == Algorithm::CollNetChain || a == Algorithm::CollNetDirect) &&
          p != NcclProtocol::Simple)
        continue;  // Simple only
      const NcclStepCost cost = nccl_cost(a, p, op, view.ranks, view.nodes, view.intra, bytes, bus, options);
      NcclCandidate c{a, p, cost.latency.seconds() * 1e6, 0.0, cost.predicted.seconds() * 1e6};
      const double bw_part = c.predicted_us - c.latency_us;
      c.bandwidth_GBps = bw_part > 0.0 ? n / (1000.0 * bw_part) : 0.0;
      t.candidates.push_back(c);
    }
  }
  if (t.candidates.empty() && choosing && !algo_env.empty())
    throw ConfigError(view.settings.algorithms_origin,
                      fmt::format("nccl.algorithms: none of {} can run {} on these {} GPUs "
                                  "({} server{})",
                                  fmt::join(algo_env, ", "), to_string(op), view.ranks,
                                  view.nodes, view.nodes == 1 ? "" : "s"));
  if (t.candidates.empty())
    throw std::invalid_argument("nccl_tune: none of the allowed algorithms can run here");
  const NcclCandidate* best = &t.candidates.front();
  for (const NcclCandidate& c : t.candidates)
    if (c.predicted_us < best->predicted_us) best = &c;
  // A tuner plugin's rules (nccl.tuner): the first that matches this size and names a
  // candidate; the fastest predicted protocol of that algorithm when the rule names none.
  if (op == CollectiveOp::AllReduce)
    for (const NcclTunerRule& rule : view.settings.tuner) {
      if (n < rule.min_bytes || n > rule.max_bytes) continue;
      const NcclCandidate* pick = nullptr;
      for (const NcclCandidate& c : t.candidates) {
        if (to_string(c.algorithm) != rule.algorithm) continue;
        if (!rule.protocol.empty() && !nccl_protocol_named(c.protocol, rule.protocol)) continue;
        if (pick == nullptr || c.predicted_us < pick->predicted_us) pick = &c;
      }
      if (pick != nullptr) {
        best = pick;
        break;
      }
    }
  t.algorithm = best->algorithm;
  t.protocol = best->protocol;
  t.predicted_us = best->predicted_us;
  // Channels (enqueue.cc): NVLS kernels run on nvlsChannels; Ring/Tree on comm channels
  // reduced while each channel's threads would get less than their threshold, then on at
  // most one channel per 32 KiB of traffic.
  if (t.algorithm == Algorithm::Nvls || t.algorithm == Algorithm::NvlsTree) {
    t.channels = view.nvls_channels;
    return t;
  }
  if (t.algorithm == Algorithm::CollNetDirect) {
    // enqueue.cc "CollNet channel tuning": channels drop from comm->nChannels while a step of
    // nc × threads × heads × threshold bytes is more than the message, stopping at 16, 8, …,
    // with the threshold halved at each stop's 1.5×.
    double nc = view.comm_channels;
    double threshold = kThresholdCollNet;
    const double heads = std::max<std::uint32_t>(view.collnet_direct.channels, 1);
    bool more = true;
    for (double stop = 16.0; stop >= 1.0 && more; stop = std::floor(stop / 2.0)) {
      while ((more = n < nc * kMaxThreadsCollNet * heads * threshold) && nc > stop) {
        if (nc == stop + std::floor(stop / 2.0)) threshold /= 2.0;
        nc -= 1.0;
      }
    }
    t.channels = static_cast<std::uint32_t>(std::max(1.0, nc));
    return t;
  }
  const bool ring = t.algorithm == Algorithm::Ring;
  double threads = kMaxThreadsSimple;
  double threshold = kThresholdSimple;
  if (t.protocol == NcclProtocol::LL) {
    threads = kMaxThreadsLL;
    threshold = kThresholdLL * (ring ? view.ranks : 1.0);
  } else if (t.protocol == NcclProtocol::LL128) {
    threads = kMaxThreadsLL128;
    threshold = kThresholdLL128;
  } else if (t.algorithm == Algorithm::CollNetChain) {
    threads = kMaxThreadsCollNet;
    threshold = kThresholdCollNet;
  } else if (ring && view.ring.bw_intra * view.ring.channels <= kPciBw) {
    threads = kMaxThreadsPcieRing;
  }
  std::uint32_t nc = view.comm_channels;
  while (nc >= 2 && n < nc * threads * threshold) --nc;
  const double cell = kMinTrafficPerChannel /
                      (traffic_per_byte(op, view.ranks) * (t.protocol == NcclProtocol::LL ? 4.0 : 1.0));
  const double cells = std::max(1.0, std::ceil(n / cell));
  t.channels = static_cast<std::uint32_t>(std::max(1.0, std::min<double>(nc, cells)));
  return t;
}

}  // namespace gradsync
