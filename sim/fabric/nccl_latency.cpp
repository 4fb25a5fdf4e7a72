// NCCL 2.30.7's tuner, restated (see nccl_model.hpp for what the engine does with it).
//
// Every table below is NCCL's, in NCCL's units (µs, GB/s), indexed by protocol LL / LL128 /
// Simple. Source: NVIDIA/nccl src/tuning/cost_model.cc (ncclTunerConstantsDefaults,
// treeCorrectionFactor), src/tuning/ring.cc and tree.cc (ncclTuningRingModelInit/Sim,
// ncclTuningTreeModelInit/Sim), src/tuning/tuning_general.cc (ncclTuningGetTime,
// ncclTuningGetNsteps, ncclTuningGetConstantsIndexes), src/tuning/cost_model.cc
// (isLL128Enabled); checked against the 2.30.7 source tree.
// What is left out, and why:
//   - graphs[a].latencyInter (a network plugin's declared latency): 0 for the IB/RoCE plugin;
//     the shipped topologies carry network latency on their links instead;
//   - the ×0.85 bandwidth of a Tree graph with NCCL_TOPO_PATTERN_TREE (a graph-search detail);
//   - CollNet, PAT and the symmetric-memory kernels: gradsync has no such plans (NVLS in one
//     NVSwitch domain and NVLSTree across servers are modelled: see kNvls* below);
//   - numPipeOps (aggregated launches): one collective at a time here.
#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <string>

#include "gradsync/nccl_model.hpp"

