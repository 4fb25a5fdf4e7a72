// Flow fidelity's exact reductions (sim/engine/flow_symmetry.hpp) against the full replay:
//   flow_symmetry_sim_check TOPOLOGY.yaml [--cfg=...]
// runs ring (NIC channels and twice as many: uniform multiplicity), tree, NVLSTree where the
// topology has it, and a ring under random placement (symmetry broken), each at flow fidelity
// with the reductions on and off on the same platform, and requires the same time (1e-6: merged
// flows of nearly equal size finish together) and the same per-link bytes. The reference is
// also replayed in a child process on a platform that keeps every link (no implied links
// dropped, sim/platform/implied_links.hpp; SimGrid holds one platform per process), and must
// give the same times. Prints one line per case with the SimGrid flows each replay started;
// exits 1 on any difference.
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "gradsync/collective/collective.hpp"
#include "gradsync/config/topology_loader.hpp"
#include "gradsync/engine/simulation.hpp"
#include "sim_check.hpp"

using namespace gradsync;
using sim_check::same;

namespace {

struct Case {
  std::string name;
  CollectiveRequest request;
  std::vector<DeviceId> devices;
};

}  // namespace

int main(int argc, char** argv) try {
  const auto input = sim_check::read_input(argc, argv, "flow_symmetry_sim_check");
  if (!input) return 2;
  const Topology& topo = input->file.topology;
  const std::vector<std::string>& args = input->simgrid_args;

  const auto gpus = static_cast<std::uint32_t>(topo.gpus().size());
  const std::vector<DeviceId> in_order = place_ranks(topo, gpus);
  const std::uint32_t ppn = ranks_per_node(topo, in_order);
  CollectiveRequest base;
  base.ranks = gpus;
  base.ranks_per_node = ppn;
  base.node_sizes = node_blocks(topo, in_order);
  base.channels = default_ring_channels(topo, in_order, ppn);
  base.bytes = Bytes(256.0 * 1048576.0);

  std::vector<Case> cases;
  cases.push_back({"ring", base, in_order});
  CollectiveRequest doubled = base;
  doubled.channels = std::min<std::uint32_t>(2 * base.channels, 64);
  cases.push_back({"ring, 2 channels per NIC", doubled, in_order});
  CollectiveRequest tree = base;
  tree.algorithm = Algorithm::Tree;
  cases.push_back({"tree", tree, in_order});
  try {
    CollectiveRequest nvlstree = base;
    nvlstree.algorithm = Algorithm::NvlsTree;
    cases.push_back({"nvlstree", nvlstree,
                     in_switch_devices(topo, in_order, ppn, Algorithm::NvlsTree).devices});
  } catch (const std::exception&) {
    // no NVLSTree on this topology
  }
  PlacementOptions random;
  random.kind = PlacementKind::Random;
  random.seed = 7;
  CollectiveRequest scattered = base;
  scattered.ranks_per_node = 1;
  scattered.node_sizes.clear();
  cases.push_back({"ring, random placement", scattered, place_ranks(topo, gpus, random)});

  std::vector<Plan> plans;
  std::vector<std::pair<DeviceId, DeviceId>> pairs;
  for (const Case& c : cases) {
    plans.push_back(plan_collective(c.request, Fidelity::Flow));
    const auto p = device_pairs(plans.back(), c.devices);
    pairs.insert(pairs.end(), p.begin(), p.end());
  }
  // Every link kept, every flow replayed: in a child, which sends back each case's time.
  int channel[2];
  if (::pipe(channel) != 0) throw std::runtime_error("pipe failed");
  const pid_t child = ::fork();
  if (child < 0) throw std::runtime_error("fork failed");
  if (child == 0) {
    ::close(channel[0]);
    Simulation all_links(topo, args);
    all_links.set_drop_implied_links(false);
    all_links.set_symmetry(false);
    all_links.build(pairs);
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const double t = all_links.run_plan(plans[i], cases[i].devices, Fidelity::Flow).time.seconds();
      if (::write(channel[1], &t, sizeof t) != sizeof t) ::_exit(3);
    }
    ::_exit(0);
  }
  ::close(channel[1]);
  std::vector<double> kept(cases.size(), -1.0);
  for (double& t : kept)
    if (::read(channel[0], &t, sizeof t) != sizeof t) t = -1.0;
  ::close(channel[0]);
  int status = 0;
  ::waitpid(child, &status, 0);

  Simulation sim(topo, args);
  sim.build(pairs);
  int failed = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    sim.set_symmetry(false);
    const PlanTiming full = sim.run_plan(plans[i], cases[i].devices, Fidelity::Flow);
    sim.set_symmetry(true);
    const PlanTiming reduced = sim.run_plan(plans[i], cases[i].devices, Fidelity::Flow);
    bool ok = same(reduced.time.seconds(), full.time.seconds(), 1e-6) &&
              same(full.time.seconds(), kept[i], 1e-9);
    for (std::size_t l = 0; l < full.bytes_a_to_b.size(); ++l)
      ok = ok && same(reduced.bytes_a_to_b[l] + 1.0, full.bytes_a_to_b[l] + 1.0, 1e-9) &&
           same(reduced.bytes_b_to_a[l] + 1.0, full.bytes_b_to_a[l] + 1.0, 1e-9);
    if (!ok) ++failed;
    std::printf("%s %s: %.9g us with %zu flows, %.9g us with all %zu, %.9g us with every link\n",
                ok ? "ok  " : "FAIL", cases[i].name.c_str(), reduced.time.seconds() * 1e6,
                reduced.flows, full.time.seconds() * 1e6, full.flows, kept[i] * 1e6);
  }
  std::printf("%zu passed, %d failed\n", cases.size() - failed, failed);
  return failed == 0 ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "flow_symmetry_sim_check: %s\n", e.what());
  return 2;
}
