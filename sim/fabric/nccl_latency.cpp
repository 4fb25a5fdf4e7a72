// NCCL 2.30.7's tuner, restated: the per-primitive numbers of NCCL's cost model (link classes,
// steps, base and per-hop latencies, per-channel bandwidth caps, NVLS chunks, which protocols
// run), read from NCCL's tables (nccl_tables.hpp); the cost of one collective made of them is
// nccl_cost.cpp. See nccl_model.hpp for what the engine does with them.
#include <algorithm>
#include <cmath>
#include <string>

#include "gradsync/fabric/nccl_model.hpp"
#include "nccl_tables.hpp"

namespace gradsync {

using namespace nccl_tables;

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
  if (algorithm == Algorithm::CollNetChain || algorithm == Algorithm::CollNetDirect)
    return Seconds(0.0);
  return Seconds(kBaseLat[algo_row(algorithm)][proto_col(protocol)] * kUs);
}

Seconds nccl_hw_latency(LinkClass link, Algorithm algorithm, NcclProtocol protocol) {
  if (algorithm == Algorithm::Nvls) {
    if (protocol != NcclProtocol::Simple || link == LinkClass::Pci) return Seconds(0.0);
    return Seconds((link == LinkClass::NvLink ? kNvlsNvlinkHopLat : kNvlsNetHopLat) * kUs);
  }
  if (algorithm == Algorithm::CollNetChain) {
    if (protocol != NcclProtocol::Simple) return Seconds(0.0);
    return Seconds((link == LinkClass::Net ? kCollNetChainNetLat : kCollNetChainHopLat) * kUs);
  }
  if (algorithm == Algorithm::CollNetDirect) {
    if (protocol != NcclProtocol::Simple) return Seconds(0.0);
    return Seconds((link == LinkClass::Net ? kCollNetDirectNetLat : kCollNetDirectHopLat) * kUs);
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

}  // namespace gradsync
