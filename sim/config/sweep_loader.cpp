// Sweep files (examples/sweeps/README.md): `base:` (a scenario, relative to the sweep file),
// `grid:` (cartesian product) and/or `zip:` (walked together), optional `name:`. Every mistake is a
// ConfigError at file:line:col; the points themselves are computed by SweepSpec (model layer).
#include <algorithm>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "gradsync/units/bounded_read.hpp"
#include "gradsync/config/scenario_loader.hpp"
#include "gradsync/sweep/sweep.hpp"
#include "yaml_reader.hpp"

namespace gradsync {

namespace {

namespace fs = std::filesystem;
using config::MapReader;
using config::mark_of;

const std::vector<std::string> kSweepKeys{"name", "base", "grid", "zip"};

// A swept key is a dotted scenario key as --set takes it: "sync.algorithm".
void check_key_spelling(const std::string& key, const SourceMark& at, const std::string& section) {
  std::string problem;
  if (key.empty()) problem = "is empty";
  else if (key.find('=') != std::string::npos) problem = "contains '='";
  else if (key.find_first_of(" \t") != std::string::npos) problem = "contains a space";
  else if (key.front() == '.' || key.back() == '.' || key.find("..") != std::string::npos)
    problem = "has an empty part between dots";
  if (!problem.empty())
    throw ConfigError(at, fmt::format("{} key '{}' {}: write a dotted scenario key such as "
                                      "sync.algorithm or topology_overrides.nodes",
                                      section, key, problem));
}

std::vector<SweepAxis> read_axes(const MapReader& top, const std::string& section) {
  const YAML::Node node = top.node(section);
  const std::string& file = top.file();
  if (!node.IsMap())
    throw ConfigError(mark_of(node, file),
                      fmt::format("{} must be a mapping of dotted keys to lists of values, e.g. "
                                  "{{sync.algorithm: [ring, tree]}}",
                                  section));
  std::vector<SweepAxis> axes;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const YAML::Node key = it->first;
    const YAML::Node values = it->second;
    SweepAxis axis;
    axis.key_mark = mark_of(key, file);
    if (!key.IsScalar()) throw ConfigError(axis.key_mark, section + " keys must be dotted keys");
    axis.key = key.Scalar();
    check_key_spelling(axis.key, axis.key_mark, section);
    const std::string what = section + "." + axis.key;
    if (!values.IsDefined() || values.IsNull())
      throw ConfigError(axis.key_mark, fmt::format("{} has no values: give a list, e.g. [1, 2]", what));
    if (!values.IsSequence())
      throw ConfigError(mark_of(values, file),
                        fmt::format("{} must be a list of values, e.g. [{}]", what,
                                    values.IsScalar() ? values.Scalar() : "1, 2"));
    if (values.size() == 0)
      throw ConfigError(mark_of(values, file), fmt::format("{} is an empty list: a swept key needs "
                                                           "at least one value", what));
    for (const YAML::Node& v : values) {
      if (!v.IsScalar())
        throw ConfigError(mark_of(v, file),
                          fmt::format("{}: every value must be a single value (a number, a word, "
                                      "a size such as 25MiB), got {}", what,
                                      v.IsNull() ? "nothing" : v.IsMap() ? "a mapping" : "a list"));
      axis.values.push_back(v.Scalar());
      axis.value_marks.push_back(mark_of(v, file));
    }
    axes.push_back(std::move(axis));
  }
  if (axes.empty())
    throw ConfigError(mark_of(node, file), fmt::format("{} is empty: name at least one key", section));
  return axes;
}

SweepSpec parse_sweep(const std::string& text, const std::string& file) {
  const YAML::Node root = config::parse_yaml(text, file);
  if (!root.IsDefined() || root.IsNull())
    throw ConfigError(SourceMark{file, 1, 1},
                      "empty file: expected a sweep with base: and grid: or zip: "
                      "(examples/sweeps/README.md)");
  const MapReader top(root, file, "", kSweepKeys);
  SweepSpec spec;
  spec.file = file;
  spec.name = top.opt_string("name").value_or(fs::path(file).stem().string());

  const std::string base = top.string("base");
  spec.base_mark = top.mark("base");
  fs::path path(base);
  if (path.is_relative()) path = fs::path(file).parent_path() / path;
  path = path.lexically_normal();
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    top.fail("base", fmt::format("cannot open scenario '{}' (looked for {}; a relative path is "
                                 "relative to the sweep file)", base, path.string()));
  spec.base = path;

  if (!top.has("grid") && !top.has("zip"))
    throw ConfigError(top.mark(), "a sweep needs grid: (cartesian product) or zip: (lists walked "
                                  "together), or both");
  if (top.has("zip")) spec.zip = read_axes(top, "zip");
  if (top.has("grid")) spec.grid = read_axes(top, "grid");

  // A key swept twice (in zip and grid) would give two --set of one key.
  for (const SweepAxis& g : spec.grid)
    for (const SweepAxis& z : spec.zip)
      if (g.key == z.key)
        throw ConfigError(g.key_mark, fmt::format("'{}' is swept twice: in zip ({}) and in grid",
                                                  g.key, z.key_mark.to_string()));

  for (const SweepAxis& z : spec.zip)
    if (z.values.size() != spec.zip.front().values.size())
      throw ConfigError(z.key_mark,
                        fmt::format("zip lists must have equal lengths: '{}' has {} values, '{}' "
                                    "has {}", z.key, z.values.size(), spec.zip.front().key,
                                    spec.zip.front().values.size()));

  const std::size_t points = spec.point_count();
  if (points > kMaxSweepPoints) {
    std::string product;
    if (!spec.zip.empty()) product = fmt::format("{} zip rows", spec.zip.front().values.size());
    for (const SweepAxis& g : spec.grid)
      product += fmt::format("{}{}", product.empty() ? "" : " × ", g.values.size());
    SourceMark at = top.mark();  // the `grid:` (or `zip:`) key itself
    for (auto it = root.begin(); it != root.end(); ++it)
      if (it->first.Scalar() == (top.has("grid") ? "grid" : "zip")) at = mark_of(it->first, file);
    throw ConfigError(at,
                      fmt::format("the sweep has {} points ({}); at most {} are allowed: split "
                                  "it into several sweep files",
                                  points >= kMaxSweepPoints * 10
                                      ? fmt::format("at least {}", kMaxSweepPoints * 10)
                                      : std::to_string(points),
                                  product, kMaxSweepPoints));
  }
  return spec;
}

}  // namespace

