// import-trace's inputs besides the trace (trace_inputs.hpp).
#include "gradsync/trace/trace_inputs.hpp"

#include <algorithm>
#include <regex>

#include <fmt/format.h>

#include "gradsync/units/config_error.hpp"

namespace gradsync {

namespace fs = std::filesystem;

fs::path rank_trace_file(const std::string& trace, std::optional<std::uint32_t> rank) {
  std::error_code ec;
  if (!fs::is_directory(trace, ec)) return trace;
  const std::uint32_t want = rank.value_or(0);
  const std::regex rank_digits(R"((?:rank[-_]?|[^0-9])(\d+)(?:\.[a-z.]+)?$)",
                               std::regex::icase);
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(trace, ec))
    if (entry.is_regular_file()) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    std::smatch m;
    const std::string name = f.filename().string();
    if (std::regex_search(name, m, rank_digits) && std::stoul(m[1].str()) == want) return f;
  }
  throw ConfigError(SourceMark{"gradsync import-trace TRACE", 0, 0},
                    fmt::format("{} is a directory and no file in it is named for rank {} "
                                "(e.g. rank-{}.json)", trace, want, want));
}

std::vector<double> backward_tensors(const std::vector<LayerSpec>& layers) {
  std::vector<double> out;
  for (std::size_t i = layers.size(); i-- > 0;) {
    const LayerSpec& l = layers[i];
    if (!(l.params > 0.0)) continue;
    if (l.tensors.empty()) out.push_back(l.params);
    for (std::size_t k = l.tensors.size(); k-- > 0;)
      if (l.tensors[k] > 0.0) out.push_back(l.tensors[k]);
  }
  return out;
}

std::string scenario_topology_path(const std::string& topology, const fs::path& scenario_file) {
  std::error_code ec;
  if (!fs::is_regular_file(topology, ec))
    throw ConfigError(SourceMark{"gradsync import-trace --topology", 0, 0},
                      fmt::format("cannot open '{}'", topology));
  const fs::path rel = fs::relative(fs::absolute(topology), scenario_file.parent_path(), ec);
  return fs::path(topology).is_absolute() || ec || rel.empty()
             ? fs::path(topology).lexically_normal().string()
             : rel.string();
}

}  // namespace gradsync
