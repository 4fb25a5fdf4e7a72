// libFuzzer harness: topology YAML (load_topology_text), then what `gradsync topo` computes
// from a loaded topology (summarize, format_summary, to_dot) when it is small enough to stay
// fast. Bad input must be a ConfigError with a one-line "file:line:col: error: ..." message.
#include <cstdint>
#include <string>

#include "fuzz_contract.hpp"
#include "gradsync/config/topology_loader.hpp"
#include "gradsync/topology/topology_summary.hpp"

namespace {
// Loading is bounded by the loader's own limits (262144 GPUs); the summary's max-flow and
// BFS are not needed on big graphs to find parser bugs, and would dominate the time.
constexpr std::size_t kMaxSummaryDevices = 4096;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > gradsync::fuzz::kMaxInput) return 0;
  const std::string text = gradsync::fuzz::text_of(data, size);
  try {
    const gradsync::TopologyFile loaded = gradsync::load_topology_text(text, "fuzz.yaml");
    const gradsync::Topology& topology = loaded.topology;
    if (topology.devices().size() > kMaxSummaryDevices) return 0;
    const gradsync::TopologySummary summary = gradsync::summarize(topology);
    (void)gradsync::format_summary(summary);
    (void)gradsync::to_dot(topology);
  } catch (const gradsync::ConfigError& e) {
    gradsync::fuzz::check(e);
  }
  return 0;
}
