// What `gradsync import-trace` reads besides the trace itself: the file of one rank in a folder
// of per-rank traces, the model's parameter tensors in the order DDP's backward produces their
// gradients (TraceImportOptions::model_tensors, from a model's layers), and the topology as the
// written scenario names it. Bad input is ConfigError at "gradsync import-trace OPTION".
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "gradsync/scenario/scenario.hpp"

namespace gradsync {

// `trace` itself when it is not a folder; else the file in it for `rank` (default 0): the
// first, in name order, whose name ends in the rank's digits (after "rank", "rank-", "rank_"
// or any non-digit, before the extensions: rank-3.json, trace_3.pt.trace.json.gz). ConfigError
// at "gradsync import-trace TRACE" when no file is named for the rank.
[[nodiscard]] std::filesystem::path rank_trace_file(const std::string& trace,
                                                    std::optional<std::uint32_t> rank);

// The elements of `layers`' parameter tensors in backward order: the layers in reverse, each
// layer's tensors in reverse (a layer without tensors is one tensor of its params); layers
// without parameters and empty tensors are skipped.
[[nodiscard]] std::vector<double> backward_tensors(const std::vector<LayerSpec>& layers);

// `topology` as the scenario written at `scenario_file` names it: an absolute path stays
// absolute, a relative one is made relative to the scenario's folder (where the loader
// resolves it). ConfigError at "gradsync import-trace --topology" when it is not a file.
[[nodiscard]] std::string scenario_topology_path(const std::string& topology,
                                                 const std::filesystem::path& scenario_file);

}  // namespace gradsync
