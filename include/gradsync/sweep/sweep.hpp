// Sweeps (examples/sweeps/README.md): one base scenario and the points to run it at. A point
// is a list of `--set key=value` overrides (the CLI's --set, topology_overrides.* included)
// and a stable id.
//
//   base: ../../scenarios/resnet50-pcie-2node-10gbe.yaml   # relative to the sweep file
//   zip:                                     # lists walked together (equal lengths)
//     model.hidden: [1024, 2048]
//     model.params: [335e6, 1.3e9]
//   grid:                                    # cartesian product
//     topology_overrides.nodes: [1, 2, 4]
//     sync.algorithm: [ring, tree]
//
// Order of points (deterministic): zip rows outermost, then the grid keys in file order, the
// last one varying fastest (nested loops as written). With only a grid, point 0 takes every
// key's first value. Columns (results.csv) follow the same key order: zip keys, then grid keys.
//
// Point ids read "p00042-1a2b3c4d": the index, zero-padded to 5 digits (a sweep holds at most
// 100000 points), then 32 bits of FNV-1a (with MurmurHash3's finalizer) over the point's sets
// sorted by key ("key=value\n").
// The hash ties a stored result to the values it was run with: resuming after the sweep file
// changed never reuses a result for other values, and merging finds the same point in two
// shards by its id.
//
// Pure data and functions (model layer); load_sweep_file is in the config layer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "gradsync/units/config_error.hpp"

namespace gradsync {

inline constexpr std::size_t kMaxSweepPoints = 100000;

// One swept key and its values, as written in the sweep file.
struct SweepAxis {
  std::string key;                   // dotted scenario key, e.g. "topology_overrides.nodes"
  SourceMark key_mark;               // where the key is written
  std::vector<std::string> values;   // scalars as written ("2", "ring", "25MiB")
  std::vector<SourceMark> value_marks;
};

struct SweepSet {
  std::string key;
  std::string value;
  [[nodiscard]] std::string to_arg() const { return key + "=" + value; }  // a --set argument
  friend bool operator==(const SweepSet&, const SweepSet&) = default;
};

struct SweepPoint {
  std::size_t index = 0;
  std::string id;               // "p00042-1a2b3c4d"
  std::vector<SweepSet> sets;   // one per swept key, in column order
};

struct SweepSpec {
  std::string file;                 // the sweep file, as given
  std::string name;                 // `name:`, or the file's stem
  std::filesystem::path base;       // the base scenario, resolved against the sweep file
  SourceMark base_mark;
  std::vector<SweepAxis> zip;       // walked together
  std::vector<SweepAxis> grid;      // cartesian product

  // Swept keys in column order: zip keys, then grid keys.
  [[nodiscard]] std::vector<std::string> keys() const;
  // Number of points (at most kMaxSweepPoints once loaded).
  [[nodiscard]] std::size_t point_count() const;
  // Point `index` (< point_count()).
  [[nodiscard]] SweepPoint point(std::size_t index) const;
  [[nodiscard]] std::vector<SweepPoint> points() const;
};

// "p00042-1a2b3c4d" for point `index` with these sets (the hash ignores the order of `sets`).
[[nodiscard]] std::string sweep_point_id(std::size_t index, const std::vector<SweepSet>& sets);

// `--shard I/N`: runs the points whose index mod N == I. I is 0-based (0 <= I < N), as Slurm's
// SLURM_ARRAY_TASK_ID with --array=0-(N-1) and Kubernetes' JOB_COMPLETION_INDEX are.
struct SweepShard {
  std::uint32_t index = 0;
  std::uint32_t count = 1;
  [[nodiscard]] bool contains(std::size_t point_index) const {
    return point_index % count == index;
  }
  [[nodiscard]] std::string to_string() const;  // "I/N"
};
// Parses "I/N"; ConfigError at "--shard TEXT" when malformed or out of range.
[[nodiscard]] SweepShard parse_sweep_shard(const std::string& text);

// Config layer (sim/config/sweep_loader.cpp). Every problem is a ConfigError at
// file:line:col: unknown keys, no grid:/zip:, empty lists, values that are not scalars, a key
// swept twice, zip lists of unequal lengths, more than kMaxSweepPoints points, a missing base.
[[nodiscard]] SweepSpec load_sweep_file(const std::filesystem::path& path);
[[nodiscard]] SweepSpec load_sweep_text(const std::string& text, const std::string& display_name);

// Loads the base scenario, then the base with point 0's sets (no simulation): a broken base
// fails every point, and so does a swept key the scenario does not have — both are reported
// as ConfigErrors (an unknown key at its position in the sweep file). A bad *value* is left to
// its points: it may be valid in some combinations, and a failed point is recorded, not fatal.
void check_sweep_keys(const SweepSpec& spec);
// Loads the base with each point's sets (scenario and topology after its overrides; no
// simulation): the first point that is not a valid scenario is a ConfigError at the position of
// its value in the sweep file (a value rejected on its own), or of its first value (a
// combination the scenario rejects), naming the point. `progress` is called with the number
// checked so far.
void check_sweep_points(const SweepSpec& spec, const std::vector<SweepPoint>& points,
                        const std::function<void(std::size_t)>& progress = {});

}  // namespace gradsync
