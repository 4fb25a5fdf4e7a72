// Caches of simulated collectives keyed by tuples whose last element is the message size in
// bytes: collectives of nearly one size (DDP's buckets of a transformer differ by a few biases
// and norms: 4h² + h and 4h² + 3h elements) share one simulation, its time and link bytes
// scaled with the bytes. The error is below the tolerance: only the latency part does not grow
// with the size. Internal to the scenario runner.
#pragma once

#include <cstddef>
#include <tuple>

#include "gradsync/engine/simulation.hpp"

namespace gradsync::detail {

// Sizes within this share of each other share a simulation.
inline constexpr double kSameSize = 1e-3;

// The entry of `cache` whose key equals `key` but for a size within kSameSize of key's, or
// cache.end().
template <typename Map>
auto find_nearby_size(Map& cache, const typename Map::key_type& key) {
  constexpr std::size_t last = std::tuple_size_v<typename Map::key_type> - 1;
  auto low = key;
  std::get<last>(low) = std::get<last>(key) * (1 - kSameSize);
  auto it = cache.lower_bound(low);
  if (it == cache.end()) return it;
  auto prefix = it->first;
  std::get<last>(prefix) = std::get<last>(key);
  if (prefix != key || std::get<last>(it->first) > std::get<last>(key) * (1 + kSameSize))
    return cache.end();
  return it;
}

// A nearby size's timing for `factor` × its bytes: time and link bytes scaled.
inline PlanTiming scaled_timing(const PlanTiming& t, double factor) {
  PlanTiming out = t;
  out.time = t.time * factor;
  for (double& b : out.bytes_a_to_b) b *= factor;
  for (double& b : out.bytes_b_to_a) b *= factor;
  return out;
}

}  // namespace gradsync::detail
