// `gradsync merge DIR... -o DIR`: joins the outputs of sweep shards (or of interrupted and
// resumed runs) into one results.jsonl and results.csv (README.md, Commands), each point exactly once.
// A point found in several folders must hold the same result (its wall time aside); a
// conflicting duplicate means the folders come from different sweeps or gradsync versions, and
// is an error. The merge itself is merge_sweep_results() (sweep_merge.hpp); this file prints
// its summary.
//
// Exit codes: 0 every point of the sweep is there and ran; 2 bad input (a folder that is not a
// sweep output, folders of different sweeps, conflicting duplicates); 4 merged, but points are
// missing (a shard did not finish: rerun it with --resume, then merge again) or failed.
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "gradsync/sweep/sweep_merge.hpp"

namespace gradsync::cli {
namespace {

struct MergeCliOptions {
  std::vector<std::string> inputs;
  std::string out_dir;
  bool json = false;
};

void merge(const MergeCliOptions& o) {
  const MergeSummary m = merge_sweep_results(o.inputs, o.out_dir);
  if (o.json) {
    std::cout << nlohmann::ordered_json{{"dir", m.dir},          {"inputs", o.inputs},
                                        {"points", m.points},    {"sweep_points", m.sweep_points},
                                        {"missing", m.missing},  {"failed", m.failed},
                                        {"duplicates", m.duplicates}}
                     .dump(2)
              << '\n';
  } else {
    std::cout << fmt::format("merged {} points from {} folders into {} ({} failed, {} missing, "
                             "{} duplicates dropped)\n",
                             m.points, o.inputs.size(),
                             (std::filesystem::path(m.dir) / "results.csv").string(), m.failed,
                             m.missing, m.duplicates);
    if (m.missing > 0)
      std::cout << fmt::format("missing point indexes: {}{} (rerun their shards with --resume)\n",
                               fmt::join(m.missing_indexes, ", "),
                               m.missing > m.missing_indexes.size() ? ", …" : "");
  }
  std::cout.flush();
  if (m.missing > 0 || m.failed > 0) throw ExitStatus{4};
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