SweepSpec load_sweep_file(const std::filesystem::path& path) {
  const std::string file = path.string();
  // A sweep of 100000 points (the most allowed) is at most a few hundred KiB of values: a
  // larger file is refused before yaml-cpp builds a node per value (10^6 values: 0.6 GB).
  constexpr std::size_t kMaxSweepFileBytes = std::size_t{4} << 20;
  return parse_sweep(read_file_bounded(file, kMaxSweepFileBytes, "4 MiB"), file);
}

SweepSpec load_sweep_text(const std::string& text, const std::string& display_name) {
  return parse_sweep(text, display_name);
}

namespace {

const SweepAxis* axis_of(const SweepSpec& spec, const std::string& key) {
  for (const SweepAxis& a : spec.zip)
    if (a.key == key) return &a;
  for (const SweepAxis& a : spec.grid)
    if (a.key == key) return &a;
  return nullptr;
}

// Where in the sweep file point `p` takes its value of `s`.
SourceMark value_mark(const SweepSpec& spec, const SweepSet& s) {
  const SweepAxis* a = axis_of(spec, s.key);
  if (a == nullptr) return SourceMark{spec.file, 0, 0};
  for (std::size_t i = 0; i < a->values.size(); ++i)
    if (a->values[i] == s.value && i < a->value_marks.size()) return a->value_marks[i];
  return a->key_mark;
}

}  // namespace

void check_sweep_points(const SweepSpec& spec, const std::vector<SweepPoint>& points,
                        const std::function<void(std::size_t)>& progress) {
  std::size_t checked = 0;
  for (const SweepPoint& p : points) {
    std::vector<std::string> sets;
    for (const SweepSet& s : p.sets) sets.push_back(s.to_arg());
    try {
      (void)load_scenario_file(spec.base, sets);
    } catch (const ConfigError& e) {
      std::string values;
      for (const SweepSet& s : p.sets) values += (values.empty() ? "" : ", ") + s.to_arg();
      // A value rejected on its own is reported where it is written; an error of the
      // combination (or of the base with it) at the point's first value.
      for (const SweepSet& s : p.sets)
        if (e.where().file == "--set " + s.to_arg())
          throw ConfigError(value_mark(spec, s),
                            fmt::format("{} (point {}: {}; --keep-going runs the other "
                                        "points and records this one as failed)",
                                        e.reason(), p.index, values));
      throw ConfigError(p.sets.empty() ? SourceMark{spec.file, 0, 0} : value_mark(spec, p.sets.front()),
                        fmt::format("point {} ({}) is not a valid scenario: {} (--keep-going runs "
                                    "the other points and records this one as failed)",
                                    p.index, values, e.what()));
    }
    if (progress) progress(++checked);
  }
}

void check_sweep_keys(const SweepSpec& spec) {
  (void)load_scenario_file(spec.base);  // a broken base fails every point: report it as is
  const SweepPoint first = spec.point(0);
  std::vector<std::string> sets;
  for (const SweepSet& s : first.sets) sets.push_back(s.to_arg());
  try {
    (void)load_scenario_file(spec.base, sets);
  } catch (const ConfigError& e) {
    // Only an unknown key is certain to fail every point; a value may be valid elsewhere.
    if (e.reason().find("unknown key") == std::string::npos) return;
    for (const SweepSet& s : first.sets)
      if (e.where().file == "--set " + s.to_arg())
        if (const SweepAxis* a = axis_of(spec, s.key))
          throw ConfigError(a->key_mark, fmt::format("'{}' is not a key of scenario {}: {}", s.key,
                                                     spec.base.string(), e.reason()));
  }
}

}  // namespace gradsync
