// import-trace's text (include/gradsync/report/trace_report.hpp) on a synthetic workload and result:
// the summary's lines, the buckets' table with the measured and simulated times and their
// ratio, a bucket without a measured time, the median ratio and the step line.
#include <doctest/doctest.h>

#include <string>

#include "gradsync/report/trace_report.hpp"

using namespace gradsync;

namespace {

TraceWorkload workload() {
  TraceWorkload w;
  w.format = TraceFormat::Kineto;
  w.steps = {"ProfilerStep#2", "ProfilerStep#3"};
  w.world_size = 8;
  w.grad_dtype = GradDtype::Fp32;
  w.size_source = "record_param_comms";
  w.measured_source = "NCCL kernels";
  w.step_us = 10000;
  w.forward_us = 3000;
  w.backward_us = 5000;
  w.wait_us = 1000;
  w.optimizer_us = 500;
  w.other_us = 500;
  TraceLayer layer;
  layer.tensors = {1000, 500};
  w.layers = {layer};
  TraceBucket b0;
  b0.elements = 1000;
  b0.ready_us = 100;
  b0.measured_us = 200;
  TraceBucket b1;
  b1.elements = 500;
  b1.ready_us = 300;
  w.buckets = {b0, b1};
  w.notes = {"world size from distributedInfo"};
  return w;
}

}  // namespace

TEST_CASE("trace summary: rank, format, steps, model, step parts, sizes, notes") {
  const std::string text = trace_summary_text(workload(), "rank-0.json", 0);
  CHECK(text.rfind("rank-0.json: rank 0 of 8, Kineto format, 2 step(s) averaged "
                   "(ProfilerStep#2 … ProfilerStep#3)\n",
                   0) == 0);
  CHECK(text.find("  model: 1 layers, 1500 parameters, fp32 gradients, 2 buckets\n") !=
        std::string::npos);
  CHECK(text.find("  step " + format_time(Seconds(0.01)) + " = forward " +
                  format_time(Seconds(0.003))) != std::string::npos);
  CHECK(text.find("  sizes: record_param_comms\n") != std::string::npos);
  CHECK(text.ends_with("  note: world size from distributedInfo\n"));
}

TEST_CASE("trace comparison: measured beside simulated, per bucket and for the step") {
  ScenarioResult r;
  r.gpus = 8;
  r.collective_times = {Seconds(300e-6), Seconds(100e-6)};
  r.metrics.step_time = Seconds(0.012);
  r.metrics.exposed_comm = Seconds(0.002);
  const std::string text = trace_comparison_text(workload(), r, "dgx");
  CHECK(text.rfind("\nbuckets: measured (NCCL kernels) and simulated on dgx (8 GPUs)\n", 0) == 0);
  CHECK(text.find("sim/meas") != std::string::npos);
  CHECK(text.find(" 1.5\n") != std::string::npos);  // bucket 0: 300 us against 200 us
  CHECK(text.find("–") != std::string::npos);        // bucket 1: not measured
  CHECK(text.find("  median simulated/measured: 1.5 over 1 buckets\n") != std::string::npos);
  CHECK(text.ends_with("against " + format_time(Seconds(0.001)) + " traced)\n"));
}
