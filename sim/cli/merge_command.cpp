// `gradsync merge DIR... -o DIR`: joins the outputs of sweep shards (or of interrupted and
// resumed runs) into one results.jsonl and results.csv (README.md, Commands), each point exactly once.
// A point found in several folders must hold the same result (its wall time aside); a
// conflicting duplicate means the folders come from different sweeps or gradsync versions, and
// is an error.
//
// Exit codes: 0 every point of the sweep is there and ran; 2 bad input (a folder that is not a
// sweep output, folders of different sweeps, conflicting duplicates); 4 merged, but points are
// missing (a shard did not finish: rerun it with --resume, then merge again) or failed.
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "../sweep/sweep_results.hpp"
#include "commands.hpp"
#include "gradsync/config_error.hpp"

namespace gradsync::cli {
namespace {

namespace fs = std::filesystem;
using sweep::Json;
using sweep::PointRecord;

struct MergeCliOptions {
  std::vector<std::string> inputs;
  std::string out_dir;
  bool json = false;
};

void merge(const MergeCliOptions& o) {
  if (o.out_dir.empty())
    throw ConfigError(SourceMark{"gradsync merge -o", 0, 0},
                      "the results folder is empty: give a folder (it is created)");
  const fs::path out_dir = o.out_dir;
  std::error_code ec;
  if (fs::is_directory(sweep::points_dir(out_dir), ec))
    throw ConfigError(SourceMark{out_dir.string(), 0, 0},
                      "is a sweep's own output folder (it has points/); merge into another folder");

  std::optional<sweep::Manifest> manifest;
  std::string manifest_dir;
  std::map<std::string, PointRecord> by_id;
  std::map<std::size_t, std::string> id_of_index;
  std::size_t duplicates = 0;
  for (const std::string& input : o.inputs) {
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
        ++duplicates;
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
    for (const auto& [k, v] : records.front().load()["sets"].items()) keys.push_back(k);
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

  std::size_t failed = 0;
  for (const PointRecord& r : records)
    if (!r.ok) ++failed;
  std::vector<std::size_t> missing;
  if (manifest)
    for (std::size_t i = 0; i < total && missing.size() < 10; ++i)
      if (!id_of_index.count(i)) missing.push_back(i);
  const std::size_t missing_count = total > records.size() ? total - records.size() : 0;

  if (o.json) {
    std::cout << Json{{"dir", out_dir.string()},     {"inputs", o.inputs},
                      {"points", records.size()},    {"sweep_points", total},
                      {"missing", missing_count},    {"failed", failed},
                      {"duplicates", duplicates}}
                     .dump(2)
              << '\n';
  } else {
    std::cout << fmt::format("merged {} points from {} folders into {} ({} failed, {} missing, "
                             "{} duplicates dropped)\n",
                             records.size(), o.inputs.size(), (out_dir / "results.csv").string(),
                             failed, missing_count, duplicates);
    if (missing_count > 0)
      std::cout << fmt::format("missing point indexes: {}{} (rerun their shards with --resume)\n",
                               fmt::join(missing, ", "), missing_count > missing.size() ? ", …" : "");
  }
  std::cout.flush();
  if (missing_count > 0 || failed > 0) throw ExitStatus{4};
}

}  // namespace

void add_merge_command(CLI::App& app) {
  auto opts = std::make_shared<MergeCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "merge", "join sweep outputs (shards, resumed runs) into one results.csv/results.jsonl");
  cmd->add_option("dirs", opts->inputs, "sweep output folders")->required();
  cmd->add_option("-o,--output", opts->out_dir, "folder for the merged results")->required();
  cmd->add_flag("--json", opts->json, "print a JSON summary on stdout");
  cmd->callback([opts] { merge(*opts); });
}

}  // namespace gradsync::cli
