// What `gradsync estimate --json` prints (README.md, Commands; docs/reference.md): the
// back-of-the-envelope estimate (estimate.hpp) as one JSON object. The text form is
// format_estimate() in estimate.hpp. A pure function: it prints nothing.
#pragma once

#include <nlohmann/json.hpp>

#include "gradsync/report/estimate.hpp"

namespace gradsync {

// The request (params, dtype, gpus, bandwidth, latency, efficiency, accumulation, ...), the
// gradient bytes, the naive time range and each algorithm's closed-form time, per micro-batch
// cost, algbw and busbw; with a compute time the step share of the sync with no overlap and
// whether it is communication-bound. Options not given are null; keys in a fixed order.
[[nodiscard]] nlohmann::ordered_json estimate_json(const SyncEstimate& estimate);

}  // namespace gradsync
