#include "yaml_reader.hpp"

#include <algorithm>
#include <cmath>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "duplicate_keys.hpp"

namespace gradsync::config {

SourceMark mark_of(const YAML::Mark& mark, const std::string& file) {
  if (mark.is_null()) return SourceMark{file, 0, 0};
  return SourceMark{file, mark.line + 1, mark.column + 1};
}

SourceMark mark_of(const YAML::Node& node, const std::string& file) {
  return mark_of(node.Mark(), file);
}

namespace {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null: return "nothing";
    case YAML::NodeType::Scalar: return fmt::format("'{}'", node.Scalar());
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Undefined: return "nothing";
  }
  return "?";
}

std::string join(const std::vector<std::string>& words) {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += i + 1 == words.size() ? " or " : ", ";
    out += words[i];
  }
  return out;
}

}  // namespace

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

YAML::Node parse_yaml(const std::string& text, const std::string& file) {
  reject_duplicate_keys(text, file);
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(mark_of(e.mark, file), "invalid YAML: " + e.msg);
  }
}

YAML::Node load_yaml_file(const std::string& path, std::string* text_out) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw ConfigError(SourceMark{path, 0, 0}, "is a directory, expected a YAML file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(SourceMark{path, 0, 0}, "cannot open file");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  // A bound on input size: a topology or scenario is a few KiB; megabytes mean a wrong file.
  constexpr std::size_t kMaxFileBytes = 16u << 20;
  if (text.size() > kMaxFileBytes)
    throw ConfigError(SourceMark{path, 0, 0}, "file is larger than 16 MiB; not a gradsync input");
  YAML::Node root = parse_yaml(text, path);
  if (text_out != nullptr) *text_out = std::move(text);
  return root;
}

MapReader::MapReader(const YAML::Node& node, std::string file, std::string what,
                     const std::vector<std::string>& allowed)
    : node_(node), file_(std::move(file)), what_(std::move(what)) {
  if (!node_.IsMap())
    throw ConfigError(mark_of(node_, file_),
                      fmt::format("{} must be a mapping (key: value lines), got {}",
                                  what_.empty() ? "the file" : what_, describe(node_)));
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    const YAML::Node& key = it->first;
    if (!key.IsScalar())
      throw ConfigError(mark_of(key, file_), "keys must be plain words");
    const std::string& k = key.Scalar();
    if (std::find(allowed.begin(), allowed.end(), k) != allowed.end()) continue;
    const std::string near = closest_match(k, allowed);
    const std::string where = what_.empty() ? "at top level" : "in " + what_;
    throw ConfigError(mark_of(key, file_),
                      near.empty()
                          ? fmt::format("unknown key '{}' {} (valid keys: {})", k, where, join(allowed))
                          : fmt::format("unknown key '{}' {}; did you mean '{}'?", k, where, near));
  }
}

bool MapReader::has(const std::string& key) const {
  const YAML::Node v = node_[key];
  return v.IsDefined() && !v.IsNull();
}

std::string MapReader::path(const std::string& key) const {
  return what_.empty() ? key : what_ + "." + key;
}

SourceMark MapReader::mark(const std::string& key) const {
  const YAML::Node v = node_[key];
  return v.IsDefined() ? mark_of(v, file_) : mark();
}

void MapReader::fail(const std::string& key, const std::string& message) const {
  throw ConfigError(mark(key), path(key) + ": " + message);
}

YAML::Node MapReader::node(const std::string& key) const {
  const YAML::Node v = node_[key];
  if (!v.IsDefined() || v.IsNull())
    throw ConfigError(mark(), fmt::format("missing required key '{}'{}", key,
                                          what_.empty() ? "" : " in " + what_));
  return v;
}

std::string MapReader::scalar(const std::string& key, const char* expected) const {
  const YAML::Node v = node(key);
  if (!v.IsScalar()) fail(key, fmt::format("expected {}, got {}", expected, describe(v)));
  return v.Scalar();
}

std::string MapReader::string(const std::string& key) const { return scalar(key, "a string"); }

long long MapReader::integer(const std::string& key, long long min, long long max) const {
  const std::string s = scalar(key, "a whole number");
  long long value = 0;
  const char* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, value);
  if (ec == std::errc::result_out_of_range || (ec == std::errc() && ptr == end && (value < min || value > max)))
    fail(key, fmt::format("must be between {} and {}, got {}", min, max, s));
  if (ec != std::errc() || ptr != end)
    fail(key, fmt::format("expected a whole number, got '{}'", s));
  return value;
}

double MapReader::number(const std::string& key) const {
  const std::string s = scalar(key, "a number");
  double value = 0.0;
  const char* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, value);
  if (ec != std::errc() || ptr != end || !std::isfinite(value))
    fail(key, fmt::format("expected a number, got '{}'", s));
  return value;
}

bool MapReader::boolean(const std::string& key) const {
  const std::string s = scalar(key, "true or false");
  if (s == "true" || s == "True" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "False" || s == "no" || s == "off") return false;
  fail(key, fmt::format("expected true or false, got '{}'", s));
}

Bytes MapReader::size(const std::string& key) const {
  const std::string s = scalar(key, "a size such as 25MiB");
  try {
    return parse_size(s);
  } catch (const UnitError& e) {
    fail(key, e.what());
  }
}

BytesPerSecond MapReader::rate(const std::string& key) const {
  const std::string s = scalar(key, "a bandwidth such as 400Gbps or 50GB/s");
  try {
    return parse_rate(s);
  } catch (const UnitError& e) {
    fail(key, e.what());
  }
}

Seconds MapReader::time(const std::string& key) const {
  const std::string s = scalar(key, "a time such as 1.5us");
  try {
    return parse_time(s);
  } catch (const UnitError& e) {
    fail(key, e.what());
  }
}

std::string MapReader::choice(const std::string& key, const std::vector<std::string>& choices) const {
  const std::string s = scalar(key, ("one of " + join(choices)).c_str());
  if (std::find(choices.begin(), choices.end(), s) != choices.end()) return s;
  const std::string near = closest_match(s, choices);
  fail(key, fmt::format("'{}' is not one of {}{}", s, join(choices),
                        near.empty() ? "" : fmt::format(" (did you mean '{}'?)", near)));
}

std::optional<std::string> MapReader::opt_string(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  return string(key);
}
std::optional<long long> MapReader::opt_integer(const std::string& key, long long min,
                                                long long max) const {
  if (!has(key)) return std::nullopt;
  return integer(key, min, max);
}
std::optional<double> MapReader::opt_number(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  return number(key);
}
std::optional<bool> MapReader::opt_boolean(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  return boolean(key);
}
std::optional<BytesPerSecond> MapReader::opt_rate(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  return rate(key);
}
std::optional<Seconds> MapReader::opt_time(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  return time(key);
}
std::optional<std::string> MapReader::opt_choice(const std::string& key,
                                                 const std::vector<std::string>& choices) const {
  if (!has(key)) return std::nullopt;
  return choice(key, choices);
}

std::vector<YAML::Node> sequence_of(const YAML::Node& node, const std::string& file,
                                    const std::string& what) {
  if (!node.IsSequence())
    throw ConfigError(mark_of(node, file),
                      fmt::format("{} must be a list, got {}", what, describe(node)));
  std::vector<YAML::Node> out;
  for (const auto& item : node) out.push_back(item);
  return out;
}

}  // namespace gradsync::config
