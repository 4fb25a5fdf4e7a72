// Points of a sweep (examples/sweeps/README.md): deterministic order, stable ids, shards. Pure code.
#include <algorithm>
#include <charconv>
#include <cstdint>

#include <fmt/format.h>

#include "gradsync/sweep/sweep.hpp"

namespace gradsync {

std::vector<std::string> SweepSpec::keys() const {
  std::vector<std::string> out;
  for (const SweepAxis& a : zip) out.push_back(a.key);
  for (const SweepAxis& a : grid) out.push_back(a.key);
  return out;
}

std::size_t SweepSpec::point_count() const {
  std::size_t n = zip.empty() ? 1 : zip.front().values.size();
  for (const SweepAxis& a : grid) {
    // Saturate instead of overflowing: the loader rejects anything above kMaxSweepPoints.
    if (!a.values.empty() && n > kMaxSweepPoints * 10 / a.values.size()) return kMaxSweepPoints * 10;
    n *= a.values.size();
  }
  return n;
}

SweepPoint SweepSpec::point(std::size_t index) const {
  SweepPoint p;
  p.index = index;
  // Mixed radix: the last grid key is the fastest digit, zip rows the slowest.
  std::vector<std::size_t> digit(grid.size());
  std::size_t rest = index;
  for (std::size_t i = grid.size(); i-- > 0;) {
    digit[i] = rest % grid[i].values.size();
    rest /= grid[i].values.size();
  }
  for (const SweepAxis& a : zip) p.sets.push_back({a.key, a.values.at(rest)});
  for (std::size_t i = 0; i < grid.size(); ++i)
    p.sets.push_back({grid[i].key, grid[i].values[digit[i]]});
  p.id = sweep_point_id(index, p.sets);
  return p;
}

std::vector<SweepPoint> SweepSpec::points() const {
  std::vector<SweepPoint> out;
  const std::size_t n = point_count();
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) out.push_back(point(i));
  return out;
}

std::string sweep_point_id(std::size_t index, const std::vector<SweepSet>& sets) {
  std::vector<const SweepSet*> sorted;
  for (const SweepSet& s : sets) sorted.push_back(&s);
  std::sort(sorted.begin(), sorted.end(),
            [](const SweepSet* a, const SweepSet* b) { return a->key < b->key; });
  // FNV-1a, 64 bits (Fowler/Noll/Vo; offset basis and prime from the reference), mixed, folded
  // to 32.
  std::uint64_t h = 14695981039346656037ull;
  auto feed = [&h](const std::string& text) {
    for (const char c : text) {
      h ^= static_cast<unsigned char>(c);
      h *= 1099511628211ull;
    }
  };
  for (const SweepSet* s : sorted) feed(s->key + "=" + s->value + "\n");
  // MurmurHash3's fmix64 finalizer: FNV-1a alone changes little when only the last characters
  // differ, and ids that differ in one digit are easy to misread.
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  const auto folded = static_cast<std::uint32_t>(h ^ (h >> 32));
  return fmt::format("p{:05d}-{:08x}", index, folded);
}

std::string SweepShard::to_string() const { return fmt::format("{}/{}", index, count); }

SweepShard parse_sweep_shard(const std::string& text) {
  const SourceMark at{"--shard " + text, 0, 0};
  const std::size_t slash = text.find('/');
  auto number = [&](std::string_view s, std::uint32_t& out) {
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return !s.empty() && ec == std::errc() && ptr == s.data() + s.size();
  };
  SweepShard shard;
  if (slash == std::string::npos ||
      !number(std::string_view(text).substr(0, slash), shard.index) ||
      !number(std::string_view(text).substr(slash + 1), shard.count))
    throw ConfigError(at, "expected I/N, e.g. --shard 0/4 (I counts from 0, like "
                          "SLURM_ARRAY_TASK_ID and JOB_COMPLETION_INDEX)");
  if (shard.count == 0) throw ConfigError(at, "the number of shards must be at least 1");
  if (shard.index >= shard.count)
    throw ConfigError(at, fmt::format("shard {} of {} does not exist: shards count from 0, so "
                                      "I is 0 … {}",
                                      shard.index, shard.count, shard.count - 1));
  return shard;
}

}  // namespace gradsync
