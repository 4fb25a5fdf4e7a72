// Writing an imported trace as a scenario (trace_scenario.hpp).
#include "gradsync/trace/trace_scenario.hpp"

#include <cctype>

#include <fmt/format.h>

namespace gradsync {
namespace {

std::string us(double v) { return fmt::format("{:.3f}us", v); }

std::string elements_list(const std::vector<double>& t) {
  std::string out;
  for (std::size_t i = 0; i < t.size(); ++i) out += fmt::format("{}{:.0f}", i ? ", " : "", t[i]);
  return out;
}

// A layer name safe in a YAML flow mapping.
std::string plain_name(const std::string& n) {
  std::string out;
  for (char c : n)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.') ? c : '_';
  return out.substr(0, 60);
}

}  // namespace

std::string trace_scenario_yaml(const TraceWorkload& w, const TraceScenarioOptions& o) {
  const std::string from = fmt::format("from {}", o.trace);
  std::string y;
  y += fmt::format("# Written by gradsync import-trace {} (rank {}, {} format): the mean of {} "
                   "step(s), {}{}.\n",
                   o.trace, o.rank, w.format == TraceFormat::Kineto ? "Kineto" : "legacy",
                   w.steps.size(), w.steps.front(),
                   w.steps.size() > 1 ? " … " + w.steps.back() : "");
  y += fmt::format("# Traced step {} = forward {} + backward {} + waiting for gradients {} + "
                   "optimizer {} + other {} (not replayed).\n",
                   us(w.step_us), us(w.forward_us), us(w.backward_us), us(w.wait_us),
                   us(w.optimizer_us), us(w.other_us));
  for (const std::string& n : w.notes) y += "# note: " + n + "\n";
  y += fmt::format("name: {}\n", o.name);
  if (o.topology.empty())
    y += "topology: TOPOLOGY.yaml      # set this: the cluster to replay the step on "
         "(gradsync import-trace --topology)\n";
  else
    y += fmt::format("topology: {}\n", o.topology);
  y += fmt::format("gpus: {}                      # {}: {}\n", w.world_size, from,
                   w.world_size_source);
  y += "model:\n";
  y += fmt::format("  grad_dtype: {}            # {}: {}\n", to_string(w.grad_dtype), from,
                   w.dtype_source);
  y += fmt::format("  # {}: one layer per stretch of backward that ends with gradients ready "
                   "(AccumulateGrad), named by its longest backward function, in forward order; "
                   "tensors: {}. Forward: {}.\n",
                   from, w.tensor_source, w.forward_source);
  y += "  layers:\n";
  double backward = 0.0;
  for (const TraceLayer& l : w.layers) backward += l.backward_us;
  for (std::size_t i = w.layers.size(); i-- > 0;) {
    const TraceLayer& l = w.layers[i];
    double params = 0.0;
    for (double t : l.tensors) params += t;
    std::vector<double> registration(l.tensors.rbegin(), l.tensors.rend());
    const double fwd = l.forward_us ? *l.forward_us
                       : backward > 0.0 ? w.forward_us * l.backward_us / backward
                                        : 0.0;
    y += fmt::format("    - {{name: g{}.{}, params: {:.0f}, tensors: [{}], forward: {}, "
                     "backward: {}}}\n",
                     i, plain_name(l.name), params, elements_list(registration), us(fwd), us(l.backward_us));
  }
  y += "compute:\n";
  y += fmt::format("  optimizer: {}          # {}: Optimizer.step# + Optimizer.zero_grad# spans\n",
                   us(w.optimizer_us), from);
  y += fmt::format("  samples_per_micro_batch: {}   # not in a trace (--samples)\n", o.samples);
  y += "training: {accumulation: 1, steps: 1}\n";
  y += "sync:\n";
  y += "  strategy: allreduce\n";
  y += "  overlap: bucketed\n";
  y += fmt::format("  # {}: c10d::allreduce_ launches (ready_at: from the start of backward); "
                   "bytes: {}\n",
                   from, w.size_source);
  y += "  buckets:\n";
  const double bpe = bytes_per_element(w.grad_dtype);
  for (const TraceBucket& b : w.buckets) {
    y += fmt::format("    - {{bytes: {:.0f}B, ready_at: {}}}", b.elements * bpe, us(b.ready_us));
    if (b.measured_us)
      y += fmt::format("   # {} gradients; measured all-reduce {} ({})", b.tensors,
                       us(*b.measured_us), w.measured_source);
    else
      y += fmt::format("   # {} gradients", b.tensors);
    y += "\n";
  }
  return y;
}

}  // namespace gradsync
