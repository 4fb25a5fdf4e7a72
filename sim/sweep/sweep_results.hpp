// Results of a sweep on disk (README.md, Commands), shared by `gradsync sweep` and `gradsync merge`.
//
// DIR/points/ID.json   one record per finished point: the source of truth. Written to a temp
//                      file in the same folder, fsync'ed, renamed over ID.json, and the folder
//                      fsync'ed: a reader (or a resumed sweep) sees the whole record or none,
//                      whatever kills the sweep and wherever it is (rename is atomic on NFS and
//                      Lustre too, where O_APPEND across clients is not).
// DIR/results.jsonl    the records, one per line. While the sweep runs, each finished record is
//                      also appended with a single write() under O_APPEND (tail -f works); at the
//                      end, and when a sweep resumes, the file is regenerated from points/,
//                      sorted by point index (temp file + rename), so a line torn by a crash
//                      never survives.
// DIR/results.csv      one row per point: a column per swept key, then the scalar metrics of
//                      `run --json` in its order, then point, ok, error. Regenerated like
//                      results.jsonl.
// DIR/sweep.json       what the folder holds: sweep name, files, swept keys, points in the
//                      sweep, shard. merge checks its inputs against each other with it.
//
// A record: {"point": ID, "index": N, "sets": {key: value, ...}, "ok": bool, "error": text or
// null, "exit_code": worker's exit code, "wall_s": seconds the worker ran, "metrics": the
// `run --json` object or null}.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gradsync/sweep/sweep.hpp"

namespace gradsync::sweep {

using Json = nlohmann::ordered_json;

// A stored record, as the sweep and merge keep it in memory: a 100000-point sweep must not
// hold 100000 parsed `run --json` objects (~30 KB each as nlohmann::json). The record stays on
// disk, as one line of `source` at `offset`; it is read again (one at a time) to write
// results.jsonl and results.csv or to compare with a baseline. ~200 bytes each in memory.
struct PointRecord {
  std::string id;
  std::size_t index = 0;
  bool ok = false;
  std::string error;            // when !ok
  std::uint64_t digest = 0;     // of the record without wall_s: same result, same digest
  std::string source;           // the file holding the record as one line
  std::uint64_t offset = 0;     // where that line starts in `source`
  std::uint64_t length = 0;     // its length, without the line break
  int line = 0;                 // its line number in `source` (0: the whole file)

  [[nodiscard]] std::string origin() const;  // "DIR/points/ID.json" or "DIR/results.jsonl:12"
  [[nodiscard]] std::string read() const;    // the line (ConfigError when it is gone)
  [[nodiscard]] Json load() const;           // the record
};

[[nodiscard]] Json make_record(const SweepPoint& point, bool ok, const std::string& error,
                               int exit_code, double wall_s, Json metrics);

[[nodiscard]] std::filesystem::path points_dir(const std::filesystem::path& dir);
// Writes DIR/points/ID.json atomically and returns it as a stored record.
[[nodiscard]] PointRecord store_point(const std::filesystem::path& dir, const Json& record);
// Records in DIR/points/ (temp files are skipped; `remove_temp` deletes them), sorted by index.
// A file that is not a record (cannot happen through rename, but disks fail) is reported in
// `bad`.
[[nodiscard]] std::vector<PointRecord> read_points(const std::filesystem::path& dir,
                                                   bool remove_temp,
                                                   std::vector<std::string>* bad = nullptr);
// Records of a results folder: points/ when it exists, else results.jsonl (merge output).
// ConfigError (file:line) for a line that is not a record.
[[nodiscard]] std::vector<PointRecord> read_results_dir(const std::filesystem::path& dir);

// Rewrites DIR/results.jsonl and DIR/results.csv from `records` (sorted by index here),
// streaming: each record is read from its source twice (jsonl + metric columns, then csv).
void write_results(const std::filesystem::path& dir, const std::vector<std::string>& keys,
                   std::vector<PointRecord> records);

struct Manifest {
  std::string name;
  std::string sweep;                // the sweep file
  std::string base;                 // the base scenario
  std::vector<std::string> keys;    // swept keys, in column order
  std::size_t points = 0;           // points in the whole sweep (all shards)
  std::optional<SweepShard> shard;  // the share this folder holds; none = every point
};
void write_manifest(const std::filesystem::path& dir, const Manifest& m);
// nullopt when DIR/sweep.json does not exist; ConfigError when it is not a manifest.
[[nodiscard]] std::optional<Manifest> read_manifest(const std::filesystem::path& dir);

// A swept value as results.csv writes it: a string as is, null empty, others as JSON.
[[nodiscard]] std::string scalar_text(const Json& v);

}  // namespace gradsync::sweep
