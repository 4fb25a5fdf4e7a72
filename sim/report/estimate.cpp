// `gradsync estimate`'s model and text report: the α-β closed forms (sim/collective/README.md)
// evaluated on one request, no simulation. See include/gradsync/report/estimate.hpp for the conventions.
#include "gradsync/report/estimate.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <system_error>

#include <fmt/format.h>

#include "gradsync/collective/collective.hpp"

namespace gradsync {

namespace closed_form {

Seconds transfer_time(Bytes bytes, Seconds alpha, BytesPerSecond bandwidth) {
  return bytes / bandwidth + alpha;
}

Seconds ring_allreduce_time(std::uint32_t n, Bytes bytes, Seconds alpha,
                            BytesPerSecond bandwidth) {
  if (n <= 1) return Seconds(0.0);
  const double steps = 2.0 * (n - 1);
  return steps * alpha + (steps / n) * (bytes / bandwidth);
}

Seconds tree_allreduce_time(std::uint32_t n, Bytes bytes, Seconds alpha,
                            BytesPerSecond bandwidth) {
  if (n <= 1) return Seconds(0.0);
  const double height = std::ceil(std::log2(static_cast<double>(n)));
  return 2.0 * height * alpha + 2.0 * (bytes / bandwidth);
}

Seconds parameter_server_time(std::uint32_t workers, std::uint32_t servers, Bytes bytes,
                              Seconds alpha, BytesPerSecond bandwidth) {
  if (servers == 0) throw std::invalid_argument("a parameter server needs at least one server");
  return 2.0 * alpha + (2.0 * workers / servers) * (bytes / bandwidth);
}

Seconds hierarchical_allreduce_time(std::uint32_t n, std::uint32_t gpus_per_node, Bytes bytes,
                                    Seconds alpha, BytesPerSecond intra_bandwidth,
                                    BytesPerSecond inter_bandwidth) {
  if (gpus_per_node == 0 || n % gpus_per_node != 0)
    throw std::invalid_argument(fmt::format(
        "hierarchical AllReduce needs GPUs per node ({}) dividing the GPU count ({})",
        gpus_per_node, n));
  const std::uint32_t nodes = n / gpus_per_node;
  // Inside the node a ring over g GPUs on the full S; across nodes a ring over N nodes on each
  // of the g rails, each carrying S/g.
  return ring_allreduce_time(gpus_per_node, bytes, alpha, intra_bandwidth) +
         ring_allreduce_time(nodes, bytes / gpus_per_node, alpha, inter_bandwidth);
}

}  // namespace closed_form

namespace {

// "7e+09" -> "7e9": counts read like the user typed them.
std::string format_count(double value) {
  std::string text = fmt::format("{:.4g}", value);
  const auto e = text.find('e');
  if (e == std::string::npos) return text;
  std::string exponent = text.substr(e + 1);
  if (!exponent.empty() && exponent.front() == '+') exponent.erase(0, 1);
  const bool negative = !exponent.empty() && exponent.front() == '-';
  if (negative) exponent.erase(0, 1);
  while (exponent.size() > 1 && exponent.front() == '0') exponent.erase(0, 1);
  return text.substr(0, e) + "e" + (negative ? "-" : "") + exponent;
}

// Sizes in decimal units (GB = 1e9 B, as in nccl-tests): "14 GB".
std::string format_size_decimal(Bytes b) {
  static constexpr std::array<std::pair<double, const char*>, 6> kUnits{{
      {1e15, "PB"}, {1e12, "TB"}, {1e9, "GB"}, {1e6, "MB"}, {1e3, "kB"}, {1.0, "B"}}};
  const double v = b.bytes();
  for (const auto& [scale, name] : kUnits)
    if (v >= scale) return fmt::format("{:.4g} {}", v / scale, name);
  return fmt::format("{:.4g} B", v);
}

std::string format_duration(Seconds t) {
  return t.seconds() == 0.0 ? std::string("0 s") : format_time(t);
}

std::string format_optional_rate(const std::optional<BytesPerSecond>& r) {
  return r ? format_rate(*r) : std::string("-");
}

// A share as a percentage to 3 significant digits (0.91234 -> "91.2 %").
std::string percent_3g(double share) { return fmt::format("{:.3g} %", share * 100.0); }

void check_request(const EstimateRequest& r) {
  auto fail = [](const std::string& what) { throw std::invalid_argument(what); };
  if (!(r.params > 0.0) || !(r.params <= kMaxEstimateParams))
    fail(fmt::format("params must be in (0, {:g}]", kMaxEstimateParams));
  if (!(r.bandwidth.bytes_per_second() > 0.0) || !std::isfinite(r.bandwidth.bytes_per_second()))
    fail("bandwidth must be positive");
  if (!(r.latency.seconds() >= 0.0) || !std::isfinite(r.latency.seconds()))
    fail("latency must be non-negative");
  if (r.gpus < 1 || r.gpus > kMaxEstimateGpus)
    fail(fmt::format("gpus must be in [1, {}]", kMaxEstimateGpus));
  if (!(r.efficiency > 0.0) || !(r.efficiency <= 1.0)) fail("efficiency must be in (0, 1]");
  if (r.accumulation < 1) fail("accumulation must be at least 1");
  if (r.ps_servers < 1) fail("ps_servers must be at least 1");
  if (r.gpus_per_node && (*r.gpus_per_node < 1 || r.gpus % *r.gpus_per_node != 0))
    fail("gpus_per_node must divide gpus");
  if (r.intra_bandwidth && !(r.intra_bandwidth->bytes_per_second() > 0.0))
    fail("intra_bandwidth must be positive");
  if (r.compute && !(r.compute->seconds() >= 0.0)) fail("compute must be non-negative");
}

}  // namespace


std::string_view to_string(EstimateAlgorithm algorithm) {
  switch (algorithm) {
    case EstimateAlgorithm::Naive: return "naive";
    case EstimateAlgorithm::Ring: return "ring";
    case EstimateAlgorithm::Tree: return "tree";
    case EstimateAlgorithm::ParameterServer: return "ps";
    case EstimateAlgorithm::Hierarchical: return "hierarchical";
  }
  return "naive";
}

std::vector<const AlgorithmEstimate*> SyncEstimate::rows() const {
  std::vector<const AlgorithmEstimate*> out{&naive, &ring, &tree, &ps};
  if (hierarchical) out.push_back(&*hierarchical);
  return out;
}

SyncEstimate estimate_sync(const EstimateRequest& r) {
  check_request(r);
  SyncEstimate e;
  e.request = r;
  e.grad_bytes = Bytes(r.params * bytes_per_element(r.dtype));
  e.effective_bandwidth = r.bandwidth * r.efficiency;
  if (r.intra_bandwidth) e.effective_intra_bandwidth = *r.intra_bandwidth * r.efficiency;
  if (r.gpus_per_node) e.nodes = r.gpus / *r.gpus_per_node;
  if (r.compute) e.step_compute = *r.compute * static_cast<double>(r.accumulation);

  const Bytes s = e.grad_bytes;
  const Seconds alpha = r.latency;
  const std::uint32_t n = r.gpus;
  const bool alone = n == 1;  // nothing to synchronize
  auto naive_at = [&](double efficiency) {
    return alone ? Seconds(0.0) : closed_form::transfer_time(s, alpha, r.bandwidth * efficiency);
  };
  e.naive_range = TimeRange{naive_at(kTypicalEfficiencyHigh), naive_at(r.efficiency),
                            naive_at(kTypicalEfficiencyLow)};

  auto row = [&](EstimateAlgorithm algorithm, Seconds time, std::uint32_t ranks) {
    AlgorithmEstimate a;
    a.algorithm = algorithm;
    a.time = time;
    a.per_micro_batch = time / static_cast<double>(r.accumulation);
    if (time.seconds() > 0.0) {
      a.algbw = s / time;
      a.busbw = *a.algbw * busbw_factor(CollectiveOp::AllReduce, ranks);
    }
    if (e.step_compute) {
      const Seconds step = *e.step_compute + time;
      a.step_share = step.seconds() > 0.0 ? time / step : 0.0;
      a.communication_bound = *a.step_share > kCommunicationBoundShare;
    }
    return a;
  };
  const BytesPerSecond b = e.effective_bandwidth;
  e.naive = row(EstimateAlgorithm::Naive, e.naive_range.point, n);
  e.ring = row(EstimateAlgorithm::Ring, closed_form::ring_allreduce_time(n, s, alpha, b), n);
  e.tree = row(EstimateAlgorithm::Tree, closed_form::tree_allreduce_time(n, s, alpha, b), n);
  e.ps = row(EstimateAlgorithm::ParameterServer,
             closed_form::parameter_server_time(n, r.ps_servers, s, alpha, b), n);
  if (r.gpus_per_node && e.effective_intra_bandwidth)
    e.hierarchical = row(EstimateAlgorithm::Hierarchical,
                         closed_form::hierarchical_allreduce_time(
                             n, *r.gpus_per_node, s, alpha, *e.effective_intra_bandwidth, b),
                         n);
  return e;
}

std::string format_estimate(const SyncEstimate& e) {
  const EstimateRequest& r = e.request;
  std::string out;
  auto line = [&out](const std::string& text) { out += text + '\n'; };

  line(fmt::format("gradsync estimate: {} parameters x {} ({:g} B per gradient) = {} per sync ({})",
                   format_count(r.params), to_string(r.dtype), bytes_per_element(r.dtype),
                   format_size_decimal(e.grad_bytes), format_size(e.grad_bytes)));
  line(fmt::format("network: {} ({}) per GPU, latency {} per step; efficiency {} -> {} ({}) "
                   "effective",
                   format_rate_bits(r.bandwidth), format_rate(r.bandwidth),
                   format_duration(r.latency), percent_3g(r.efficiency),
                   format_rate_bits(e.effective_bandwidth), format_rate(e.effective_bandwidth)));
  std::string gpus = fmt::format("{} GPU{}", r.gpus, r.gpus == 1 ? "" : "s");
  if (r.gpus_per_node && e.nodes)
    gpus += fmt::format(" ({} node{} x {})", *e.nodes, *e.nodes == 1 ? "" : "s", *r.gpus_per_node);
  if (e.effective_intra_bandwidth)
    gpus += fmt::format(", intra-node {} -> {} effective", format_rate(*r.intra_bandwidth),
                        format_rate(*e.effective_intra_bandwidth));
  line(fmt::format("{}; accumulation {}: one sync per optimizer step{}", gpus, r.accumulation,
                   r.accumulation > 1
                       ? fmt::format(" of {} micro-batches", r.accumulation)
                       : std::string()));
  line("");

  if (r.gpus == 1) {
    line("naive:  1 GPU, nothing to synchronize (0 s)");
  } else {
    line(fmt::format("naive:  S / (B x e) + latency = {} at {}   (typical 50-70 % efficiency: "
                     "{} at 70 % .. {} at 50 %)",
                     format_duration(e.naive_range.point), percent_3g(r.efficiency),
                     format_duration(e.naive_range.low), format_duration(e.naive_range.high)));
  }
  line("");

  const bool amortized = r.accumulation > 1;
  const bool share = e.step_compute.has_value();
  std::string header = fmt::format("{:<13} {:>11}", "algorithm", "time/sync");
  if (amortized) header += fmt::format(" {:>11}", "/micro-b.");
  header += fmt::format(" {:>11} {:>11}", "algbw", "busbw");
  if (share) header += fmt::format(" {:>8}", "of step");
  line(header + "  formula (at " + percent_3g(r.efficiency) + " efficiency)");

  auto formula = [&](EstimateAlgorithm a) -> std::string {
    switch (a) {
      case EstimateAlgorithm::Naive: return "S/B + a  (one transfer; not an AllReduce)";
      case EstimateAlgorithm::Ring: return "2(n-1)a + 2(n-1)/n S/B";
      case EstimateAlgorithm::Tree:
        return "2 ceil(log2 n) a + 2S/B  (NCCL double binary tree, large-message approx.)";
      case EstimateAlgorithm::ParameterServer:
        return fmt::format("2a + 2 S n/(k B), k = {} dedicated server{} (incast)", r.ps_servers,
                           r.ps_servers == 1 ? "" : "s");
      case EstimateAlgorithm::Hierarchical:
        return "2(g-1)a + 2(g-1)/g S/B_intra + 2(N-1)a + 2(N-1)/N S/(g B)";
    }
    return {};
  };
  for (const AlgorithmEstimate* a : e.rows()) {
    std::string text = fmt::format("{:<13} {:>11}", to_string(a->algorithm),
                                   format_duration(a->time));
    if (amortized) text += fmt::format(" {:>11}", format_duration(a->per_micro_batch));
    text += fmt::format(" {:>11} {:>11}", format_optional_rate(a->algbw),
                        format_optional_rate(a->busbw));
    if (share)
      text += fmt::format(" {:>8}", a->step_share ? percent_3g(*a->step_share) : "-");
    line(text + "  " + formula(a->algorithm));
  }
  if (!e.hierarchical)
    line(fmt::format("{:<13} skipped: give {}", "hierarchical",
                     r.gpus_per_node ? "--intra-bandwidth too"
                     : r.intra_bandwidth ? "--gpus-per-node too"
                                         : "--gpus-per-node and --intra-bandwidth"));
  line("");
  line("S = grad bytes, B = bandwidth x efficiency, a = latency per step, n = GPUs.");
  line("naive counts S once; an AllReduce moves ~2(n-1)/n S through each GPU port (see ring).");
  line("busbw = algbw x 2(n-1)/n, nccl-tests' AllReduce convention: compare with all_reduce_perf.");
  if (amortized)
    line(fmt::format("/micro-b.: one sync per {} micro-batches, amortized (time / {}).",
                     r.accumulation, r.accumulation));
  if (share) {
    line(fmt::format("of step: sync / (compute + sync) with no overlap; compute = {} x {} = {} "
                     "per optimizer step.",
                     r.accumulation, format_duration(*r.compute), format_duration(*e.step_compute)));
    line(fmt::format("Above {} the step is communication-bound (rule of thumb): adding GPUs buys "
                     "little;", percent_3g(kCommunicationBoundShare)));
    line("fix the network, overlap, accumulate or compress first.");
    std::string verdicts;
    for (const AlgorithmEstimate* a : e.rows())
      verdicts += fmt::format("{}{} {}", verdicts.empty() ? "" : ", ", to_string(a->algorithm),
                              a->communication_bound ? "communication-bound" : "ok");
    line("verdict: " + verdicts);
  }
  return out;
}

}  // namespace gradsync
