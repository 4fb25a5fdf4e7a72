// `gradsync estimate`'s options as the user typed them, turned into an EstimateRequest
// (estimate.hpp): each value parsed with its unit (units.hpp), counts and shares checked
// against the ranges estimate_sync() accepts. A bad value is bad input: ConfigError at
// "gradsync estimate OPTION" with what was wrong.
#pragma once

#include <string>

#include "gradsync/report/estimate.hpp"

namespace gradsync {

// The text of each option; an empty optional one keeps EstimateRequest's default.
struct EstimateArguments {
  std::string params;         // --params: 7e9, 7B, 350M
  std::string dtype;          // --dtype: fp32 | fp16 | bf16 | fp8
  std::string bandwidth;      // --bandwidth: a rate with its unit
  std::string latency;        // --latency: a time with its unit
  std::string gpus;           // --gpus: a whole count
  std::string efficiency;     // --efficiency: (0, 1], default kDefaultEstimateEfficiency
  std::string accumulation;   // --accumulation
  std::string ps_servers;     // --ps-servers
  std::string gpus_per_node;  // --gpus-per-node: divides --gpus
  std::string intra_bandwidth;  // --intra-bandwidth
  std::string compute;        // --compute: a time with its unit
};

// Throws ConfigError at "gradsync estimate --OPTION" for the first bad value, in the order
// of the fields above.
[[nodiscard]] EstimateRequest estimate_request(const EstimateArguments& arguments);

}  // namespace gradsync
