#include "yaml_reader.hpp"

#include <algorithm>
#include <cmath>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <utility>

#include <yaml-cpp/depthguard.h>

#include <fmt/format.h>

#include "duplicate_keys.hpp"
#include "gradsync/units/bounded_read.hpp"

namespace gradsync::config {

SourceMark mark_of(const YAML::Mark& mark, const std::string& file) {
  if (mark.is_null()) return SourceMark{file, 0, 0};
  return SourceMark{file, mark.line + 1, mark.column + 1};
}

SourceMark mark_of(const YAML::Node& node, const std::string& file) {
  return mark_of(node.Mark(), file);
}

namespace {

// Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
// adjacent letters each cost 1, so "nodse" is one typo away from "nodes" (not two).
std::size_t edit_distance(const std::string& a, const std::string& b) {
  // Three rows of the dynamic-programming table: i-2, i-1 and i.
  std::vector<std::size_t> before(b.size() + 1), previous(b.size() + 1), row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      row[j] = std::min({previous[j] + 1, row[j - 1] + 1,
                         previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        row[j] = std::min(row[j], before[j - 2] + 1);
    }
    std::swap(before, previous);
    std::swap(previous, row);
  }
  return previous[b.size()];
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

namespace {

// Line `line` (0-based) of `text`, without its end of line.
std::string_view line_of(const std::string& text, int line) {
  std::size_t start = 0;
  for (int i = 0; i < line; ++i) {
    start = text.find('\n', start);
    if (start == std::string::npos) return {};
    ++start;
  }
  const std::size_t end = text.find('\n', start);
  return std::string_view(text).substr(start, end == std::string::npos ? std::string::npos
                                                                       : end - start);
}

// yaml-cpp reports some errors at the end of the input, which is past the last line when the
// file ends with a newline; editors cannot go there. Point at the end of the last line instead.
SourceMark error_mark(const YAML::Mark& mark, const std::string& text, const std::string& file) {
  if (mark.is_null() || text.empty() || static_cast<std::size_t>(mark.pos) < text.size())
    return mark_of(mark, file);
  std::size_t end = text.size();
  while (end > 0 && (text[end - 1] == '\n' || text[end - 1] == '\r')) --end;
  const std::size_t start = text.rfind('\n', end == 0 ? 0 : end - 1);
  const std::size_t line_start = start == std::string::npos || end == 0 ? 0 : start + 1;
  const auto first = text.begin();
  const int line = static_cast<int>(
      std::count(first, first + static_cast<std::ptrdiff_t>(line_start), '\n'));
  return SourceMark{file, line + 1, static_cast<int>(end - line_start) + 1};
}

}  // namespace

YAML::Node parse_yaml(const std::string& text, const std::string& file) {
  // yaml-cpp stops at a NUL byte with a puzzling message: a NUL means a binary file.
  if (const std::size_t nul = text.find('\0'); nul != std::string::npos) {
    const std::size_t line_start = text.rfind('\n', nul);
    const std::size_t column = line_start == std::string::npos ? nul : nul - line_start - 1;
    const auto line =
        std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(nul), '\n');
    throw ConfigError(SourceMark{file, static_cast<int>(line) + 1, static_cast<int>(column) + 1},
                      "a NUL byte: this is not a text file");
  }
  reject_duplicate_keys(text, file);
  // reject_duplicate_keys() has refused a second document, so the first one is the file.
  try {
    return YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp reports its nesting limit as "bad file"; say what it is.
    throw ConfigError(error_mark(e.mark, text, file), "invalid YAML: nested too deeply");
  } catch (const YAML::Exception& e) {
    // A tab in the indentation is the usual cause of a baffling "illegal map value".
    const std::string_view line = line_of(text, e.mark.line);
    const std::size_t indent_end = line.find_first_not_of(" \t");
    const std::size_t tab = line.substr(0, indent_end).find('\t');
    if (!e.mark.is_null() && tab != std::string_view::npos)
      throw ConfigError(SourceMark{file, e.mark.line + 1, static_cast<int>(tab) + 1},
                        "invalid YAML: tab in the indentation (YAML indents with spaces only)");
    throw ConfigError(error_mark(e.mark, text, file), "invalid YAML: " + e.msg);
  }
}

YAML::Node load_yaml_file(const std::string& path, std::string* text_out) {
  // A bound on input size, checked before reading: a topology or scenario is a few KiB;
  // megabytes mean a wrong file.
  constexpr std::size_t kMaxFileBytes = 16u << 20;
  std::string text = read_file_bounded(path, kMaxFileBytes, "16 MiB");
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
    // A copy: `it->first` lives in a proxy that dies at the end of this statement.
    const YAML::Node key = it->first;
    if (!key.IsScalar())
      throw ConfigError(mark_of(key, file_), "keys must be plain words");
    const std::string& k = key.Scalar();
    if (std::find(allowed.begin(), allowed.end(), k) != allowed.end()) continue;
    // Suggest only keys not already in the mapping: "nodse:" beside "node:" means "nodes".
    std::vector<std::string> valid, absent;
    for (const auto& a : allowed) {
      if (std::find(valid.begin(), valid.end(), a) != valid.end()) continue;
      valid.push_back(a);
      if (!std::as_const(node_)[a].IsDefined()) absent.push_back(a);
    }
    const std::string near = closest_match(k, absent);
    const std::string where = what_.empty() ? "at top level" : "in " + what_;
    throw ConfigError(mark_of(key, file_),
                      near.empty()
                          ? fmt::format("unknown key '{}' {} (valid keys: {})", k, where,
                                        join(valid))
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
  if (v.IsDefined() && v.IsNull()) {
    // "nodes:" with nothing after it: point at the key the user wrote, not at the mapping.
    for (auto it = node_.begin(); it != node_.end(); ++it) {
      const YAML::Node k = it->first;
      if (k.IsScalar() && k.Scalar() == key)
        throw ConfigError(mark_of(k, file_), fmt::format("{} has no value", path(key)));
    }
  }
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
