// Internal to sim/config: the training, sync and parallel sections of a scenario, and the
// checks of them against the model, the topology and the GPUs used.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gradsync/scenario/scenario.hpp"
#include "gradsync/topology/topology.hpp"
#include "yaml_reader.hpp"

namespace gradsync::config {

[[nodiscard]] TrainingSpec read_training(const MapReader& top);
[[nodiscard]] SyncSpec read_sync(const MapReader& top);
// sync.buckets against the model's gradients and its backward.
void check_explicit_buckets(const MapReader& top, const Scenario& sc);
// parallel:, with notes for keys a --set of parallel.data set aside (`data_from_set`).
[[nodiscard]] ParallelSpec read_parallel(const MapReader& top, bool data_from_set,
                                         std::vector<std::string>& notes);
// Checks of parallel: against the model, the training loop, the sync and the GPUs used.
void check_parallel(const MapReader& top, const Scenario& sc, std::uint32_t gpus,
                    const Topology& topo);

}  // namespace gradsync::config
