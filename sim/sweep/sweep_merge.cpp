// Sweep outputs merged into one results folder (sweep_merge.hpp).
#include "gradsync/sweep/sweep_merge.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "gradsync/units/config_error.hpp"
#include "sweep_results.hpp"

namespace gradsync {

namespace fs = std::filesystem;
using sweep::PointRecord;

MergeSummary merge_sweep_results(const std::vector<std::string>& inputs,
                                 const std::string& out_dir_text) {
  if (out_dir_text.empty())
    throw ConfigError(SourceMark{"gradsync merge -o", 0, 0},
                      "the results folder is empty: give a folder (it is created)");
  const fs::path out_dir = out_dir_text;
  std::error_code ec;
  if (fs::is_directory(sweep::points_dir(out_dir), ec))
    throw ConfigError(SourceMark{out_dir.string(), 0, 0},
                      "is a sweep's own output folder (it has points/); merge into another folder");

  std::optional<sweep::Manifest> manifest;
  std::string manifest_dir;
  std::map<std::string, PointRecord> by_id;
  std::map<std::size_t, std::string> id_of_index;
  MergeSummary summary;
  summary.dir = out_dir.string();
  for (const std::string& input : inputs) {
    const fs::path dir = input;
    if (const auto m = sweep::read_manifest(dir)) {
      if (!manifest) {
        manifest = m;
        manifest_dir = input;
      } else if (m->keys != manifest->keys || m->points != manifest->points) {
        throw ConfigError(
            SourceMark{(dir / "sweep.json").string(), 0, 0},
            fmt::format("holds another sweep ({} points over {}) than {} ({} points over {})",
                        m->points, fmt::join(m->keys, ", "), manifest_dir, manifest->points,
                        fmt::join(manifest->keys, ", ")));
      }
    }
    for (PointRecord& r : sweep::read_results_dir(dir)) {
      if (const auto it = id_of_index.find(r.index); it != id_of_index.end() && it->second != r.id)
        throw ConfigError(SourceMark{r.origin(), 0, 0},
                          fmt::format("point {} is {} here but {} in {}: the folders hold "
                                      "different sweeps",
                                      r.index, r.id, it->second, by_id.at(it->second).origin()));
      const std::string id = r.id;
      const auto [it, inserted] = by_id.try_emplace(id, std::move(r));  // moves only if new
      if (!inserted) {
        if (it->second.digest != r.digest)  // the records without wall_s differ
          throw ConfigError(SourceMark{r.origin(), 0, 0},
                            fmt::format("conflicting results for point {}: it differs from {} "
                                        "(different sweeps, base files or gradsync versions?)",
                                        r.id, it->second.origin()));
        ++summary.duplicates;
        continue;
      }
      id_of_index.emplace(it->second.index, it->second.id);  // r was moved into by_id
    }
  }

  std::vector<PointRecord> records;
  for (auto& [id, r] : by_id) records.push_back(std::move(r));
  std::sort(records.begin(), records.end(),
            [](const PointRecord& a, const PointRecord& b) { return a.index < b.index; });
  std::vector<std::string> keys;
  if (manifest) {
    keys = manifest->keys;
  } else if (!records.empty()) {
    const auto first = records.front().load();  // kept alive: the loop walks into it
    for (const auto& [k, v] : first["sets"].items()) keys.push_back(k);
  }

  fs::create_directories(out_dir, ec);
  if (ec)
    throw EnvironmentError(out_dir.string(), "cannot create the folder: " + ec.message());
  const std::size_t total = manifest ? manifest->points : records.size();
  sweep::write_results(out_dir, keys, records);
  sweep::Manifest merged = manifest.value_or(sweep::Manifest{});
  merged.keys = keys;
  merged.points = total;
  merged.shard = std::nullopt;
  sweep::write_manifest(out_dir, merged);

  for (const PointRecord& r : records)
    if (!r.ok) ++summary.failed;
  if (manifest)
    for (std::size_t i = 0; i < total && summary.missing_indexes.size() < 10; ++i)
      if (!id_of_index.count(i)) summary.missing_indexes.push_back(i);
  summary.points = records.size();
  summary.sweep_points = total;
  summary.missing = total > records.size() ? total - records.size() : 0;
  return summary;
}

}  // namespace gradsync
