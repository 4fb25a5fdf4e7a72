// Sweep results on disk: the point records (crash-safe per-point files, results.jsonl read
// back), regenerated results.jsonl/csv and the manifest. See sweep_results.hpp; the durable
// writes are durable_file.hpp's, the CSV text csv_text.hpp's.
#include "sweep_results.hpp"
#include "gradsync/report/run_json.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "csv_text.hpp"
#include "durable_file.hpp"
#include "gradsync/units/units.hpp"

namespace gradsync::sweep {

namespace fs = std::filesystem;

namespace {

// "p00042-1a2b3c4d": what sweep_point_id makes.
bool is_point_id(const std::string& s) {
  const std::size_t dash = s.find('-');
  if (s.size() < 2 || s[0] != 'p' || dash == std::string::npos || dash < 6 ||
      s.size() != dash + 9)
    return false;
  for (std::size_t i = 1; i < dash; ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  for (std::size_t i = dash + 1; i < s.size(); ++i)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
  return true;
}

bool is_scalar(const Json& v) { return v.is_string() || v.is_number() || v.is_boolean(); }

std::uint64_t fnv1a(const std::string& text) {
  std::uint64_t h = 14695981039346656037ull;
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

// A record read back (one line of JSON): an object with its id, index, sets and ok. nullopt
// when it is not one.
std::optional<PointRecord> parse_record(const std::string& text, std::string source,
                                        std::uint64_t offset, int line) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("point") || !j["point"].is_string() ||
      !is_point_id(j["point"].get<std::string>()) || !j.contains("index") ||
      !j["index"].is_number_unsigned() || !j.contains("sets") || !j["sets"].is_object() ||
      !j.contains("ok") || !j["ok"].is_boolean())
    return std::nullopt;
  PointRecord r;
  r.id = j["point"].get<std::string>();
  r.index = j["index"].get<std::size_t>();
  r.ok = j["ok"].get<bool>();
  if (!r.ok && j.contains("error") && j["error"].is_string()) r.error = j["error"].get<std::string>();
  j.erase("wall_s");
  r.digest = fnv1a(j.dump());
  r.source = std::move(source);
  r.offset = offset;
  r.length = text.size();
  while (r.length > 0 && (text[r.length - 1] == '\n' || text[r.length - 1] == '\r')) --r.length;
  r.line = line;
  return r;
}

}  // namespace

std::string scalar_text(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  return v.dump();
}

Json make_record(const SweepPoint& point, bool ok, const std::string& error, int exit_code,
                 double wall_s, Json metrics) {
  Json sets = Json::object();
  for (const SweepSet& s : point.sets) sets[s.key] = s.value;
  return Json{{"point", point.id},
              {"index", point.index},
              {"sets", sets},
              {"ok", ok},
              {"error", ok ? Json(nullptr) : Json(error)},
              {"exit_code", exit_code},
              {"wall_s", std::round(wall_s * 1e4) / 1e4},
              {"metrics", std::move(metrics)}};
}

std::string PointRecord::origin() const {
  return line == 0 ? source : fmt::format("{}:{}", source, line);
}

std::string PointRecord::read() const {
  std::ifstream in(source, std::ios::binary);
  std::string text(length, '\0');
  in.seekg(static_cast<std::streamoff>(offset));
  if (!in || !in.read(text.data(), static_cast<std::streamsize>(length)))
    throw EnvironmentError(origin(), fmt::format("cannot read the record of point {} again "
                                                 "(the file changed or went away)", id));
  return text;
}

Json PointRecord::load() const {
  Json j = Json::parse(read(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || j.value("point", "") != id)
    throw ConfigError(SourceMark{source, line, 0},
                      fmt::format("the record of point {} changed while gradsync read it", id));
  return j;
}

fs::path points_dir(const fs::path& dir) { return dir / "points"; }

PointRecord store_point(const fs::path& dir, const Json& record) {
  const std::string text = record.dump();
  const fs::path path = points_dir(dir) / (record.at("point").get<std::string>() + ".json");
  write_file_atomically(path, text + "\n");
  auto r = parse_record(text, path.string(), 0, 0);
  if (!r) throw std::logic_error("store_point: not a record");
  return std::move(*r);
}

std::vector<PointRecord> read_points(const fs::path& dir, bool remove_temp,
                                     std::vector<std::string>* bad) {
  std::vector<PointRecord> out;
  const fs::path points = points_dir(dir);
  std::error_code ec;
  if (!fs::is_directory(points, ec)) return out;
  fs::directory_iterator it(points, ec);
  if (ec) throw EnvironmentError(points.string(), "cannot read the folder: " + ec.message());
  for (const auto& entry : it) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(".")) {  // a temp file: a write that never reached its rename
      if (remove_temp && name.find(".tmp-") != std::string::npos) fs::remove(entry.path(), ec);
      continue;
    }
    if (!name.ends_with(".json") || !is_point_id(name.substr(0, name.size() - 5))) continue;
    auto record = parse_record(read_text(entry.path()), entry.path().string(), 0, 0);
    if (!record || record->id + ".json" != name) {
      if (bad != nullptr) bad->push_back(entry.path().string());
      continue;
    }
    out.push_back(std::move(*record));
  }
  std::sort(out.begin(), out.end(),
            [](const PointRecord& a, const PointRecord& b) { return a.index < b.index; });
  return out;
}

