// Default link efficiencies: the share of a link's line rate that carries payload when a
// topology gives no `efficiency:`. Each value is the busbw that published nccl-tests runs
// reach divided by the bottleneck line rate; rows are ids in test/data/nccl-tests/published.csv.
// The derivations, and the rows that disagree, are in sim/fabric/README.md.
#include "gradsync/fabric/fabric_defaults.hpp"

namespace gradsync {

double default_efficiency(Fabric fabric) {
  switch (fabric) {
    case Fabric::NvLink:
      // Ring busbw / per-GPU-per-direction NVLink rate: GTC-H100-NVL4 370/450 = 0.822,
      // GTC-A100-NVL3 232/300 = 0.773, MLE-A100x8-17179869184 234.89/300 = 0.783,
      // GTC-V100-NVL2 122/150 = 0.813, GTC-B200-NVL5 700/900 = 0.778, GTC-GB200-NVL72
      // 680/900 = 0.756. 0.80 keeps every Ring row within 6 % (0.82 would put A100 up to 6 % and
      // GB200 8.5 % high). NVLS rows (AWS-p5x1-*, *-NVLS) exceed it: they need the NVLS model.
      return 0.80;
    case Fabric::Pcie:
      // Ring busbw / nominal x16 rate per direction: GTC-PCIeGen4 24/32, GTC-PCIeGen5 48/64,
      // GTC-PCIeGen6 96/128, all 0.75. Topologies write the nominal rate (32, 64 GB/s).
      return 0.75;
    case Fabric::Socket:
      // No row isolates UPI/xGMI. Assumed equal to PCIe: cross-socket GPU traffic is PCIe
      // transactions carried over the socket link. Calibrate when data appears.
      return 0.75;
    case Fabric::InfiniBand:
      // busbw / NIC rate: GTC-200G-RDMA 24/25 = 0.96, GTC-400G-RDMA 48/50 = 0.96,
      // GTC-DGXA100-8x200G 192/200 = 0.96, GH-nccltests119-A100-3n-128M 96.45/100 = 0.965,
      // GTC-DGXH100-8x400G 380/400 = 0.95, GH-nccltests252-H100-2x4-ring-* 0.935-0.974.
      return 0.96;
    case Fabric::Roce:
      // No RoCE-only row. The IB value without IB headers (0.96 / (4096/4122) = 0.966)
      // times RoCEv2 framing at a 4096 B MTU (4096/4178 = 0.980) = 0.947. The
      // "IB or RoCE" rows GTC-200G-RDMA and GTC-400G-RDMA (0.96) agree within 1.5 %.
      return 0.95;
    case Fabric::Ethernet:
      // TCP payload per wire byte at a 1500 B MTU: 1448/1538 = 0.941. Measured where the
      // host is not the limit: GH-nccl209-GCP32GbE-2n1g 31.0/32 Gb/s = 0.97,
      // GH-nccl209-GCP32GbE-4n1g 30.6/32 = 0.96; iperf3 92/100 Gb/s (NVIDIA/nccl#209).
      // Host-limited runs (GTC-100GbE-TCP 0.80, GH-nccl209-GCP32GbE-*n8g 0.46-0.71) are
      // left to the Ethernet model's per-host cap, not folded into this value.
      return 0.94;
    case Fabric::Efa:
      // EFA v1 (p4d/p4de, 4 x 100G): AWS-p4dex2-2147483648, a 2-node Tree whose algbw is the
      // inter-node rate, which the Tree carries at NCCL's Tree share 0.92 (tuning.cc):
      // 41.78 / (4 x 12.5 GB/s x 0.92) = 0.908. No row in the shared data pins EFA
      // v2 (p5: its 2-node runs are bound by NVLS inside the server, AWS-p5x2-17179869184
      // gives only >= 0.65) or v3/v4 (p5en, p6): calibrate against a run of yours.
      return 0.91;
    case Fabric::Memory:
      // Sustained / peak DRAM bandwidth: STREAM moves 74-78 % of the DDR wire rate (Copy 77 %,
      // Triad 78 % on DDR4-1600, TI SPRAD45A table 3-2; 73-79 % on another board, TI
      // SPRACV1B). No nccl-tests row chose it; GH-nccl1639-RTX5090x8 checks it.
      return 0.75;
  }
  return 1.0;  // unreachable for valid enum values
}

}  // namespace gradsync
