// libFuzzer harness: PyTorch profiler traces. parse_profiler_trace, then analyze_ddp_trace,
// then trace_scenario_yaml: what `gradsync import-trace` does short of writing the file.
// As a user would: --world-size 2 when the trace does not say (legacy format), and, for a
// trace without tensor shapes, a --model with as many tensors as the first step has gradients.
// Bad input must be a ConfigError with a one-line "file:line:col: error: ..." message.
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_contract.hpp"
#include "gradsync/trace/profiler_trace.hpp"
#include "gradsync/trace/trace_scenario.hpp"
#include "gradsync/trace/trace_workload.hpp"

namespace {

void import(const gradsync::ProfilerTrace& trace, const gradsync::TraceImportOptions& options) {
  try {
    const gradsync::TraceWorkload workload = gradsync::analyze_ddp_trace(trace, options);
    gradsync::TraceScenarioOptions scenario;
    scenario.name = "fuzz";
    scenario.trace = "fuzz.json";
    (void)gradsync::trace_scenario_yaml(workload, scenario);
  } catch (const gradsync::ConfigError& e) {
    gradsync::fuzz::check(e);
  }
}

// A stand-in for --model on traces without shapes: one tensor per AccumulateGrad of a step
// (AccumulateGrad events / DistributedDataParallel.forward events); 0 when it cannot tell.
std::size_t gradients_per_step(const gradsync::ProfilerTrace& trace) {
  std::size_t grads = 0, forwards = 0;
  for (const auto& e : trace.events) {
    if (!e.input_elements.empty()) return 0;  // the trace has shapes: no --model needed
    if (e.name == "torch::autograd::AccumulateGrad") ++grads;
    if (e.name == "DistributedDataParallel.forward") ++forwards;
  }
  return forwards == 0 ? 0 : grads / forwards;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > gradsync::fuzz::kMaxInput) return 0;
  gradsync::ProfilerTrace trace;
  try {
    trace = gradsync::parse_profiler_trace(gradsync::fuzz::text_of(data, size), "fuzz.json");
  } catch (const gradsync::ConfigError& e) {
    gradsync::fuzz::check(e);
    return 0;
  }
  gradsync::TraceImportOptions options;
  if (!trace.world_size) options.world_size = 2;
  import(trace, options);
  if (const std::size_t n = gradients_per_step(trace); n > 0 && n <= 100'000) {
    options.model_tensors.assign(n, 65536.0);
    import(trace, options);
  }
  return 0;
}
