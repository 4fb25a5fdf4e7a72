// PFC head-of-line victims (sim/fabric/README.md, RoCE with PFC and ECN), one SimGrid
// simulation per process:
//   roce_victim_sim_check TOPOLOGY.yaml ECN(0|1)
// On the single-switch RoCE star of TOPOLOGY (every server one GPU and one NIC of rate C), ranks
// 1..4 each send S to rank 0 (incast: 4 ingress ports share rank 0's port, C/4 each) and rank 1
// also sends 2S to rank 5 (a victim: its destination is idle, but it shares rank 1's NIC link
// with a congested flow). With ECN (DCQCN, per-flow max-min) the victim gets C - C/4 and the
// plan ends with the incast at 4S/C. With PFC and without ECN the switch pauses rank 1's
// ingress port and the victim delivers the congested flow's C/4 while the incast lasts (S in
// 4S/C). When rank 1's incast flow ends, nothing pauses that port any more: gradsync restarts
// the victim's remaining S at its max-min share C (the RoCE PFC correction's restart rule,
// sim/engine/roce_correction.cpp), so the plan ends at 4S/C + S/C = 5S/C. Prints the time and
// exits 1 when it is not the expected closed form within 1 %.
#include <cmath>
#include <cstdio>
#include <string>

#include "gradsync/collective/collective.hpp"
#include "gradsync/config/topology_loader.hpp"
#include "gradsync/engine/simulation.hpp"

using namespace gradsync;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s TOPOLOGY.yaml ECN(0|1) [--cfg=...]\n", argv[0]);
    return 2;
  }
  TopologyFile file = load_topology_file(argv[1]);
  RoceOptions roce = file.topology.roce().value_or(RoceOptions{});
  roce.pfc = true;
  roce.ecn = std::string(argv[2]) == "1";
  file.topology.set_roce(roce);
  std::vector<std::string> args;
  for (int i = 3; i < argc; ++i) args.emplace_back(argv[i]);

  constexpr double kBytes = 256.0 * 1048576.0;  // S
  Plan plan;
  plan.op = CollectiveOp::AllReduce;
  plan.ranks = 6;
  plan.contributors = 6;
  plan.total_bytes = Bytes(kBytes * 6);
  plan.chunk_bytes = {Bytes(kBytes), Bytes(2 * kBytes)};
  for (std::uint32_t r = 1; r <= 4; ++r) plan.add(r, 0, 0, TransferKind::Copy, std::initializer_list<TransferId>{});
  plan.add(1, 5, 1, TransferKind::Copy, std::initializer_list<TransferId>{});
  plan.steps = 1;

  const auto& gpus = file.topology.gpus();
  std::vector<DeviceId> ranks(gpus.begin(), gpus.begin() + 6);
  double rate = 0.0;  // the NIC rate C (B/s): the smallest effective bandwidth of a GPU's links
  for (const Link& l : file.topology.links())
    if (is_network_fabric(l.fabric))
      rate = rate == 0.0 ? l.effective_bandwidth().bytes_per_second()
                         : std::min(rate, l.effective_bandwidth().bytes_per_second());
  Simulation sim(file.topology, args);
  const double t = sim.run_plan(plan, ranks, Fidelity::Step).time.seconds();
  const double want = (roce.ecn ? 4.0 : 5.0) * kBytes / rate;
  const double rel = std::abs(t - want) / want;
  std::printf("%s ecn=%d: time %.6f s, want %.6f s (rel %.2e)\n", rel <= 0.01 ? "ok  " : "FAIL",
              roce.ecn ? 1 : 0, t, want, rel);
  return rel <= 0.01 ? 0 : 1;
}
