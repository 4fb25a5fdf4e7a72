// Overrides applied to YAML text (yaml_patch.hpp).
#include "yaml_patch.hpp"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "scenario_keys.hpp"
#include "yaml_reader.hpp"

namespace gradsync::config {

namespace {

// A scalar written so YAML reads back exactly `value` (plain when that is safe, else quoted).
std::string yaml_scalar(const std::string& value) {
  bool plain = !value.empty() && value.front() != ' ' && value.back() != ' ' && value.back() != ':';
  if (plain &&
      std::string_view("-?:,[]{}#&*!|>'\"%@`").find(value.front()) != std::string_view::npos &&
      !(value.front() == '-' && value.size() > 1 && value[1] != ' '))
    plain = false;
  for (const char c : value)
    if (std::string_view(",[]{}\"\\").find(c) != std::string_view::npos ||
        static_cast<unsigned char>(c) < 0x20)
      plain = false;
  if (value.find(": ") != std::string::npos || value.find(" #") != std::string::npos) plain = false;
  if (plain) return value;
  std::string out = "\"";
  for (const char c : value) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (static_cast<unsigned char>(c) < 0x20)
      out += fmt::format("\\x{:02x}", static_cast<unsigned>(c));
    else
      out += c;
  }
  return out + "\"";
}

void add_path(std::vector<AddedKey>& level, const std::vector<std::string>& path, std::size_t from,
              std::string value, std::size_t owner) {
  auto it = std::find_if(level.begin(), level.end(),
                         [&](const AddedKey& k) { return k.key == path[from]; });
  if (it == level.end()) {
    level.push_back(AddedKey{path[from], owner, std::nullopt, {}});
    it = std::prev(level.end());
  }
  if (from + 1 == path.size()) {
    it->value = std::move(value);
    it->owner = owner;
  } else {
    add_path(it->children, path, from + 1, std::move(value), owner);
  }
}

void render(const AddedKey& k, std::vector<Segment>& out) {
  out.push_back({k.key + ": ", k.owner});
  if (k.value) {
    out.push_back({*k.value, k.owner});
    return;
  }
  out.push_back({"{", k.owner});
  for (std::size_t i = 0; i < k.children.size(); ++i) {
    if (i > 0) out.push_back({", ", k.owner});
    render(k.children[i], out);
  }
  out.push_back({"}", k.owner});
}

}  // namespace