namespace gradsync {

namespace {

constexpr int kLL = 0;
constexpr int kLL128 = 1;
constexpr int kSimple = 2;
constexpr int kTree = 0;
constexpr int kRing = 1;

// baseLatencies[algorithm][protocol], µs.
constexpr double kBaseLat[2][3] = {
    {6.8, 14.0, 8.4},  // Tree
    {6.6, 14.0, 8.4},  // Ring
};
// hwLatencies[link class][algorithm][protocol], µs per hop.
constexpr double kHwLat[3][2][3] = {
    {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}},   // NVLink: Tree, Ring
    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}},    // PCI
    {{5.0, 8.5, 14.0}, {2.7, 4.0, 14.0}},  // NET
};
// llMaxBws[row][index2], GB/s: row = GPU generation on one node, CPU (Intel 0 / AMD 1) across
// nodes; index2 = 0 (1 node), 1 (2 nodes), 2 (more).
constexpr double kLlMaxBw[4][3] = {
    {39.0, 39.0, 20.4},           // Volta (1 node) / Intel (multi-node)
    {87.7, 22.5, 19.0},           // Ampere / AMD
    {141.0, 45.0, 35.0},          // Hopper
    {2 * 141.0, 2 * 45.0, 2 * 35.0},  // Blackwell
};
// Per-channel caps, GB/s, [generation][index2].
constexpr double kPerChRingLL128Bw[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {40.0, 40.0, 40.0}};
constexpr double kPerChTreeLL128Bw[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
constexpr double kPerChTreeBw[4][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
// treeCorrectionFactor[protocol][log2(bytes / 64)], applied to Tree AllReduce below 2^23 · 64 B.
constexpr double kTreeCorrection[3][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0,
     1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0,
     1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
};
constexpr double kLL128RingShare = 0.92;             // "120.0/128.0" in NCCL's comment, 0.92 used
constexpr double kLL128TreeShareOneNode = 7.0 / 9.0;
constexpr double kLL128TreeShareMultiNode = 120.0 / 128.0;
constexpr double kTreeShare = 0.92;
constexpr double kTreeLLDivisor = 3.8;
constexpr double kRingLLShare = 0.5;  // LL: 8 B of data per 16 B line (data + flag)
constexpr double kRingPlateauAmpereUp = 1.4;  // Ring/Simple multi-node AllReduce latency ×
constexpr double kRingPlateauVolta = 1.9;

constexpr double kUs = 1e-6;

// NVLS (NVLink SHARP, Simple only). NCCL 2.30.7 cost_model.cc: baseLatencies[NVLS] = 0 for
// every protocol; hwLatencies[NVLINK][NVLS][Simple] = 25 µs, [NET][NVLS][Simple] = 18 µs.
// NCCL charges the NVLink hop once per collective in one node; gradsync's
// NVLS plan has two legs per chunk (GPU → NVSwitch push, NVSwitch → GPU pull), so each leg is
// charged half of it and the critical path pays 25 µs.
constexpr double kNvlsBaseLat = 0.0;
constexpr double kNvlsNvlinkHopLat = 25.0;
constexpr double kNvlsNetHopLat = 18.0;
// NVLSTree (Simple only): base 0, hwLatencies[NVLINK][NVLS_TREE] = 25 µs, [NET][NVLS_TREE] =
// 20.9 µs (same file); latency = 25 + 2·log2i(nodes)·20.9 µs, the NVLink hop once and
// the network hop per tree level up and down. gradsync's NVLSTree plan has four NVLink legs per
// chunk on its critical path (push, delivery, store, multicast), each charged a quarter of it.
constexpr double kNvlsTreeNetHopLat = 20.9;

int algo_row(Algorithm a) { return a == Algorithm::Tree ? kTree : kRing; }
int proto_col(NcclProtocol p) { return static_cast<int>(p); }

void check_input(Algorithm algorithm, CollectiveOp op, std::uint32_t ranks, std::uint32_t nodes,
                 BytesPerSecond bus_bandwidth, Bytes bytes) {
  if (ranks == 0) throw std::invalid_argument("nccl_cost: zero ranks");
  if (nodes == 0 || nodes > ranks)
    throw std::invalid_argument("nccl_cost: nodes must be in 1..ranks");
  if (!(bus_bandwidth.bytes_per_second() > 0.0) || !std::isfinite(bus_bandwidth.bytes_per_second()))
    throw std::invalid_argument("nccl_cost: bus bandwidth must be positive");
  if (!(bytes.bytes() >= 0.0) || !std::isfinite(bytes.bytes()))
    throw std::invalid_argument("nccl_cost: bytes must be finite and non-negative");
  if (algorithm == Algorithm::Tree && op != CollectiveOp::AllReduce)
    throw std::invalid_argument("nccl_cost: NCCL's Tree runs AllReduce only");
}

}  // namespace

std::string_view to_string(NcclProtocol protocol) {
  switch (protocol) {
    case NcclProtocol::LL: return "LL";
    case NcclProtocol::LL128: return "LL128";
    case NcclProtocol::Simple: return "Simple";
  }
  return "?";
}

std::string_view to_string(LinkClass link_class) {
  switch (link_class) {
    case LinkClass::NvLink: return "nvlink";
    case LinkClass::Pci: return "pci";
    case LinkClass::Net: return "net";
  }
  return "?";
}

LinkClass link_class(Fabric fabric) { return fabric_info(fabric).nccl_class; }

LinkClass route_link_class(std::span<const Fabric> fabrics) {
  LinkClass worst = LinkClass::NvLink;
  for (Fabric f : fabrics) {
    const LinkClass c = link_class(f);
    if (c == LinkClass::Net) return c;
    if (c == LinkClass::Pci) worst = c;
  }
  return worst;
}

LinkClass route_link_class(const Topology& topology, const Route& route) {
  LinkClass worst = LinkClass::NvLink;
  for (LinkId id : route.links) {
    const LinkClass c = link_class(topology.link(id).fabric);
    if (c == LinkClass::Net) return c;
    if (c == LinkClass::Pci) worst = c;
  }
  return worst;
}

int nccl_log2i(std::uint64_t n) {
  int l = 0;
  while (n >>= 1) ++l;
  return l;
}

std::uint32_t nccl_nsteps(CollectiveOp op, std::uint32_t ranks) {
  switch (op) {
    case CollectiveOp::AllReduce: return 2 * (ranks - 1);
    case CollectiveOp::ReduceScatter:
    case CollectiveOp::AllGather: return ranks - 1;
    case CollectiveOp::Broadcast:
    case CollectiveOp::Reduce: return ranks;
  }
  return ranks;
}

Bytes nccl_nvls_chunk(Algorithm algorithm, Bytes bytes, std::uint32_t channels,
                      std::uint32_t heads, std::uint32_t nodes) {
  const double n = bytes.bytes();
  const double concurrent = static_cast<double>(channels) * heads;
  double chunk = kNcclNvlsChunkBytes;
  if (algorithm == Algorithm::NvlsTree) {
    if (nodes >= 4) chunk = 64.0 * 1024;  // nvls.cc: nvlsTreeMaxChunkSize from 4 nodes
    if (n < 4 * concurrent * chunk && chunk > 65536) chunk = 65536;
    if (n < 1 * concurrent * chunk && chunk > 32768) chunk = 32768;
    return Bytes(chunk);
  }
  if (n < 64 * concurrent * chunk && chunk > 65536) chunk = 65536;
  if (n < 8 * concurrent * chunk && chunk > 32768) chunk = 32768;
  if (n < 2 * concurrent * chunk && chunk > 16384) chunk = 16384;
  return Bytes(chunk);
}

double nvls_chunk_efficiency(Bytes chunk, BytesPerSecond channel_rate, double overhead_us) {
  // k = overhead × plateau rate; the raw rate is the plateau's / its own efficiency, so
  // c0 = overhead × raw rate solves c0 = k·(cmax + c0)/cmax.
  const double cmax = kNcclNvlsChunkBytes;
  const double k = overhead_us * kUs * channel_rate.bytes_per_second();
  if (!(k > 0.0) || k >= cmax) return 1.0;
  const double c0 = k * cmax / (cmax - k);
  const double c = chunk.bytes();
  return (c / (c + c0)) / (cmax / (cmax + c0));
}

double nvls_bandwidth_factor(GpuGeneration gpu) {
  if (gpu == GpuGeneration::Blackwell)
    return kNvlsBandwidthFactor * kNcclNvlsEfficiencyBlackwell / kNcclNvlsEfficiencyHopper;
  return kNvlsBandwidthFactor;
}

Seconds nccl_base_latency(Algorithm algorithm, NcclProtocol protocol) {
  if (algorithm == Algorithm::Nvls || algorithm == Algorithm::NvlsTree)
    return Seconds(kNvlsBaseLat * kUs);
  return Seconds(kBaseLat[algo_row(algorithm)][proto_col(protocol)] * kUs);
}

Seconds nccl_hw_latency(LinkClass link, Algorithm algorithm, NcclProtocol protocol) {
  if (algorithm == Algorithm::Nvls) {
    if (protocol != NcclProtocol::Simple || link == LinkClass::Pci) return Seconds(0.0);
    return Seconds((link == LinkClass::NvLink ? kNvlsNvlinkHopLat : kNvlsNetHopLat) * kUs);
  }
  if (algorithm == Algorithm::NvlsTree) {
    if (protocol != NcclProtocol::Simple || link == LinkClass::Pci) return Seconds(0.0);
    return Seconds((link == LinkClass::NvLink ? kNvlsNvlinkHopLat : kNvlsTreeNetHopLat) * kUs);
  }
  return Seconds(kHwLat[static_cast<int>(link)][algo_row(algorithm)][proto_col(protocol)] * kUs);
}

Seconds nccl_net_overhead(CpuVendor cpu) {
  return Seconds((cpu == CpuVendor::Amd ? 2.0 : 1.0) * kUs);
}

double nccl_channel_bus_bandwidth(Algorithm algorithm, NcclProtocol protocol, GpuGeneration gpu,
                                  std::uint32_t nodes, double bus_GBps,
                                  std::uint32_t comm_channels) {
  const int gen = static_cast<int>(gpu);
  const int index2 = nodes <= 2 ? static_cast<int>(std::max<std::uint32_t>(nodes, 1)) - 1 : 2;
  const bool tree = algorithm == Algorithm::Tree;
  const double ll128 = tree ? kPerChTreeLL128Bw[gen][index2] : kPerChRingLL128Bw[gen][index2];
  switch (protocol) {
    case NcclProtocol::LL128: return ll128;
    case NcclProtocol::LL: return ll128 * kRingLLShare / (120.0 / 128.0);
    case NcclProtocol::Simple:
      if (tree) return kPerChTreeBw[gen][index2];
      return comm_channels > 0 ? bus_GBps / comm_channels : bus_GBps;
  }
  return bus_GBps;
}

bool nccl_protocol_enabled(NcclProtocol protocol, LinkClass intra, const NcclOptions& options) {
  if (protocol == NcclProtocol::LL) return options.allow_ll;
  if (protocol == NcclProtocol::Simple) return options.allow_simple;
  return options.allow_ll128 && intra == LinkClass::NvLink;
}

namespace {

// The share of NVLS's plateau that this size's chunks reach (1 without a chunk model).
double nvls_chunk_share(Algorithm algorithm, Bytes bytes, std::uint32_t nodes, double bus_GBps,
                        const NcclOptions& options) {
  if (options.nvls_channels == 0 || options.nvls_heads == 0) return 1.0;
  return nvls_chunk_efficiency(
      nccl_nvls_chunk(algorithm, bytes, options.nvls_channels, options.nvls_heads, nodes),
      BytesPerSecond(bus_GBps * 1e9 * options.nvls_factor() / options.nvls_channels),
      options.nvls_chunk_overhead_us);
}

// nccl_cost() with NCCL's latency table as it is (options.latency_scale not applied).
NcclStepCost cost_from_tables(Algorithm algorithm, NcclProtocol protocol, CollectiveOp op,
                              std::uint32_t ranks, std::uint32_t nodes, LinkClass intra,
                              Bytes bytes, BytesPerSecond bus_bandwidth,
                              const NcclOptions& options) {
  check_input(algorithm, op, ranks, nodes, bus_bandwidth, bytes);
  if (intra == LinkClass::Net) throw std::invalid_argument("nccl_cost: intra class cannot be net");
  NcclStepCost c;
  c.protocol = protocol;
  if (algorithm == Algorithm::Nvls) {
    if (op != CollectiveOp::AllReduce)
      throw std::invalid_argument("nccl_cost: gradsync's NVLS runs AllReduce only");
    if (protocol != NcclProtocol::Simple)
      throw std::invalid_argument("nccl_cost: NVLS runs the Simple protocol only");
    if (intra != LinkClass::NvLink)
      throw std::invalid_argument("nccl_cost: NVLS needs NVLink through an NVSwitch");
  }
  if (algorithm == Algorithm::NvlsTree) {
    if (op != CollectiveOp::AllReduce)
      throw std::invalid_argument("nccl_cost: gradsync's NVLSTree runs AllReduce only");
    if (protocol != NcclProtocol::Simple)
      throw std::invalid_argument("nccl_cost: NVLSTree runs the Simple protocol only");
    if (intra != LinkClass::NvLink)
      throw std::invalid_argument("nccl_cost: NVLSTree needs NVLink through an NVSwitch");
  }
  if (ranks == 1) return c;  // NCCL: nothing to do (a local copy)
  if (algorithm == Algorithm::Nvls && nodes > 1) {
    // Across servers with SHARP (plan_nvls_sharp_allreduce): four NVLink legs (a quarter of
    // NCCL's NVLS NVLink hop each) and the two network legs to the SHARP switch and back (half
    // of NCCL's NVLS NET hop, 18 us, each): tuning.cc latency = intraLat + interLat. As for
    // NVLSTree only the NVLink legs get NVLS's bandwidth factor.
    const double bus = bus_bandwidth.bytes_per_second() / 1e9;  // GB/s
    c.base = Seconds(kNvlsBaseLat * kUs);
    c.per_step_intra = Seconds(kNvlsNvlinkHopLat / 4.0 * kUs);
    c.per_step_inter = Seconds(kNvlsNetHopLat / 2.0 * kUs);
    c.inter_steps = 2;
    c.steps = 6;
    c.protocol_factor = 1.0;
    c.bandwidth_factor =
        options.nvls_factor() * nvls_chunk_share(algorithm, bytes, nodes, bus, options);
    c.bandwidth_factor_net = 1.0;
    const double lat_us = kNvlsBaseLat + kNvlsNvlinkHopLat + kNvlsNetHopLat;
    c.latency = Seconds(lat_us * kUs);
    c.predicted = Seconds((lat_us + bytes.bytes() / (1000.0 * bus * c.bandwidth_factor)) * kUs);
    return c;
  }
  if (algorithm == Algorithm::Nvls) {
    // Push and pull legs, each half of NCCL's single NVLink hop; bandwidth: the GPU port at
    // options.nvls_factor() of its effective bandwidth, S each way (algBw = that port rate).
    const double bus = bus_bandwidth.bytes_per_second() / 1e9;  // GB/s
    c.base = Seconds(kNvlsBaseLat * kUs);
    c.per_step_intra = Seconds(kNvlsNvlinkHopLat / 2.0 * kUs);
    c.per_step_inter = c.per_step_intra;
    c.steps = 2;
    c.inter_steps = 0;
    c.protocol_factor = 1.0;
    c.bandwidth_factor =
        options.nvls_factor() * nvls_chunk_share(algorithm, bytes, nodes, bus, options);
    c.bandwidth_factor_net = c.bandwidth_factor;
    c.latency = Seconds((kNvlsBaseLat + kNvlsNvlinkHopLat) * kUs);
    const double alg_bw = bus * c.bandwidth_factor;
    c.predicted = Seconds(
        (kNvlsBaseLat + kNvlsNvlinkHopLat + bytes.bytes() / (1000.0 * alg_bw)) * kUs);
    return c;
  }
  if (algorithm == Algorithm::NvlsTree) {
    // Four NVLink legs (a quarter of NCCL's hop each) and 2·log2i(nodes) network legs. Only the
    // NVLink legs get NVLS's bandwidth factor: the tree between servers is plain network sends,
    // whose efficiency the fabric's own default carries.
    const double bus = bus_bandwidth.bytes_per_second() / 1e9;  // GB/s
    const auto levels = static_cast<std::uint32_t>(nccl_log2i(nodes));
    c.base = Seconds(kNvlsBaseLat * kUs);
    c.per_step_intra = Seconds(kNvlsNvlinkHopLat / 4.0 * kUs);
    c.per_step_inter = Seconds(kNvlsTreeNetHopLat * kUs);
    c.inter_steps = 2 * levels;
    c.steps = 4 + c.inter_steps;
    c.protocol_factor = 1.0;
    c.bandwidth_factor =
        options.nvls_factor() * nvls_chunk_share(algorithm, bytes, nodes, bus, options);
    c.bandwidth_factor_net = 1.0;
    const double lat_us = kNvlsBaseLat + kNvlsNvlinkHopLat + c.inter_steps * kNvlsTreeNetHopLat;
    c.latency = Seconds(lat_us * kUs);
    c.predicted = Seconds((lat_us + bytes.bytes() / (1000.0 * bus * c.bandwidth_factor)) * kUs);
    return c;
  }

  const int a = algo_row(algorithm);
  const int p = proto_col(protocol);
  const int gen = static_cast<int>(options.gpu);
  const int index2 = nodes <= 2 ? static_cast<int>(nodes) - 1 : 2;
  const int ll_row = nodes == 1 ? gen : (options.cpu == CpuVendor::Amd ? 1 : 0);
  const double ll_max = kLlMaxBw[ll_row][index2];
  const double ch = options.channels;  // 0: caps off
  auto cap = [&](double bw, double per_channel) {
    return ch > 0 ? std::min(bw, ch * per_channel) : bw;
  };
  const double bus = bus_bandwidth.bytes_per_second() / 1e9;  // GB/s
  const std::uint32_t ppn = ranks / nodes;
  const double steps_for_bw = nccl_nsteps(op, ranks);

  // Bus bandwidth of (algorithm, protocol) and the algorithm bandwidth NCCL divides by.
  double proto_bus = bus;
  double simple_bus = bus;
  double alg_bw = 0.0;
  double correction = 1.0;
  const double intra_hw = kHwLat[static_cast<int>(intra)][a][p];
  const double inter_hw = nodes == 1 ? intra_hw : kHwLat[static_cast<int>(LinkClass::Net)][a][p];
  double base = kBaseLat[a][p];
  double intra_lat = intra_hw;
  double inter_lat = inter_hw;

  if (algorithm == Algorithm::Tree) {
    simple_bus = cap(bus * kTreeShare, kPerChTreeBw[gen][index2]);
    proto_bus = simple_bus;
    if (protocol == NcclProtocol::LL) proto_bus = std::min(simple_bus / kTreeLLDivisor, ll_max);
    if (protocol == NcclProtocol::LL128)
      proto_bus = cap(simple_bus * (nodes == 1 ? kLL128TreeShareOneNode : kLL128TreeShareMultiNode),
                      kPerChTreeLL128Bw[gen][index2]);
    const std::uint64_t units = static_cast<std::uint64_t>(bytes.bytes()) >> 6;
    const int log_size = units == 0 ? 0 : nccl_log2i(units);
    if (log_size < 23) correction = kTreeCorrection[p][log_size];
    alg_bw = proto_bus * correction * 0.5;
    c.inter_steps = 2 * static_cast<std::uint32_t>(nccl_log2i(nodes));
    c.steps = 2 * (ppn - 1) + c.inter_steps;
  } else {
    if (protocol == NcclProtocol::LL) proto_bus = std::min(ll_max, bus * kRingLLShare);
    if (protocol == NcclProtocol::LL128)
      proto_bus = cap(bus * kLL128RingShare, kPerChRingLL128Bw[gen][index2]);
    alg_bw = proto_bus * ranks / steps_for_bw;
    const bool rooted = op == CollectiveOp::Broadcast || op == CollectiveOp::Reduce;
    switch (algorithm) {
      case Algorithm::Hierarchical:
        // Ring reduce-scatter and all-gather in the node, ring AllReduce across nodes.
        c.inter_steps = 2 * (nodes - 1);
        c.steps = 2 * (ppn - 1) + c.inter_steps;
        break;
      case Algorithm::ParameterServer:
        c.inter_steps = nodes > 1 ? 2 : 0;  // push, pull
        c.steps = 2;
        break;
      default:
        c.steps = nccl_nsteps(op, ranks);
        c.inter_steps = rooted || nodes == 1 ? 0
                        : op == CollectiveOp::AllReduce ? 2 * (nodes - 1)
                                                        : nodes - 1;
        break;
    }
    if (rooted && algorithm == Algorithm::Ring) {
      // Broadcast/Reduce: nsteps × the intra-node hop latency (Simple: Tree's, "some chunk
      // latency"), as NCCL does for graphs without sameChannels.
      intra_lat = protocol == NcclProtocol::Simple
                      ? kHwLat[static_cast<int>(intra)][kTree][p] : intra_hw;
      inter_lat = intra_lat;
    } else if (nodes > 1) {
      // Inter-node rings still launch one network post per step.
      const double overhead = nccl_net_overhead(options.cpu).seconds() / kUs *
                              (protocol == NcclProtocol::Simple ? 3.0 : 1.0);
      intra_lat = std::max(intra_lat, overhead);
    }
    // Plateau effect of ring (NCCL multiplies the whole latency).
    const double per_rank_channel = bytes.bytes() / (std::max(ch, 1.0) * ranks);
    if (algorithm == Algorithm::Ring && protocol == NcclProtocol::Simple && nodes > 1 &&
        op == CollectiveOp::AllReduce && per_rank_channel >= 64.0) {
      const double k = options.gpu == GpuGeneration::Volta ? kRingPlateauVolta
                                                            : kRingPlateauAmpereUp;
      base *= k;
      intra_lat *= k;
      inter_lat *= k;
    }
  }

  c.base = Seconds(base * kUs);
  c.per_step_intra = Seconds(intra_lat * kUs);
  c.per_step_inter = Seconds(inter_lat * kUs);
  c.protocol_factor = proto_bus / simple_bus;
  if (options.run_channels > 0) {
    const double per_channel = nccl_channel_bus_bandwidth(algorithm, protocol, options.gpu, nodes,
                                                          bus, options.comm_channels);
    c.channel_factor =
        std::min(1.0, options.run_channels * per_channel * options.channel_scale / proto_bus);
  }
  c.bandwidth_factor = proto_bus * correction * c.channel_factor / bus;
  c.bandwidth_factor_net = c.bandwidth_factor;
  const double lat_us =
      base + (c.steps - c.inter_steps) * intra_lat + static_cast<double>(c.inter_steps) * inter_lat;
  c.latency = Seconds(lat_us * kUs);
  c.predicted = Seconds((lat_us + bytes.bytes() / (1000.0 * alg_bw)) * kUs);
  return c;
}

}  // namespace

NcclStepCost nccl_cost(Algorithm algorithm, NcclProtocol protocol, CollectiveOp op,
                       std::uint32_t ranks, std::uint32_t nodes, LinkClass intra, Bytes bytes,
                       BytesPerSecond bus_bandwidth, const NcclOptions& options) {
  NcclStepCost c =
      cost_from_tables(algorithm, protocol, op, ranks, nodes, intra, bytes, bus_bandwidth, options);
  // The machine's latency against NCCL's table: what the collective is charged, not what
  // NCCL predicts (c.latency, c.predicted stay NCCL's).
  c.base = c.base * options.latency_scale;
  c.per_step_intra = c.per_step_intra * options.latency_scale;
  c.per_step_inter = c.per_step_inter * options.latency_scale;
  return c;
}

NcclStepCost nccl_cost(Algorithm algorithm, CollectiveOp op, std::uint32_t ranks,
                       std::uint32_t nodes, LinkClass intra, Bytes bytes,
                       BytesPerSecond bus_bandwidth, const NcclOptions& options) {
  NcclStepCost best;
  bool have = false;
  for (NcclProtocol p : {NcclProtocol::LL, NcclProtocol::LL128, NcclProtocol::Simple}) {
    if (!nccl_protocol_enabled(p, intra, options)) continue;
    if ((algorithm == Algorithm::Nvls || algorithm == Algorithm::NvlsTree) &&
        p != NcclProtocol::Simple)
      continue;  // Simple only
    const NcclStepCost c =
        nccl_cost(algorithm, p, op, ranks, nodes, intra, bytes, bus_bandwidth, options);
    if (!have || c.predicted < best.predicted) {
      best = c;
      have = true;
    }
  }
  if (ranks == 1) best.protocol = NcclProtocol::Simple;
  if (!have && ranks > 1)
    throw std::invalid_argument(std::string("nccl_cost: none of the enabled protocols runs ") +
                                std::string(to_string(algorithm)) + " here (nccl.protocols)");
  return best;
}

Seconds nccl_collective_latency(const NcclStepCost& cost, Seconds intra_route_latency,
                                Seconds inter_route_latency) {
  const Seconds intra = std::max(intra_route_latency, cost.per_step_intra);
  const Seconds inter = std::max(inter_route_latency, cost.per_step_inter);
  return cost.base + intra * static_cast<double>(cost.steps - cost.inter_steps) +
         inter * static_cast<double>(cost.inter_steps);
}

}  // namespace gradsync
