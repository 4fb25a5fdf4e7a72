// import-trace's text (trace_report.hpp).
#include "gradsync/report/trace_report.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

namespace gradsync {
namespace {

std::string ms(double us) { return format_time(Seconds(us * 1e-6)); }

}  // namespace

std::string trace_summary_text(const TraceWorkload& w, const std::string& trace,
                               std::uint32_t rank) {
  std::string out;
  double params = w.total_elements();
  out += fmt::format(
      "{}: rank {} of {}, {} format, {} step(s) averaged ({}{})\n", trace, rank, w.world_size,
      w.format == TraceFormat::Kineto ? "Kineto" : "legacy", w.steps.size(), w.steps.front(),
      w.steps.size() > 1 ? " … " + w.steps.back() : "");
  out += fmt::format("  model: {} layers, {:.0f} parameters, {} gradients, {} buckets\n",
                     w.layers.size(), params, to_string(w.grad_dtype), w.buckets.size());
  out += fmt::format("  step {} = forward {} + backward {} + waiting for gradients {} + "
                     "optimizer {} + other {}\n",
                     ms(w.step_us), ms(w.forward_us), ms(w.backward_us), ms(w.wait_us),
                     ms(w.optimizer_us), ms(w.other_us));
  out += fmt::format("  sizes: {}\n", w.size_source);
  out += fmt::format("  forward: {}\n", w.forward_source);
  for (const std::string& n : w.notes) out += "  note: " + n + '\n';
  return out;
}

std::string trace_comparison_text(const TraceWorkload& w, const ScenarioResult& r,
                                  const std::string& topo) {
  std::string out;
  out += fmt::format("\nbuckets: measured ({}) and simulated on {} ({} GPUs)\n",
                     w.measured_source.empty() ? "not in the trace" : w.measured_source, topo,
                     r.gpus);
  out += fmt::format("  {:>6} {:>11} {:>12} {:>12} {:>12} {:>9}\n", "bucket", "bytes",
                     "ready at", "measured", "simulated", "sim/meas");
  const double bpe = bytes_per_element(w.grad_dtype);
  std::vector<double> ratios;
  for (std::size_t i = 0; i < w.buckets.size() && i < r.collective_times.size(); ++i) {
    const TraceBucket& b = w.buckets[i];
    const double sim = r.collective_times[i].seconds() * 1e6;
    std::string meas = "–", ratio = "–";
    if (b.measured_us && *b.measured_us > 0.0) {
      meas = ms(*b.measured_us);
      ratio = fmt::format("{:.3g}", sim / *b.measured_us);
      ratios.push_back(sim / *b.measured_us);
    }
    out += fmt::format("  {:>6} {:>11} {:>12} {:>12} {:>12} {:>9}\n", i,
                       format_size(Bytes(b.elements * bpe)), ms(b.ready_us), meas, ms(sim),
                       ratio);
  }
  if (!ratios.empty()) {
    std::sort(ratios.begin(), ratios.end());
    out += fmt::format("  median simulated/measured: {:.3g} over {} buckets\n",
                       ratios[ratios.size() / 2], ratios.size());
  }
  const double replayed = w.forward_us + w.backward_us + w.wait_us + w.optimizer_us;
  out += fmt::format(
      "step: traced {} (forward + backward + wait + optimizer {}), simulated {} (exposed "
      "communication {} against {} traced)\n",
      ms(w.step_us), ms(replayed), format_time(r.metrics.step_time),
      format_time(r.metrics.exposed_comm), ms(w.wait_us));
  return out;
}

}  // namespace gradsync