// "a.b.c=value" (the CLI's --set) → an override reported at "--set a.b.c=value".
Override parse_set(const std::string& text) {
  const SourceMark at{"--set " + text, 0, 0};
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ConfigError(at, "expected KEY=VALUE with a dotted key, e.g. --set sync.bucket=50MiB");
  Override o;
  o.origin = at;
  o.value = text.substr(eq + 1);
  const std::string key = text.substr(0, eq);
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = key.find('.', start);
    o.path.push_back(key.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (o.path.back().empty())
      throw ConfigError(at, fmt::format("'{}' has an empty part between dots", key));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  o.label = text;
  return o;
}

// The YAML text of an override value: a flow collection ("{a: 1}", "[1, 2]") as given, any
// other value as a scalar.
std::string yaml_value(const Override& o) {
  const std::string& v = o.value;
  if (!v.empty() && (v.front() == '{' || v.front() == '[')) {
    try {
      const YAML::Node n = YAML::Load(v);
      if (n.IsMap() || n.IsSequence()) return v;
    } catch (const YAML::Exception&) {
    }
    throw ConfigError(o.origin, fmt::format("'{}' is not a valid YAML {}", v,
                                            v.front() == '{' ? "mapping" : "list"));
  }
  return yaml_scalar(v);
}

TextPatch::TextPatch(std::string text, std::string file, std::vector<Override> overrides,
                     std::string context)
    : original_(std::move(text)),
      file_(std::move(file)),
      overrides_(std::move(overrides)),
      context_(std::move(context)) {
  keep_last_of_each_path();
  if (overrides_.empty()) {
    patched_ = original_;
    pieces_.push_back(Piece{0, original_.size(), 0, kNoOwner});
  } else {
    apply(config::parse_yaml(original_, file_));
    std::vector<std::string> labels;
    for (const auto& o : overrides_) labels.push_back(o.label);
    note_ = fmt::format(" (with overrides {})", join(labels, ", "));
  }
  line_starts_.push_back(0);
  for (std::size_t i = 0; i < patched_.size(); ++i)
    if (patched_[i] == '\n') line_starts_.push_back(i + 1);
}

TextPatch::Origin TextPatch::origin_of(const SourceMark& at) const {
  if (at.file != file_ || at.line <= 0 || overrides_.empty()) return {at, kNoOwner};
  const auto line = static_cast<std::size_t>(at.line - 1);
  if (line >= line_starts_.size()) return {at, kNoOwner};
  const std::size_t offset = std::min(
      line_starts_[line] + static_cast<std::size_t>(std::max(at.column - 1, 0)), patched_.size());
  auto it = std::upper_bound(pieces_.begin(), pieces_.end(), offset,
                             [](std::size_t off, const Piece& p) { return off < p.start; });
  if (it == pieces_.begin()) return {at, kNoOwner};
  const Piece& p = *std::prev(it);
  if (p.owner != kNoOwner) return {overrides_[p.owner].origin, p.owner};
  const std::size_t orig = p.orig_start + std::min(offset - p.start, p.length);
  return {position_in_original(orig, at.column <= 0), kNoOwner};
}

ConfigError TextPatch::translate(const ConfigError& e) const {
  const Origin o = origin_of(e.where());
  if (o.owner == kNoOwner) {
    if (e.where().file != file_ || overrides_.empty()) return e;
    return ConfigError(o.mark, e.reason() + note_);
  }
  const Override& ov = overrides_[o.owner];
  std::string reason = e.reason();
  // The loader rejects an added key without suggesting the keys already in the mapping (a
  // file typo beside an existing key means a missing one); for an override it is the reverse.
  const std::string unknown = "unknown key '" + ov.added_key + "'";
  if (!ov.added_key.empty() && reason.rfind(unknown, 0) == 0 &&
      reason.find("did you mean") == std::string::npos) {
    const std::string near = config::closest_match(ov.added_key, ov.siblings);
    if (!near.empty()) {
      const std::size_t paren = reason.find(" (valid keys");
      reason = fmt::format("{}; did you mean '{}'?", reason.substr(0, paren), near);
    }
  }
  return ConfigError(o.mark, context_ + reason);
}

void TextPatch::fail(std::size_t i, const std::string& message) const {
  throw ConfigError(overrides_[i].origin, message);
}

std::string TextPatch::prefix(std::size_t i, std::size_t depth) const {
  const auto& p = overrides_[i].path;
  return join(std::vector<std::string>(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(depth)),
              ".");
}

void TextPatch::keep_last_of_each_path() {
  std::vector<Override> kept;
  for (std::size_t i = 0; i < overrides_.size(); ++i) {
    bool later = false;
    for (std::size_t j = i + 1; j < overrides_.size(); ++j)
      later = later || overrides_[j].path == overrides_[i].path;
    if (!later) kept.push_back(overrides_[i]);
  }
  for (std::size_t i = 0; i < kept.size(); ++i)
    for (std::size_t j = 0; j < kept.size(); ++j) {
      const auto& a = kept[i].path;
      const auto& b = kept[j].path;
      if (i != j && a.size() < b.size() && std::equal(a.begin(), a.end(), b.begin()))
        throw ConfigError(kept[std::max(i, j)].origin,
                          fmt::format("overrides {} and {} both set {}", kept[i].label,
                                      kept[j].label, join(a, ".")));
    }
  overrides_ = std::move(kept);
}

SourceMark TextPatch::position_in_original(std::size_t offset, bool line_only) const {
  const auto first = original_.begin();
  const auto at = first + static_cast<std::ptrdiff_t>(offset);
  const int line = static_cast<int>(std::count(first, at, '\n')) + 1;
  const std::size_t start = offset == 0 ? std::string::npos : original_.rfind('\n', offset - 1);
  const std::size_t line_start = start == std::string::npos ? 0 : start + 1;
  return SourceMark{file_, line, line_only ? 0 : static_cast<int>(offset - line_start) + 1};
}

std::optional<std::size_t> TextPatch::value_end(const YAML::Node& node) const {
  const auto pos = static_cast<std::size_t>(node.Mark().pos);
  const std::string& t = original_;
  if (pos >= t.size()) return std::nullopt;
  const char c = t[pos];
  if (node.IsScalar()) {
    if (c == '"' || c == '\'') {
      for (std::size_t j = pos + 1; j < t.size() && t[j] != '\n'; ++j) {
        if (c == '"' && t[j] == '\\') {
          ++j;
          continue;
        }
        if (t[j] != c) continue;
        if (c == '\'' && j + 1 < t.size() && t[j + 1] == '\'') {
          ++j;
          continue;
        }
        return j + 1;
      }
      return std::nullopt;
    }
    const std::string& s = node.Scalar();
    if (s.find('\n') != std::string::npos || t.compare(pos, s.size(), s) != 0)
      return std::nullopt;
    return pos + s.size();
  }
  if (node.Style() != YAML::EmitterStyle::Flow || (c != '{' && c != '[')) return std::nullopt;
  int depth = 0;
  char last = ' ';  // the last character outside spaces: a quote after it opens a scalar
  for (std::size_t j = pos; j < t.size(); ++j) {
    const char d = t[j];
    if ((d == '"' || d == '\'') &&
        std::string_view("{[,:").find(last) != std::string_view::npos) {
      for (++j; j < t.size() && t[j] != d; ++j)
        if (d == '"' && t[j] == '\\') ++j;
      last = d;
      continue;
    }
    if (d == '#' && (t[j - 1] == ' ' || t[j - 1] == '\t')) {
      while (j + 1 < t.size() && t[j + 1] != '\n') ++j;
      continue;
    }
    if (d == '{' || d == '[') {
      ++depth;
    } else if ((d == '}' || d == ']') && --depth == 0) {
      return j + 1;
    }
    if (d != ' ' && d != '\t' && d != '\n' && d != '\r') last = d;
  }
  return std::nullopt;
}

void TextPatch::apply(const YAML::Node& root) {
  std::vector<Edit> edits;
  std::vector<PendingInsert> inserts;
  for (std::size_t i = 0; i < overrides_.size(); ++i) {
    Override& o = overrides_[i];
    const std::string value = yaml_value(o);
    YAML::Node node = root;
    for (std::size_t d = 0; d < o.path.size(); ++d) {
      const std::string& key = o.path[d];
      const bool last = d + 1 == o.path.size();
      if (node.IsMap()) {
        std::optional<YAML::Node> child;
        std::vector<std::string> keys;
        for (auto it = node.begin(); it != node.end(); ++it) {
          const YAML::Node k = it->first;
          if (!k.IsScalar()) continue;
          keys.push_back(k.Scalar());
          if (k.Scalar() == key) child.emplace(it->second);
        }
        if (!child) {
          o.added_key = key;
          o.siblings = keys;
          auto p = std::find_if(inserts.begin(), inserts.end(),
                                [&](const PendingInsert& pi) { return pi.parent.is(node); });
          if (p == inserts.end()) {
            inserts.push_back(PendingInsert{node, {}});
            p = std::prev(inserts.end());
          }
          add_path(p->keys, o.path, d, value, i);
          break;
        }
        if (last) {
          edits.push_back(replace(i, *child));
          break;
        }
        node.reset(*child);  // rebind (operator= would overwrite the tree)
      } else if (node.IsSequence()) {
        std::size_t index = 0;
        const auto [ptr, ec] = std::from_chars(key.data(), key.data() + key.size(), index);
        if (!all_digits(key) || ec != std::errc() || ptr != key.data() + key.size() ||
            index >= node.size())
          fail(i,
               fmt::format("{} is a list of {} entries: '{}' is not an index 0..{}", prefix(i, d),
                           node.size(), key, node.size() == 0 ? 0 : node.size() - 1));
        YAML::Node child = node[index];
        if (last) {
          edits.push_back(replace(i, child));
          break;
        }
        node.reset(child);
      } else if (node.IsNull()) {
        fail(i, fmt::format("{} has no value in {}; give it a mapping there first", prefix(i, d),
                            file_));
      } else {
        fail(i,
             fmt::format("{} is a single value, not a mapping with key '{}'", prefix(i, d), key));
      }
    }
  }
  for (auto& p : inserts) edits.push_back(insert(p));
  std::stable_sort(edits.begin(), edits.end(),
                   [](const Edit& a, const Edit& b) { return a.pos < b.pos; });
  std::size_t cursor = 0;
  auto copy_to = [&](std::size_t end) {
    if (end > cursor) pieces_.push_back(Piece{patched_.size(), end - cursor, cursor, kNoOwner});
    patched_.append(original_, cursor, end - cursor);
    cursor = end;
  };
  for (const Edit& e : edits) {
    if (e.pos < cursor) fail(e.owner, "this override overlaps another one");
    copy_to(e.pos);
    for (const Segment& s : e.insert) {
      if (s.text.empty()) continue;
      pieces_.push_back(
          Piece{patched_.size(), s.text.size(), e.pos, s.owner == kNoOwner ? e.owner : s.owner});
      patched_ += s.text;
    }
    cursor = e.pos + e.erase;
  }
  copy_to(original_.size());
}

Edit TextPatch::replace(std::size_t i, const YAML::Node& target) const {
  const Override& o = overrides_[i];
  if (target.IsNull())
    fail(i,
         fmt::format("{} has no value in {}; write one there first", join(o.path, "."), file_));
  const auto end = value_end(target);
  if (!end) {
    if (target.IsMap() || target.IsSequence())
      fail(i, fmt::format("{} is a {} in {}; set its entries one by one (e.g. {}.KEY=VALUE)",
                          join(o.path, "."), target.IsMap() ? "mapping" : "list", file_,
                          join(o.path, ".")));
    fail(i, fmt::format("{} is written over several lines in {}; it cannot be overridden",
                        join(o.path, "."), file_));
  }
  const auto pos = static_cast<std::size_t>(target.Mark().pos);
  return Edit{pos, *end - pos, {{yaml_value(o), i}}, i};
}

Edit TextPatch::insert(const PendingInsert& p) const {
  const std::size_t owner = p.keys.front().owner;
  const auto pos = static_cast<std::size_t>(p.parent.Mark().pos);
  Edit e;
  e.owner = owner;
  if (p.parent.Style() == YAML::EmitterStyle::Flow) {
    if (pos >= original_.size() || original_[pos] != '{')
      fail(owner, "cannot locate the mapping to add this key to");
    e.pos = pos + 1;
    e.insert.push_back({" ", owner});
    for (std::size_t k = 0; k < p.keys.size(); ++k) {
      if (k > 0) e.insert.push_back({", ", owner});
      render(p.keys[k], e.insert);
    }
    e.insert.push_back({p.parent.size() == 0 ? " " : ", ", owner});
    return e;
  }
  std::optional<std::size_t> at;
  int indent = 0;
  for (auto it = p.parent.begin(); it != p.parent.end() && !at; ++it) {
    const YAML::Node k = it->first;
    const YAML::Node v = it->second;
    if (!v.IsScalar()) continue;
    const auto end = value_end(v);
    if (!end) continue;
    const std::size_t newline = original_.find('\n', *end);
    at = newline == std::string::npos ? original_.size() : newline + 1;
    indent = k.Mark().column;
  }
  if (!at)
    fail(owner, fmt::format("cannot add '{}' to this mapping of {} automatically; write it "
                            "in the file",
                            p.keys.front().key, file_));
  e.pos = *at;
  if (e.pos == original_.size() && !original_.empty() && original_.back() != '\n')
    e.insert.push_back({"\n", owner});
  for (const AddedKey& k : p.keys) {
    e.insert.push_back({std::string(static_cast<std::size_t>(indent), ' '), k.owner});
    render(k, e.insert);
    e.insert.push_back({"\n", k.owner});
  }
  return e;
}

}  // namespace gradsync::config
