// NCCL 2.30.7's tuner, restated: the cost of one collective (nccl_cost: NCCL's predicted time
// and what the engine charges, per protocol or the fastest enabled one) and its latency on the
// simulated routes (nccl_collective_latency), from NCCL's tables (nccl_tables.hpp) and the
// per-primitive numbers (nccl_latency.cpp). See nccl_model.hpp for what the engine does with it.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "gradsync/fabric/nccl_model.hpp"
#include "nccl_tables.hpp"

namespace gradsync {

using namespace nccl_tables;

namespace {

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

// The share of NVLS's plateau that this size's chunks reach (1 without a chunk model).
double nvls_chunk_share(Algorithm algorithm, Bytes bytes, std::uint32_t nodes, double bus_GBps,
                        const NcclOptions& options) {
  if (options.nvls_channels == 0 || options.nvls_heads == 0) return 1.0;
  return nvls_chunk_efficiency(
      nccl_nvls_chunk(algorithm, bytes, options.nvls_channels, options.nvls_heads, nodes),
      BytesPerSecond(bus_GBps * 1e9 * options.nvls_factor() / options.nvls_channels),
      options.nvls_chunk_overhead_us);
}

// CollNet's share of its bandwidth at this size: `run_channels` of the communicator's channels,
// each driving `lanes_per_channel` streams (1 for the chain; the heads for CollNetDirect, whose
// channels enqueue.cc sizes by nc × threads × heads × threshold). 1 when unknown.
double collnet_channel_share(const NcclOptions& options, double lanes_per_channel) {
  if (options.run_channels == 0 || options.comm_channels == 0) return 1.0;
  return std::min(1.0, static_cast<double>(options.run_channels) * lanes_per_channel *
                           options.channel_scale / options.comm_channels);
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
  if (algorithm == Algorithm::CollNetChain || algorithm == Algorithm::CollNetDirect) {
    if (op != CollectiveOp::AllReduce)
      throw std::invalid_argument("nccl_cost: gradsync's CollNet runs AllReduce only");
    if (protocol != NcclProtocol::Simple)
      throw std::invalid_argument("nccl_cost: CollNet runs the Simple protocol only");
  }
  if (ranks == 1) return c;  // NCCL: nothing to do (a local copy)
  if (algorithm == Algorithm::CollNetChain) {
    // Chains inside the servers (2·(ppn − 1) NVLink or PCI hops) and one round trip to the
    // SHARP switch; its sends are Simple sends, so the simulated links' rates stand (factor 1).
    const double bus = bus_bandwidth.bytes_per_second() / 1e9;  // GB/s: channels × bwIntra
    const std::uint32_t ppn = ranks / nodes;
    const double inter = ppn == 1 ? kHwLat[static_cast<int>(LinkClass::Net)][kTree][kSimple]
                                  : kCollNetChainNetLat;
    c.base = Seconds(0.0);
    c.per_step_intra = Seconds(kCollNetChainHopLat * kUs);
    c.per_step_inter = Seconds(inter / 2.0 * kUs);
    c.inter_steps = nodes > 1 ? 2 : 0;
    c.steps = 2 * (ppn - 1) + c.inter_steps;
    c.protocol_factor = 1.0;
    c.channel_factor = collnet_channel_share(options, 1.0);
    c.bandwidth_factor = c.channel_factor;
    c.bandwidth_factor_net = c.bandwidth_factor;
    const double lat_us = 2.0 * (ppn - 1) * kCollNetChainHopLat + (nodes > 1 ? inter : 0.0);
    c.latency = Seconds(lat_us * kUs);
    c.predicted =
        Seconds((lat_us + bytes.bytes() / (1000.0 * bus * kCollNetChainRatio)) * kUs);
    return c;
  }
  if (algorithm == Algorithm::CollNetDirect) {
    // Scatter and broadcast straight between GPUs and heads, one round trip to the SHARP
    // switch. NCCL's 0.85 from Hopper on is charged as the Tree's 0.92 is; its GPU/NIC factor
    // is not: the plan's heads carry the other GPUs' parts over the simulated links.
    const double bus = bus_bandwidth.bytes_per_second() / 1e9;  // GB/s: channels × bwIntra
    const std::uint32_t ppn = ranks / nodes;
    const double inter = ppn == 1 ? kHwLat[static_cast<int>(LinkClass::Net)][kTree][kSimple]
                                  : kCollNetDirectNetLat;
    const double leg = std::min(1U, ppn - 1) * kCollNetDirectHopLat +
                       (ppn - 1) * kCollNetDirectArityLat;
    const double share = options.gpu >= GpuGeneration::Hopper ? kCollNetDirectHopperShare : 1.0;
    c.base = Seconds(0.0);
    c.per_step_intra = Seconds(leg * kUs);
    c.per_step_inter = Seconds(inter / 2.0 * kUs);
    c.inter_steps = nodes > 1 ? 2 : 0;
    c.steps = (ppn > 1 ? 2 : 0) + c.inter_steps;
    c.protocol_factor = 1.0;
    const double heads = std::max(1U, options.channels);  // the graph's channels: its heads
    c.channel_factor = collnet_channel_share(options, heads);
    c.bandwidth_factor = share * c.channel_factor;
    c.bandwidth_factor_net = c.bandwidth_factor;
    // NCCL's prediction: its GPU/NIC factor over the graph's channels (heads).
    double factor = ppn / heads;
    factor -= (factor - 1.0) / 2.0;
    const double nccl_bus = bus / factor * share;
    const double lat_us = 2.0 * leg + (nodes > 1 ? inter : 0.0);
    c.latency = Seconds(lat_us * kUs);
    c.predicted =
        Seconds((lat_us + bytes.bytes() / (1000.0 * nccl_bus * kCollNetChainRatio)) * kUs);
    return c;
  }
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
    if ((algorithm == Algorithm::Nvls || algorithm == Algorithm::NvlsTree ||
         algorithm == Algorithm::CollNetChain || algorithm == Algorithm::CollNetDirect) &&
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