std::vector<PointRecord> read_results_dir(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw ConfigError(SourceMark{dir.string(), 0, 0}, "not a folder of sweep results");
  if (fs::is_directory(points_dir(dir), ec)) {
    std::vector<std::string> bad;
    auto records = read_points(dir, false, &bad);
    if (!bad.empty())
      throw ConfigError(SourceMark{bad.front(), 0, 0}, "not a sweep result record");
    return records;
  }
  const fs::path jsonl = dir / "results.jsonl";
  if (!fs::is_regular_file(jsonl, ec))
    throw ConfigError(SourceMark{dir.string(), 0, 0},
                      "holds neither points/ nor results.jsonl: not a sweep output folder");
  std::vector<PointRecord> out;
  std::ifstream in(jsonl, std::ios::binary);
  std::string line;
  int number = 0;
  std::uint64_t offset = 0;
  while (std::getline(in, line)) {
    ++number;
    const std::uint64_t start = offset;
    offset += line.size() + 1;
    if (line.empty()) continue;
    auto record = parse_record(line, jsonl.string(), start, number);
    if (!record)
      throw ConfigError(SourceMark{jsonl.string(), number, 1},
                        "not a sweep result record (a line torn by a crash? rerun the sweep with "
                        "--resume to regenerate the file)");
    out.push_back(std::move(*record));
  }
  return out;
}

namespace {
// `text` in base units of `unit` ("B/s", "B", "s"), when it parses as one.
std::optional<double> numeric_value(const std::string& text, const std::string& unit) {
  try {
    if (unit == "B/s") return parse_rate(text).bytes_per_second();
    if (unit == "B") return parse_size(text).bytes();
    if (unit == "s") return parse_time(text).seconds();
  } catch (const UnitError&) {
  }
  return std::nullopt;
}
}  // namespace

