// set_yaml_key (calibrate.hpp): a small editor for the block-style YAML of topology templates.
// It edits text rather than re-emitting a parsed document, so the comments that cite where
// every number came from survive calibration.
#include <optional>
#include <string>
#include <vector>

#include "gradsync/calibrate/calibrate.hpp"

namespace gradsync {
namespace {

int indent_of(const std::string& line) {
  const auto p = line.find_first_not_of(' ');
  return p == std::string::npos ? -1 : static_cast<int>(p);
}

bool is_content(const std::string& line) {
  const auto p = line.find_first_not_of(" \t\r");
  return p != std::string::npos && line[p] != '#';
}

// "key:" at the start of the (indented) line; returns the position after ':'.
std::optional<std::size_t> key_at(const std::string& line, const std::string& key) {
  const auto p = line.find_first_not_of(' ');
  if (p == std::string::npos || line.compare(p, key.size(), key) != 0) return std::nullopt;
  const std::size_t colon = p + key.size();
  if (colon >= line.size() || line[colon] != ':') return std::nullopt;
  if (colon + 1 < line.size() && line[colon + 1] != ' ' && line[colon + 1] != '\r')
    return std::nullopt;
  return colon + 1;
}

// The value text after "key:", without the trailing comment, trimmed.
std::string value_part(const std::string& line, std::size_t from) {
  std::size_t end = line.size();
  for (std::size_t i = from; i < line.size(); ++i)
    if (line[i] == '#' && (i == 0 || line[i - 1] == ' ')) {
      end = i;
      break;
    }
  std::string v = line.substr(from, end - from);
  const auto a = v.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  const auto b = v.find_last_not_of(" \t\r");
  return v.substr(a, b - a + 1);
}

// Sets key: value inside the one-line flow mapping that starts at line[open] == '{'.
std::optional<std::string> edit_flow(const std::string& line, std::size_t open,
                                     const std::string& key, const std::string& value) {
  int depth = 0;
  std::size_t close = std::string::npos;
  std::vector<std::size_t> entry_starts{open + 1};
  for (std::size_t i = open; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') {
      if (--depth == 0) {
        close = i;
        break;
      }
    }
    if (c == ',' && depth == 1) entry_starts.push_back(i + 1);
  }
  if (close == std::string::npos) return std::nullopt;
  entry_starts.push_back(close + 1);
  for (std::size_t e = 0; e + 1 < entry_starts.size(); ++e) {
    const std::size_t s = entry_starts[e];
    const std::size_t stop = entry_starts[e + 1] - 1;  // the ',' or '}'
    std::string entry = line.substr(s, stop - s);
    const auto k = entry.find_first_not_of(' ');
    if (k == std::string::npos || entry.compare(k, key.size(), key) != 0) continue;
    const std::size_t colon = k + key.size();
    if (colon >= entry.size() || entry[colon] != ':') continue;
    return line.substr(0, s) + entry.substr(0, colon + 1) + " " + value + line.substr(stop);
  }
  std::string inner = line.substr(open + 1, close - open - 1);
  const bool empty = inner.find_first_not_of(' ') == std::string::npos;
  return line.substr(0, close) + (empty ? "" : ", ") + key + ": " + value + line.substr(close);
}

}  // namespace

std::optional<std::string> set_yaml_key(const std::string& text,
                                        const std::vector<std::string>& path,
                                        const std::string& value, const std::string& comment) {
  if (path.empty()) return std::nullopt;
  std::vector<std::string> lines;
  {
    std::size_t pos = 0;
    while (pos < text.size()) {
      std::size_t end = text.find('\n', pos);
      if (end == std::string::npos) end = text.size();
      lines.push_back(text.substr(pos, end - pos));
      pos = end + 1;
    }
  }
  auto join = [&] {
    std::string out;
    for (const auto& l : lines) out += l + "\n";
    return out;
  };
  const std::string note = comment.empty() ? "" : "  # " + comment;

  std::size_t begin = 0, end = lines.size();  // the current mapping's lines
  int parent_indent = -1;
  for (std::size_t d = 0; d < path.size(); ++d) {
    const std::string& key = path[d];
    const bool final = d + 1 == path.size();
    int child_indent = -1;
    std::size_t last_content = begin;  // insert after it when the key is missing
    bool any = false;
    for (std::size_t i = begin; i < end; ++i) {
      if (!is_content(lines[i])) continue;
      const int ind = indent_of(lines[i]);
      if (ind <= parent_indent) break;
      if (child_indent < 0) child_indent = ind;
      any = true;
      last_content = i;
      if (ind != child_indent) continue;
      const auto after = key_at(lines[i], key);
      if (!after) continue;
      const std::string v = value_part(lines[i], *after);
      if (final) {
        if (!v.empty() && (v.front() == '{' || v.front() == '[')) return std::nullopt;
        lines[i] = lines[i].substr(0, *after) + " " + value + note;
        return join();
      }
      if (!v.empty()) {
        if (v.front() != '{' || d + 2 != path.size()) return std::nullopt;
        const auto edited = edit_flow(lines[i], lines[i].find('{', *after), path[d + 1], value);
        if (!edited) return std::nullopt;
        lines[i] = *edited + (lines[i].find('#', lines[i].find('}')) == std::string::npos ? note : "");
        return join();
      }
      // A block mapping: its lines run until one indented no deeper than the key.
      begin = i + 1;
      std::size_t stop = begin;
      while (stop < lines.size() && (!is_content(lines[stop]) || indent_of(lines[stop]) > ind))
        ++stop;
      end = stop;
      parent_indent = ind;
      goto next_level;
    }
    if (!final) return std::nullopt;  // a missing parent: not ours to invent
    {
      const int ind = child_indent >= 0 ? child_indent : parent_indent + 2;
      const std::size_t at = any ? last_content + 1 : begin;
      lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(at),
                   std::string(static_cast<std::size_t>(ind), ' ') + key + ": " + value + note);
      return join();
    }
  next_level:;
  }
  return std::nullopt;
}

}  // namespace gradsync
