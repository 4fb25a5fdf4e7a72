// RTT-biased sharing (tcp_model.hpp, rtt_bias; sim/fabric/README.md, Ethernet (TCP)), one
// SimGrid simulation per process:
//   tcp_rtt_bias_sim_check TOPOLOGY.yaml RTT_BIAS(0|1) [--cfg=...]
// On test/data/tcp/rtt_bias_two_senders{,_ib}.yaml (ports of rate C): rank 0 (route 2 us) and
// rank 1 (route 4 us) each send S to rank 2 at once; when rank 0's transfer ends it sends S to
// the idle rank 3. Under rtt_bias rank 0 gets k/(k+1) of rank 2's port, k = RTT ratio = 2
// (rates go as 1/RTT), so it ends at (k+1)/k · S/C = 1.5 S/C and the plan at 2.5 S/C; with
// plain max-min (rtt_bias off, or InfiniBand with the TCP model forced on) the port splits
// 1:1, rank 0 ends at 2 S/C and the plan at 3 S/C. Prints the time and exits 1 when it is not
// the expected closed form within 1 %.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "gradsync/collective/collective.hpp"
#include "gradsync/config/topology_loader.hpp"
#include "gradsync/engine/simulation.hpp"

using namespace gradsync;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s TOPOLOGY.yaml RTT_BIAS(0|1) [--cfg=...]\n", argv[0]);
    return 2;
  }
  TopologyFile file = load_topology_file(argv[1]);
  const bool ethernet = file.topology.tcp().has_value();
  // InfiniBand gets the TCP model forced on as well: it must not change its sharing.
  TcpOptions tcp = file.topology.tcp().value_or(TcpOptions{});
  tcp.rtt_bias = std::string(argv[2]) == "1";
  file.topology.set_tcp(tcp);
  std::vector<std::string> args;
  for (int i = 3; i < argc; ++i) args.emplace_back(argv[i]);

  constexpr double kBytes = 64.0 * 1048576.0;  // S
  Plan plan;
  plan.op = CollectiveOp::AllReduce;
  plan.ranks = 4;
  plan.contributors = 4;
  plan.total_bytes = Bytes(kBytes * 3);
  plan.chunk_bytes = {Bytes(kBytes)};
  const TransferId first = plan.add(0, 2, 0, TransferKind::Copy, std::initializer_list<TransferId>{});
  plan.add(1, 2, 0, TransferKind::Copy, std::initializer_list<TransferId>{});
  plan.add(0, 3, 0, TransferKind::Copy, std::initializer_list<TransferId>{first});
  plan.steps = 2;

  const auto& gpus = file.topology.gpus();
  std::vector<DeviceId> ranks(gpus.begin(), gpus.begin() + 4);
  double rate = 0.0;  // C (B/s): every link has the same effective bandwidth
  for (const Link& l : file.topology.links()) rate = l.effective_bandwidth().bytes_per_second();
  Simulation sim(file.topology, args);
  const double t = sim.run_plan(plan, ranks, Fidelity::Step).time.seconds();
  const double k = ethernet && tcp.rtt_bias ? 2.0 : 1.0;  // rank 0's share : rank 1's share
  const double want = std::max(2.0, (k + 1.0) / k + 1.0) * kBytes / rate;
  const double rel = std::abs(t - want) / want;
  std::printf("%s %s rtt_bias=%d: time %.6f s, want %.6f s = %.2f S/C (rel %.2e)\n",
              rel <= 0.01 ? "ok  " : "FAIL", ethernet ? "ethernet" : "infiniband",
              tcp.rtt_bias ? 1 : 0, t, want, want * rate / kBytes, rel);
  return rel <= 0.01 ? 0 : 1;
}
