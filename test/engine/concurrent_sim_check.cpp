// Plans run together (Simulation::run_together) against plans run alone:
//   concurrent_sim_check TOPOLOGY.yaml [--cfg=...]
// on a topology of two or more servers:
//   - one plan run together with nothing is the plan run alone (1e-6);
//   - rings on the GPUs of two different servers, inside each server, share no link: each
//     takes its time alone (1e-6);
//   - two identical rings over every GPU at 256 MiB split every link: each takes as long as
//     one ring of twice the bytes (1e-3; bandwidth-bound, same latency);
//   - a ring inside server 0 with a ring across every server: each at least its time alone;
//   - a two-phase plan (tree) with a ring: its phases chain (time at least alone, finite).
// Prints one line per case; exits 1 on any failure.
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "gradsync/collective/collective.hpp"
#include "gradsync/config/topology_loader.hpp"
#include "gradsync/engine/simulation.hpp"
#include "sim_check.hpp"

using namespace gradsync;
using sim_check::same;

namespace {

struct Job {
  Plan plan;
  std::vector<DeviceId> devices;
};

Job ring_over(const Topology& topo, const std::vector<DeviceId>& devices, Bytes bytes,
              Algorithm algorithm = Algorithm::Ring) {
  CollectiveRequest r;
  r.algorithm = algorithm;
  r.ranks = static_cast<std::uint32_t>(devices.size());
  r.ranks_per_node = ranks_per_node(topo, devices);
  r.node_sizes = node_blocks(topo, devices);
  r.channels = default_ring_channels(topo, devices, r.ranks_per_node);
  r.bytes = bytes;
  return {plan_collective(r, Fidelity::Flow), devices};
}

}  // namespace

int main(int argc, char** argv) try {
  const auto input = sim_check::read_input(argc, argv, "concurrent_sim_check");
  if (!input) return 2;
  const Topology& topo = input->file.topology;
  const std::vector<std::string>& args = input->simgrid_args;
  const auto gpus = static_cast<std::uint32_t>(topo.gpus().size());
  const std::vector<DeviceId> all = place_ranks(topo, gpus);
  const std::uint32_t ppn = ranks_per_node(topo, all);
  if (ppn < 2 || gpus / ppn < 2) {
    std::fprintf(stderr, "concurrent_sim_check: needs two or more servers of two or more GPUs\n");
    return 2;
  }
  const std::vector<DeviceId> server0(all.begin(), all.begin() + ppn);
  const std::vector<DeviceId> server1(all.begin() + ppn, all.begin() + 2 * ppn);
  const Bytes big(256.0 * 1048576.0);

  const Job everywhere = ring_over(topo, all, big);
  const Job twice = ring_over(topo, all, big * 2.0);
  const Job local0 = ring_over(topo, server0, big);
  const Job local1 = ring_over(topo, server1, big);
  const Job tree = ring_over(topo, all, Bytes(4.0 * 1048576.0), Algorithm::Tree);
  std::vector<std::pair<DeviceId, DeviceId>> pairs;
  for (const Job* j : {&everywhere, &twice, &local0, &local1, &tree}) {
    const auto p = device_pairs(j->plan, j->devices);
    pairs.insert(pairs.end(), p.begin(), p.end());
  }
  Simulation sim(topo, args);
  sim.build(pairs);
  sim.set_symmetry(false);
  auto alone = [&](const Job& j) { return sim.run_plan(j.plan, j.devices, Fidelity::Flow).time.seconds(); };
  auto together = [&](std::initializer_list<const Job*> jobs) {
    std::vector<PlanRun> runs;
    for (const Job* j : jobs) runs.push_back({&j->plan, &j->devices});
    std::vector<double> out;
    for (Seconds s : sim.run_together(runs)) out.push_back(s.seconds());
    return out;
  };

  int failed = 0, cases = 0;
  // a and b: times (s), or ratios to the time alone (ratio).
  auto report = [&](bool ok, const char* name, double a, double b, bool ratio = false) {
    ++cases;
    if (!ok) ++failed;
    if (ratio)
      std::printf("%s %s: x%.4f, x%.4f of alone\n", ok ? "ok  " : "FAIL", name, a, b);
    else
      std::printf("%s %s: %.9g us, %.9g us\n", ok ? "ok  " : "FAIL", name, a * 1e6, b * 1e6);
  };
  const double t_all = alone(everywhere), t_twice = alone(twice), t_l0 = alone(local0),
               t_l1 = alone(local1), t_tree = alone(tree);
  {
    const auto t = together({&everywhere});
    report(same(t[0], t_all, 1e-6), "one plan together = alone", t[0], t_all);
  }
  {
    const auto t = together({&local0, &local1});
    report(same(t[0], t_l0, 1e-6) && same(t[1], t_l1, 1e-6),
           "rings in two servers: each as alone", t[0], t[1]);
  }
  {
    const auto t = together({&everywhere, &everywhere});
    report(same(t[0], t_twice, 1e-3) && same(t[1], t_twice, 1e-3),
           "two rings over every GPU: each as one ring of twice the bytes", t[0], t_twice);
  }
  {
    const auto t = together({&local0, &everywhere});
    report(t[0] >= t_l0 * (1 - 1e-9) && t[1] >= t_all * (1 - 1e-9) &&
               (t[0] > t_l0 * 1.001 || t[1] > t_all * 1.001),
           "ring in server 0 with a ring across servers: both at least alone, one slower",
           t[0] / t_l0, t[1] / t_all, true);
  }
  {
    const auto t = together({&tree, &everywhere});
    report(std::isfinite(t[0]) && t[0] >= t_tree * (1 - 1e-9) && t[1] >= t_all * (1 - 1e-9),
           "tree (phases chained) with a ring: both at least alone", t[0] / t_tree,
           t[1] / t_all, true);
  }
  std::printf("%d passed, %d failed\n", cases - failed, failed);
  return failed == 0 ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "concurrent_sim_check: %s\n", e.what());
  return 2;
}
