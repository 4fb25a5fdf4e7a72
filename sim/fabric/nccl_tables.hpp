// NCCL 2.30.7's tuner tables, restated: the constants of NCCL's cost model shared by the
// per-primitive lookups (nccl_latency.cpp) and the cost of one collective (nccl_cost.cpp).
// Internal to sim/fabric; nccl_model.hpp says what the engine does with them.
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
//   - PAT and the symmetric-memory kernels: gradsync has no such plans (NVLS in one NVSwitch
//     domain, NVLSTree across servers, CollNetChain and CollNetDirect are modelled: see kNvls*
//     and kCollNet* below);
//   - numPipeOps (aggregated launches): one collective at a time here.
#pragma once

#include "gradsync/fabric/nccl_model.hpp"

namespace gradsync::nccl_tables {

inline constexpr int kLL = 0;
inline constexpr int kLL128 = 1;
inline constexpr int kSimple = 2;
inline constexpr int kTree = 0;
inline constexpr int kRing = 1;

// baseLatencies[algorithm][protocol], µs.
inline constexpr double kBaseLat[2][3] = {
    {6.8, 14.0, 8.4},  // Tree
    {6.6, 14.0, 8.4},  // Ring
};
// hwLatencies[link class][algorithm][protocol], µs per hop.
inline constexpr double kHwLat[3][2][3] = {
    {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}},   // NVLink: Tree, Ring
    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}},    // PCI
    {{5.0, 8.5, 14.0}, {2.7, 4.0, 14.0}},  // NET
};
// llMaxBws[row][index2], GB/s: row = GPU generation on one node, CPU (Intel 0 / AMD 1) across
// nodes; index2 = 0 (1 node), 1 (2 nodes), 2 (more).
inline constexpr double kLlMaxBw[4][3] = {
    {39.0, 39.0, 20.4},           // Volta (1 node) / Intel (multi-node)
    {87.7, 22.5, 19.0},           // Ampere / AMD
    {141.0, 45.0, 35.0},          // Hopper
    {2 * 141.0, 2 * 45.0, 2 * 35.0},  // Blackwell
};
// Per-channel caps, GB/s, [generation][index2].
inline constexpr double kPerChRingLL128Bw[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {40.0, 40.0, 40.0}};
inline constexpr double kPerChTreeLL128Bw[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
inline constexpr double kPerChTreeBw[4][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
// treeCorrectionFactor[protocol][log2(bytes / 64)], applied to Tree AllReduce below 2^23 · 64 B.
inline constexpr double kTreeCorrection[3][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0,
     1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0,
     1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
};
inline constexpr double kLL128RingShare = 0.92;             // "120.0/128.0" in NCCL's comment, 0.92 used
inline constexpr double kLL128TreeShareOneNode = 7.0 / 9.0;
inline constexpr double kLL128TreeShareMultiNode = 120.0 / 128.0;
inline constexpr double kTreeShare = 0.92;
inline constexpr double kTreeLLDivisor = 3.8;
inline constexpr double kRingLLShare = 0.5;  // LL: 8 B of data per 16 B line (data + flag)
inline constexpr double kRingPlateauAmpereUp = 1.4;  // Ring/Simple multi-node AllReduce latency ×
inline constexpr double kRingPlateauVolta = 1.9;

inline constexpr double kUs = 1e-6;

// NVLS (NVLink SHARP, Simple only). NCCL 2.30.7 cost_model.cc: baseLatencies[NVLS] = 0 for
// every protocol; hwLatencies[NVLINK][NVLS][Simple] = 25 µs, [NET][NVLS][Simple] = 18 µs.
// NCCL charges the NVLink hop once per collective in one node; gradsync's
// NVLS plan has two legs per chunk (GPU → NVSwitch push, NVSwitch → GPU pull), so each leg is
// charged half of it and the critical path pays 25 µs.
inline constexpr double kNvlsBaseLat = 0.0;
inline constexpr double kNvlsNvlinkHopLat = 25.0;
inline constexpr double kNvlsNetHopLat = 18.0;
// NVLSTree (Simple only): base 0, hwLatencies[NVLINK][NVLS_TREE] = 25 µs, [NET][NVLS_TREE] =
// 20.9 µs (same file); latency = 25 + 2·log2i(nodes)·20.9 µs, the NVLink hop once and
// the network hop per tree level up and down. gradsync's NVLSTree plan has four NVLink legs per
// chunk on its critical path (push, delivery, store, multicast), each charged a quarter of it.
inline constexpr double kNvlsTreeNetHopLat = 20.9;

// CollNetChain (Simple only; NCCL_COLLNET_ENABLE=1 with a SHARP plugin): base 0,
// hwLatencies[NVLINK][COLLNET_CHAIN][Simple] = [PCI] = 2.8 µs, [NET] = 30 µs (same file);
// tuning.cc: latency = 2·(ppn − 1)·intraLat + interLat (interLat: Tree's NET Simple hop, 14 µs,
// with one GPU per node), bandwidth nChannels × the graph's bwIntra whatever the node count,
// algorithm bandwidth half of it (the "ratio .5" of non-ring algorithms). gradsync's plan
// crosses the network twice per chunk (head → SHARP switch and back), each leg charged half
// of interLat.
inline constexpr double kCollNetChainHopLat = 2.8;
inline constexpr double kCollNetChainNetLat = 30.0;
inline constexpr double kCollNetChainRatio = 0.5;
// CollNetDirect (Simple only, NVSwitch servers): base 0, hwLatencies[NVLINK][COLLNET_DIRECT]
// = [PCI] = 3.7 µs, [NET] = 31 µs; tuning.cc: latency = 2·(min(1, ppn − 1)·intraLat +
// (ppn − 1)·0.4 µs of "arity serialization") + interLat; bandwidth nChannels × bwIntra of its
// graph (one channel per head GPU with a NIC, at most NCCL_MAX_DIRECT_ARITY + 1 = 8), divided
// by the GPU/NIC factor f − (f − 1)/2 with f = ppn/nChannels, × 0.85 from Hopper on; algorithm
// bandwidth half of it. gradsync's plan: two GPU legs (scatter, broadcast) and two network
// legs per part, each charged half of NCCL's intra and inter terms.
inline constexpr double kCollNetDirectHopLat = 3.7;
inline constexpr double kCollNetDirectNetLat = 31.0;
inline constexpr double kCollNetDirectArityLat = 0.4;
inline constexpr double kCollNetDirectHopperShare = 0.85;
inline constexpr std::uint32_t kCollNetDirectMaxHeads = 8;

inline int algo_row(Algorithm a) { return a == Algorithm::Tree ? kTree : kRing; }
inline int proto_col(NcclProtocol p) { return static_cast<int>(p); }

}  // namespace gradsync::nccl_tables
