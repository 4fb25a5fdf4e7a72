// `gradsync estimate --json` (estimate_report.hpp): the estimate's numbers as one object.
#include "gradsync/report/estimate_report.hpp"

#include <optional>
#include <string>

namespace gradsync {
namespace {

nlohmann::ordered_json optional_json(const std::optional<double>& v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

}  // namespace

nlohmann::ordered_json estimate_json(const SyncEstimate& e) {
  const EstimateRequest& r = e.request;
  using J = nlohmann::ordered_json;
  J out;
  out["params"] = r.params;
  out["dtype"] = std::string(to_string(r.dtype));
  out["bytes_per_grad"] = bytes_per_element(r.dtype);
  out["grad_bytes"] = e.grad_bytes.bytes();
  out["gpus"] = r.gpus;
  out["bandwidth_GBps"] = r.bandwidth.gigabytes_per_second();
  out["latency_s"] = r.latency.seconds();
  out["efficiency"] = r.efficiency;
  out["efficiency_range"] = {{"low", kTypicalEfficiencyLow}, {"high", kTypicalEfficiencyHigh}};
  out["effective_bandwidth_GBps"] = e.effective_bandwidth.gigabytes_per_second();
  out["accumulation"] = r.accumulation;
  out["naive_time_s"] = {{"low", e.naive_range.low.seconds()},
                         {"point", e.naive_range.point.seconds()},
                         {"high", e.naive_range.high.seconds()}};
  out["ring_time_s"] = e.ring.time.seconds();
  out["tree_time_s"] = e.tree.time.seconds();
  out["ps_servers"] = r.ps_servers;
  out["ps_time_s"] = e.ps.time.seconds();
  out["hierarchical_time_s"] =
      e.hierarchical ? J(e.hierarchical->time.seconds()) : J(nullptr);
  out["gpus_per_node"] = r.gpus_per_node ? J(*r.gpus_per_node) : J(nullptr);
  out["intra_bandwidth_GBps"] =
      r.intra_bandwidth ? J(r.intra_bandwidth->gigabytes_per_second()) : J(nullptr);

  J per_micro = J::object();
  J algbw = J::object();
  J busbw = J::object();
  J share = J::object();
  J bound = J::object();
  for (const AlgorithmEstimate* a : e.rows()) {
    const std::string name(to_string(a->algorithm));
    per_micro[name] = a->per_micro_batch.seconds();
    algbw[name] = a->algbw ? J(a->algbw->gigabytes_per_second()) : J(nullptr);
    busbw[name] = a->busbw ? J(a->busbw->gigabytes_per_second()) : J(nullptr);
    share[name] = optional_json(a->step_share);
    bound[name] = a->communication_bound;
  }
  out["per_micro_batch_s"] = per_micro;
  out["algbw_GBps"] = algbw;
  out["busbw_GBps"] = busbw;
  out["compute_per_micro_batch_s"] = r.compute ? J(r.compute->seconds()) : J(nullptr);
  out["step_compute_time_s"] = e.step_compute ? J(e.step_compute->seconds()) : J(nullptr);
  if (e.step_compute) {
    out["sync_share_no_overlap"] = share;
    out["communication_bound"] = bound;
  } else {
    out["sync_share_no_overlap"] = nullptr;
    out["communication_bound"] = nullptr;
  }
  out["communication_bound_share"] = kCommunicationBoundShare;
  return out;
}

}  // namespace gradsync
