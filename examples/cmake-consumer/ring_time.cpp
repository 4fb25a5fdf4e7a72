// How long a ring AllReduce of 1 GiB takes on every GPU of a topology file, through the
// gradsync library (no CLI): load the file, place one rank per GPU, plan the ring, replay it
// on SimGrid. Prints the time and nccl-tests' bus bandwidth.
#include <cstdio>
#include <exception>

#include "gradsync/config/topology_loader.hpp"
#include "gradsync/units/config_error.hpp"
#include "gradsync/engine/simulation.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: ring_time TOPOLOGY.yaml\n");
    return 2;
  }
  try {
    const gradsync::TopologyFile file = gradsync::load_topology_file(argv[1]);
    const gradsync::Topology& topology = file.topology;
    const auto ranks = gradsync::place_ranks(
        topology, static_cast<std::uint32_t>(topology.gpu_count()));
    gradsync::CollectiveRequest request;
    request.op = gradsync::CollectiveOp::AllReduce;
    request.algorithm = gradsync::Algorithm::Ring;
    request.ranks = static_cast<std::uint32_t>(ranks.size());
    request.ranks_per_node = gradsync::ranks_per_node(topology, ranks);
    request.channels = gradsync::default_ring_channels(topology, ranks, request.ranks_per_node);
    request.bytes = gradsync::Bytes(1073741824.0);
    const gradsync::Plan plan = gradsync::plan_collective(request, gradsync::Fidelity::Auto);
    gradsync::Simulation simulation(topology);
    simulation.build(gradsync::device_pairs(plan, ranks));
    const gradsync::PlanTiming timing = simulation.run_plan(plan, ranks);
    const double seconds = timing.time.seconds();
    const double busbw = request.bytes.bytes() / seconds / 1e9 *
                         gradsync::busbw_factor(request.op, request.ranks);
    std::printf("ring AllReduce 1 GiB on %u GPUs: %.1f us, busbw %.2f GB/s\n", request.ranks,
                seconds * 1e6, busbw);
  } catch (const gradsync::ConfigError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ring_time: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
