// Internal to sim/config: the model and compute sections of a scenario, and the value readers
// the other sections share (counts, bucket sizes, rates, per-micro-batch times).
#pragma once

#include <optional>
#include <string>

#include "gradsync/scenario/scenario.hpp"
#include "gradsync/topology/topology.hpp"
#include "gradsync/units/units.hpp"
#include "yaml_reader.hpp"

namespace gradsync::config {

// A compute time (compute.forward/backward/optimizer, a layer's forward/backward): at most an
// hour per micro-batch, beyond which it is a unit typo (a 175B-parameter model's forward pass on
// one sample takes well under a second on one GPU).
inline constexpr double kMaxComputeSeconds = 3600.0;

// A count of parameters: a number, or one with K, M, B or T (parse_param_count: "7B", "350M").
[[nodiscard]] double count_of(const MapReader& r, const std::string& key, bool allow_zero);
// A bucket size between 1 KiB and 1 TiB; `fallback` when absent.
[[nodiscard]] Bytes bucket_size(const MapReader& r, const std::string& key, Bytes fallback);
// A rate above zero.
[[nodiscard]] BytesPerSecond positive_rate(const MapReader& r, const std::string& key);
// A time per micro-batch of at most kMaxComputeSeconds, when given.
[[nodiscard]] std::optional<Seconds> opt_compute_time(const MapReader& r, const std::string& key);

// compute: as written; forward/backward may come from the layers instead.
struct ComputeDraft {
  std::optional<Seconds> forward, backward;
  ComputeSpec spec;
  // compute: {mfu: 0.4} or {tflops: 400}: forward/backward from the model's FLOPs once the
  // topology's GPU is known (derive_compute); the layers are split with placeholder totals.
  std::optional<double> mfu, tflops;
  bool optimizer_given = false;
  [[nodiscard]] bool from_flops() const { return mfu || tflops; }
};

[[nodiscard]] ComputeDraft read_compute(const MapReader& top);
// model: a preset or an explicit layer list, with each layer's compute shared out of `compute`.
[[nodiscard]] ModelSpec read_model(const MapReader& top, ComputeDraft& compute);
// compute: {mfu | tflops}: forward, backward and optimizer from the model's FLOPs and the
// topology's GPU (notes in sc.notes).
void derive_compute(const MapReader& top, const ComputeDraft& c, const Topology& topo, Scenario& sc);

}  // namespace gradsync::config