void write_results(const fs::path& dir, const std::vector<std::string>& keys,
                   std::vector<PointRecord> records) {
  std::sort(records.begin(), records.end(), [](const PointRecord& a, const PointRecord& b) {
    return a.index != b.index ? a.index < b.index : a.id < b.id;
  });
  // Pass 1: results.jsonl (each record's line, as stored) and the metric columns: the scalar
  // keys of `run --json`, in its order (first seen first).
  AtomicFile jsonl(dir / "results.jsonl");
  std::vector<std::string> metrics;
  for (const PointRecord& r : records) {
    std::string line = r.read();
    const Json j = Json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("metrics") && j["metrics"].is_object())
      for (const auto& [k, v] : j["metrics"].items())
        if (is_scalar(v) && std::find(metrics.begin(), metrics.end(), k) == metrics.end())
          metrics.push_back(k);
    line += '\n';
    jsonl.write(line);
  }

  // Pass 2: results.csv.
  AtomicFile csv(dir / "results.csv");
  auto add_row = [&csv](const std::vector<std::string>& fields) {
    std::string row;
    for (std::size_t i = 0; i < fields.size(); ++i) {
      if (i > 0) row += ',';
      row += csv_field(fields[i]);
    }
    row += "\n";
    csv.write(row);
  };
  // Swept values written with units ("25Gbps", "1MiB", "50us") get a numeric column beside
  // them in base units, so a spreadsheet or pandas can plot them: "KEY [B/s]", "[B]", "[s]".
  std::vector<std::optional<std::string>> unit_of(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    bool any = false;
    for (const char* unit : {"B/s", "B", "s"}) {
      bool all = true;
      for (const PointRecord& r : records) {
        const Json j = r.load();
        if (!j["sets"].contains(keys[i])) continue;
        const std::string v = scalar_text(j["sets"][keys[i]]);
        if (v.empty() || std::isdigit(static_cast<unsigned char>(v.back()))) {
          all = false;  // a plain number is already numeric
          break;
        }
        any = true;
        if (!numeric_value(v, unit)) {
          all = false;
          break;
        }
      }
      if (all && any) {
        unit_of[i] = unit;
        break;
      }
    }
  }
  std::vector<std::string> header;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    header.push_back(keys[i]);
    if (unit_of[i]) header.push_back(fmt::format("{} [{}]", keys[i], *unit_of[i]));
  }
  for (const std::string& m : metrics)
    // A metric named like a swept key (a top-level scenario key such as `gpus`) is prefixed.
    header.push_back(std::find(keys.begin(), keys.end(), m) != keys.end() ? "run." + m : m);
  for (const char* extra : {"point", "ok", "error"}) header.emplace_back(extra);
  add_row(header);
  for (const PointRecord& r : records) {
    const Json j = r.load();
    std::vector<std::string> row;
    const Json& sets = j["sets"];
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const std::string v = sets.contains(keys[i]) ? scalar_text(sets[keys[i]]) : "";
      row.push_back(v);
      if (unit_of[i]) {
        const auto n = numeric_value(v, *unit_of[i]);
        row.push_back(n ? fmt::format("{:.17g}", *n) : "");
      }
    }
    const Json& m = j.value("metrics", Json(nullptr));
    for (const std::string& k : metrics)
      row.push_back(m.is_object() && m.contains(k) && is_scalar(m[k]) ? scalar_text(m[k]) : "");
    row.push_back(r.id);
    row.push_back(r.ok ? "true" : "false");
    row.push_back(r.error);
    add_row(row);
  }
  // Both files are renamed only now: a source may be DIR/results.jsonl itself (merging a merged
  // folder into itself), read in both passes.
  jsonl.commit();
  csv.commit();
}

void write_manifest(const fs::path& dir, const Manifest& m) {
  Json j{{"name", m.name},   {"sweep", m.sweep},   {"base", m.base},
         {"keys", m.keys},   {"points", m.points},
         {"shard", m.shard ? Json(m.shard->to_string()) : Json(nullptr)}};
  write_file_atomically(dir / "sweep.json", j.dump(2) + "\n");
}

std::optional<Manifest> read_manifest(const fs::path& dir) {
  const fs::path path = dir / "sweep.json";
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  const Json j = Json::parse(read_text(path), nullptr, false);
  const SourceMark at{path.string(), 0, 0};
  if (!j.is_object() || !j.contains("keys") || !j["keys"].is_array() || !j.contains("points") ||
      !j["points"].is_number_unsigned())
    throw ConfigError(at, "not a gradsync sweep manifest");
  Manifest m;
  m.name = j.value("name", "");
  m.sweep = j.value("sweep", "");
  m.base = j.value("base", "");
  for (const auto& k : j["keys"]) {
    if (!k.is_string()) throw ConfigError(at, "not a gradsync sweep manifest");
    m.keys.push_back(k.get<std::string>());
  }
  m.points = j["points"].get<std::size_t>();
  if (j.contains("shard") && j["shard"].is_string())
    m.shard = parse_sweep_shard(j["shard"].get<std::string>());
  return m;
}

}  // namespace gradsync::sweep
