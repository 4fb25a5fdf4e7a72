// Scenario files (README.md, Scenario files): the model (a preset or an explicit layer list),
// compute, training loop and synchronization, plus the topology they run on (a file relative to the
// scenario, or an inline mapping).
//
// Overrides (--set on the scenario, topology_overrides on the topology) are applied to the YAML
// *text* before it is read: a value written in the file is replaced in place, a missing key is
// added as a new line of the mapping (or inside its braces). The patched text then goes
// through the very same readers as a file would, and a piece table maps every position in the
// patched text back to the file, or to the override that wrote it. So a bad override value is
// reported where the override was written ("--set sync.bucket=5B: error: ..."), and every other
// error keeps its file:line:col.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "gradsync/engine.hpp"
#include "gradsync/config.hpp"
#include "gradsync/gpu_catalog.hpp"
#include "gradsync/model_presets.hpp"
#include "gradsync/parallel_layout.hpp"
#include "gradsync/scenario_config.hpp"
#include "gradsync/server_hosts.hpp"
#include "gradsync/step_schedule.hpp"
#include "yaml_reader.hpp"

namespace gradsync {

namespace {

namespace fs = std::filesystem;
using config::MapReader;
using config::mark_of;

// ---- limits and keys -----------------------------------------------------------------------

constexpr double kMaxParams = 1e13;        // ~50x today's largest dense models
constexpr long long kMaxLayers = 100'000;  // after `repeat:` expansion
constexpr long long kMaxTensors = 1'000'000;  // parameter tensors of model.layers, after `repeat:`
constexpr long long kMaxHidden = 1 << 20;
constexpr long long kMaxVocab = 100'000'000;
constexpr long long kMaxSeqLen = 10'000'000;
constexpr long long kMaxSteps = 10'000;
constexpr long long kMaxAccumulation = 1'000'000;
constexpr long long kMaxSamples = 1'000'000'000;
constexpr long long kMaxServers = 256;   // ParameterServerOptions::servers
constexpr long long kMaxGpus = 262'144;  // as the topology loader
constexpr double kMinBucketBytes = 1024.0;
constexpr double kMaxBucketBytes = 1099511627776.0;  // 1 TiB
// A transformer preset's `params:` may differ from its formula (SwiGLU, no biases, ...), but
// not by more than this: beyond, hidden/vocab/layers are probably wrong.
constexpr double kMaxPresetMismatch = 0.25;

const std::vector<std::string> kTopKeys{"name",     "topology", "topology_overrides",
                                        "gpus",     "model",    "compute",
                                        "training", "sync",     "parallel",
                                        "memory"};
const std::vector<std::string> kModelKeys{"params", "grad_dtype", "layers",         "hidden",
                                          "vocab",  "seq_len",    "tie_embeddings", "preset"};
const std::vector<std::string> kLayerKeys{"name",  "params", "forward", "backward",
                                          "flops", "group",  "repeat",  "tensors"};
const std::vector<std::string> kComputeKeys{"forward", "backward", "optimizer",
                                            "samples_per_micro_batch", "mfu", "tflops"};
const std::vector<std::string> kTrainingKeys{"accumulation", "steps"};
const std::vector<std::string> kSyncKeys{"strategy",     "algorithm", "ps",         "bucket",
                                         "first_bucket", "overlap",   "compression", "buckets"};
const std::vector<std::string> kBucketKeys{"bytes", "ready_at"};
const std::vector<std::string> kPsKeys{"servers", "placement", "hosts"};
const std::vector<std::string> kPsHostsKeys{"count", "nic_bandwidth"};
const std::vector<std::string> kParallelKeys{
    "data",     "shard_group",           "tensor",   "pipeline",
    "schedule", "virtual_stages",        "prefetch", "reshard_after_forward",
    "sync_every_micro_batch", "activation_checkpointing", "order"};
const std::vector<std::string> kDataModes{"ddp", "zero1", "zero2", "zero3", "fsdp", "hsdp"};
const std::vector<std::string> kSchedules{"1f1b", "gpipe", "interleaved"};
constexpr long long kMaxModelParallel = 4096;
constexpr long long kMaxVirtualStages = 64;
constexpr double kMaxGpuMemoryBytes = 1099511627776.0 * 16;  // 16 TiB
const std::vector<std::string> kCompressionKeys{"method", "ratio", "error_feedback", "encode_rate",
                                                "decode_rate"};

const std::vector<std::string> kDtypes{"fp32", "fp16", "bf16", "fp8"};
const std::vector<std::string> kStrategies{"allreduce", "ps", "async-ps"};
const std::vector<std::string> kAlgorithms = sync_algorithm_names();
const std::vector<std::string> kPlacements{"dedicated", "colocated"};
const std::vector<std::string> kOverlaps{"none", "bucketed", "layerwise"};
const std::vector<std::string> kMethods{"none", "int8", "fp8", "int4", "topk"};

// The keys a scenario mapping accepts, by dotted path ("model.layers.#" is any list entry);
// nullptr where the scenario does not fix the keys (inline topology, overrides).
const std::vector<std::string>* scenario_keys_at(const std::string& path) {
  if (path.empty()) return &kTopKeys;
  if (path == "model") return &kModelKeys;
  if (path == "model.layers.#") return &kLayerKeys;
  if (path == "compute") return &kComputeKeys;
  if (path == "training") return &kTrainingKeys;
  if (path == "sync") return &kSyncKeys;
  if (path == "sync.ps") return &kPsKeys;
  if (path == "sync.ps.hosts") return &kPsHostsKeys;
  if (path == "parallel") return &kParallelKeys;
  if (path == "sync.compression") return &kCompressionKeys;
  if (path == "sync.buckets.#") return &kBucketKeys;
  return nullptr;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += sep;
    out += parts[i];
  }
  return out;
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// ---- overrides -----------------------------------------------------------------------------

struct Override {
  std::vector<std::string> path;
  std::string value;  // as given
  SourceMark origin;  // where the override was written
  std::string label;  // "a.b=value"
  // Filled while patching: a key the override adds, and the keys already beside it, to
  // suggest the intended one when the loader rejects the added key.
  std::string added_key;
  std::vector<std::string> siblings;
};

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

// ---- patching YAML text --------------------------------------------------------------------

constexpr std::size_t kNoOwner = static_cast<std::size_t>(-1);

// A piece of the patched text: copied from the original at orig_start, or written by an
// override (owner).
struct Piece {
  std::size_t start = 0;  // in the patched text
  std::size_t length = 0;
  std::size_t orig_start = 0;
  std::size_t owner = kNoOwner;
};

struct Segment {
  std::string text;
  std::size_t owner = kNoOwner;  // kNoOwner: the edit's main owner
};

struct Edit {
  std::size_t pos = 0;    // in the original text
  std::size_t erase = 0;  // original bytes replaced
  std::vector<Segment> insert;
  std::size_t owner = kNoOwner;
};

// Keys to add under one mapping, as a tree: network.roce.pfc and network.roce.ecn become one
// "roce: {pfc: ..., ecn: ...}".
struct AddedKey {
  std::string key;
  std::size_t owner = kNoOwner;
  std::optional<std::string> value;  // a leaf
  std::vector<AddedKey> children;
};

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

struct PendingInsert {
  YAML::Node parent;
  std::vector<AddedKey> keys;
};

class TextPatch {
 public:
  // Applies `overrides` (later ones win on equal keys) to `text`. `context` prefixes the
  // reason of errors found inside an override's value ("in topology x.yaml: ").
  TextPatch(std::string text, std::string file, std::vector<Override> overrides,
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

  [[nodiscard]] const std::string& text() const { return patched_; }
  [[nodiscard]] const std::vector<Override>& overrides() const { return overrides_; }

  // Where a position in the patched text came from, and which override wrote it (if any).
  struct Origin {
    SourceMark mark;
    std::size_t owner = kNoOwner;
  };
  [[nodiscard]] Origin origin_of(const SourceMark& at) const {
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

  // The same error, placed in the original file or at the override that caused it.
  [[nodiscard]] ConfigError translate(const ConfigError& e) const {
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

  template <typename Load>
  auto guard(Load&& load) const -> decltype(load()) {
    try {
      return load();
    } catch (const ConfigError& e) {
      throw translate(e);
    }
  }

 private:
  [[noreturn]] void fail(std::size_t i, const std::string& message) const {
    throw ConfigError(overrides_[i].origin, message);
  }

  std::string prefix(std::size_t i, std::size_t depth) const {
    const auto& p = overrides_[i].path;
    return join(std::vector<std::string>(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(depth)),
                ".");
  }

  void keep_last_of_each_path() {
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

  SourceMark position_in_original(std::size_t offset, bool line_only) const {
    const auto first = original_.begin();
    const auto at = first + static_cast<std::ptrdiff_t>(offset);
    const int line = static_cast<int>(std::count(first, at, '\n')) + 1;
    const std::size_t start = offset == 0 ? std::string::npos : original_.rfind('\n', offset - 1);
    const std::size_t line_start = start == std::string::npos ? 0 : start + 1;
    return SourceMark{file_, line, line_only ? 0 : static_cast<int>(offset - line_start) + 1};
  }

  // End (exclusive) of the value written at `pos`: a scalar on one line or a flow collection.
  std::optional<std::size_t> value_end(const YAML::Node& node) const {
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

  void apply(const YAML::Node& root) {
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

  Edit replace(std::size_t i, const YAML::Node& target) const {
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

  // New keys under a mapping: inside the braces of a flow mapping, else as new lines after the
  // first key whose value is a one-line scalar (so the mapping keeps its first key and mark),
  // indented like it.
  Edit insert(const PendingInsert& p) const {
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

  std::string original_;
  std::string file_;
  std::vector<Override> overrides_;
  std::string context_;
  std::string patched_;
  std::vector<Piece> pieces_;
  std::vector<std::size_t> line_starts_;
  std::string note_;
};

// The scenario's --set keys must name scenario keys: an unknown one is reported at the --set,
// with the closest valid key.
void check_set_path(const Override& o) {
  std::string schema;  // "model.layers.#" for any list entry
  std::string shown;   // "model.layers.3"
  for (std::size_t d = 0; d < o.path.size(); ++d) {
    const std::vector<std::string>* keys = scenario_keys_at(schema);
    if (keys == nullptr) return;
    const std::string& key = o.path[d];
    if (std::find(keys->begin(), keys->end(), key) == keys->end()) {
      const std::string near = config::closest_match(key, *keys);
      const std::string where = shown.empty() ? "at top level" : "in " + shown;
      throw ConfigError(
          o.origin,
          near.empty()
              ? fmt::format("unknown key '{}' {} (valid keys: {})", key, where, join(*keys, ", "))
              : fmt::format("unknown key '{}' {}; did you mean '{}'?", key, where, near));
    }
    schema += (schema.empty() ? "" : ".") + key;
    shown += (shown.empty() ? "" : ".") + key;
    if ((schema == "model.layers" || schema == "sync.buckets") && d + 1 < o.path.size()) {
      schema += ".#";
      shown += "." + o.path[++d];
    }
  }
}

// ---- reading the scenario ------------------------------------------------------------------

// A count of parameters: a number, or one with K, M, B or T (parse_param_count: "7B", "350M").
double count_of(const MapReader& r, const std::string& key, bool allow_zero) {
  double v = 0.0;
  try {
    v = parse_param_count(r.string(key));
  } catch (const UnitError& e) {
    r.fail(key, e.what());
  }
  if (v < 0.0 || (!allow_zero && v == 0.0) || v >= kMaxParams)
    r.fail(key, fmt::format("must be {} and below 1e13, got {}",
                            allow_zero ? "at least 0" : "positive", v));
  return v;
}

Bytes bucket_size(const MapReader& r, const std::string& key, Bytes fallback) {
  if (!r.has(key)) return fallback;
  const Bytes b = r.size(key);
  if (b.bytes() < kMinBucketBytes || b.bytes() > kMaxBucketBytes)
    r.fail(key, fmt::format("must be between 1 KiB and 1 TiB, got {}", format_size(b)));
  return b;
}

BytesPerSecond positive_rate(const MapReader& r, const std::string& key) {
  const BytesPerSecond rate = r.rate(key);
  if (!(rate.bytes_per_second() > 0.0)) r.fail(key, "must be positive");
  return rate;
}

// A compute time (compute.forward/backward/optimizer, a layer's forward/backward): at most an
// hour per micro-batch, beyond which it is a unit typo (a 175B-parameter model's forward pass on
// one sample takes well under a second on one GPU).
constexpr double kMaxComputeSeconds = 3600.0;
std::optional<Seconds> opt_compute_time(const MapReader& r, const std::string& key) {
  const auto t = r.opt_time(key);
  if (t && t->seconds() > kMaxComputeSeconds)
    r.fail(key, fmt::format("{} per micro-batch is too long (at most 1h): a unit typo?",
                            format_time(*t)));
  return t;
}
// model.layers.N.tensors: the elements of each parameter tensor in registration order (what
// DDP buckets), adding up to the layer's params.
std::vector<double> read_tensors(const MapReader& l, double params) {
  const YAML::Node node = l.node("tensors");
  const auto items = config::sequence_of(node, l.file(), l.path("tensors"));
  if (items.empty()) l.fail("tensors", "a tensor list needs at least one tensor");
  if (items.size() > 1000000) l.fail("tensors", "at most 1000000 tensors per layer");
  std::vector<double> tensors;
  double sum = 0.0;
  for (std::size_t k = 0; k < items.size(); ++k) {
    const SourceMark at = mark_of(items[k], l.file());
    double n = 0.0;
    try {
      n = items[k].IsScalar() ? parse_param_count(items[k].Scalar()) : -1.0;
    } catch (const UnitError& e) {
      throw ConfigError(at, fmt::format("{}.{}: {}", l.path("tensors"), k, e.what()));
    }
    if (!(n > 0.0) || n >= kMaxParams)
      throw ConfigError(at, fmt::format("{}.{}: expected a positive element count below 1e13",
                                        l.path("tensors"), k));
    tensors.push_back(n);
    sum += n;
  }
  if (std::abs(sum - params) > 1e-9 * std::max(1.0, params))
    l.fail("tensors", fmt::format("add up to {} elements, and the layer's params are {}",
                                  fmt::format("{:.0f}", sum), fmt::format("{:.0f}", params)));
  return tensors;
}

// A layer's forward FLOPs (a weight for sharing out compute): finite and at most 1e24, so that
// 100000 layers still add up to a finite total.
constexpr double kMaxLayerFlops = 1e24;

// compute: as written; forward/backward may come from the layers instead.
struct ComputeDraft {
  std::optional<Seconds> forward, backward;
  ComputeSpec spec;
  // compute: {mfu: 0.4} or {tflops: 400}: forward/backward from the model's FLOPs once the
  // topology's GPU is known (derive_compute); the layers are split with placeholder totals.
  std::optional<double> mfu, tflops;
  bool optimizer_given = false;
  [[nodiscard]] bool from_flops() const { return mfu || tflops; }
};

ComputeDraft read_compute(const MapReader& top) {
  MapReader r(top.node("compute"), top.file(), "compute", kComputeKeys);
  ComputeDraft d;
  d.forward = opt_compute_time(r, "forward");
  d.backward = opt_compute_time(r, "backward");
  d.spec.optimizer = opt_compute_time(r, "optimizer").value_or(Seconds(0.0));
  d.optimizer_given = r.has("optimizer");
  if (r.has("mfu") && r.has("tflops"))
    r.fail("tflops", "give mfu (a share of the GPU's peak) or tflops (achieved), not both");
  for (const char* key : {"mfu", "tflops"}) {
    if (!r.has(key)) continue;
    for (const char* timed : {"forward", "backward"})
      if (r.has(timed))
        r.fail(key, fmt::format("derives compute.forward and backward from FLOPs; remove "
                                "compute.{} or {}", timed, key));
    const double v = r.number(key);
    if (std::string_view(key) == "mfu" && !(v > 0.0 && v <= 1.0))
      r.fail(key, fmt::format("is a share of the peak in (0, 1], got {}", v));
    if (std::string_view(key) == "tflops" && !(v > 0.0 && v <= 1e6))
      r.fail(key, fmt::format("must be positive TFLOP/s per GPU (at most 1e6), got {}", v));
    (std::string_view(key) == "mfu" ? d.mfu : d.tflops) = v;
  }
  d.spec.samples_per_micro_batch =
      static_cast<std::uint32_t>(r.integer("samples_per_micro_batch", 1, kMaxSamples));
  return d;
}

// Preset totals: compute.forward and compute.backward are required.
std::pair<Seconds, Seconds> required_totals(const MapReader& top, const ComputeDraft& c,
                                            const std::string& why) {
  const MapReader r(top.node("compute"), top.file(), "compute", kComputeKeys);
  if (c.from_flops()) return {Seconds(1.0), Seconds(2.0)};  // placeholders, rescaled later
  for (const char* key : {"forward", "backward"})
    if (!r.has(key))
      throw ConfigError(r.mark(),
                        fmt::format("missing required key '{}' in compute ({}; or give "
                                    "compute.mfu to derive them from FLOPs)", key, why));
  return {*c.forward, *c.backward};
}

std::vector<LayerSpec> read_layer_list(const MapReader& model, const MapReader& top,
                                       ComputeDraft& compute) {
  const auto items = config::sequence_of(model.node("layers"), model.file(), "model.layers");
  if (items.empty())
    throw ConfigError(mark_of(model.node("layers"), model.file()),
                      "model.layers: an explicit layer list needs at least one layer");
  struct Entry {
    LayerSpec layer;
    long long repeat = 1;
    bool timed = false;
    std::optional<double> flops;
    SourceMark at;
  };
  std::vector<Entry> entries;
  long long expanded = 0, tensors = 0;
  std::optional<std::size_t> first_timed, first_untimed, first_flops, first_no_flops;
  for (std::size_t i = 0; i < items.size(); ++i) {
    MapReader l(items[i], model.file(), fmt::format("model.layers.{}", i), kLayerKeys);
    Entry e;
    e.at = l.mark();
    e.layer.name = l.opt_string("name").value_or(fmt::format("layer{}", i));
    e.layer.params = count_of(l, "params", true);
    e.layer.group = l.opt_string("group").value_or("");
    e.repeat = l.opt_integer("repeat", 1, kMaxLayers).value_or(1);
    if (l.has("tensors")) e.layer.tensors = read_tensors(l, e.layer.params);
    const auto fwd = opt_compute_time(l, "forward");
    const auto bwd = opt_compute_time(l, "backward");
    if (fwd.has_value() != bwd.has_value())
      l.fail(fwd ? "forward" : "backward", "forward and backward are given together");
    if (fwd) {
      e.timed = true;
      e.layer.forward = *fwd;
      e.layer.backward = *bwd;
    }
    if (l.has("flops")) {
      e.flops = l.number("flops");
      if (*e.flops < 0.0) l.fail("flops", "must be at least 0");
      if (*e.flops > kMaxLayerFlops) l.fail("flops", "must be at most 1e24 (FLOPs per sample)");
      if (e.timed)
        l.fail("flops",
               "shares out compute.forward/backward, but this layer gives "
               "its own forward/backward");
    }
    (e.timed ? first_timed : first_untimed) = (e.timed ? first_timed : first_untimed).value_or(i);
    (e.flops ? first_flops : first_no_flops) = (e.flops ? first_flops : first_no_flops).value_or(i);
    expanded += e.repeat;
    if (expanded > kMaxLayers)
      l.fail(l.has("repeat") ? "repeat" : "params",
             fmt::format("the model would have more than {} layers", kMaxLayers));
    // Each repeated layer copies its tensor list: 2000 tensors x repeat 100000 would be
    // 1.6 GB of doubles from a 6 KB file.
    tensors += e.repeat * static_cast<long long>(std::max<std::size_t>(1, e.layer.tensors.size()));
    if (tensors > kMaxTensors)
      l.fail(l.has("repeat") ? "repeat" : "tensors",
             fmt::format("the model would have more than {} parameter tensors (tensors: times "
                         "repeat:, over all layers)", kMaxTensors));
    entries.push_back(std::move(e));
  }
  if (first_timed && first_untimed)
    throw ConfigError(entries[*first_untimed].at,
                      fmt::format("model.layers.{}: has no forward/backward while "
                                  "model.layers.{} has them; give them for every layer, or for "
                                  "none (then compute.forward/backward are shared out)",
                                  *first_untimed, *first_timed));
  if (first_flops && first_no_flops)
    throw ConfigError(entries[*first_no_flops].at,
                      fmt::format("model.layers.{}: has no flops while model.layers.{} has them; "
                                  "give flops for every layer or for none",
                                  *first_no_flops, *first_flops));

  std::vector<LayerSpec> layers;
  std::vector<double> weights;
  layers.reserve(static_cast<std::size_t>(expanded));
  for (const Entry& e : entries)
    for (long long r = 0; r < e.repeat; ++r) {
      LayerSpec layer = e.layer;
      layer.flops = e.flops.value_or(0.0);
      if (e.repeat > 1) layer.name = fmt::format("{}.{}", e.layer.name, r);
      layers.push_back(std::move(layer));
      weights.push_back(e.flops.value_or(e.layer.params));
    }

  const MapReader c(top.node("compute"), top.file(), "compute", kComputeKeys);
  if (first_timed) {
    Seconds f{0.0}, b{0.0};
    for (const auto& l : layers) {
      f += l.forward;
      b += l.backward;
    }
    for (const char* key : {"forward", "backward", "mfu", "tflops"})
      if (c.has(key))
        c.fail(key, fmt::format("the layers of model.layers give their own times (forward "
                                "{}, backward {}); remove compute.{}",
                                format_time(f), format_time(b), key));
    compute.forward = f;
    compute.backward = b;
    return layers;
  }
  const auto [f, b] =
      required_totals(top, compute, "the layers of model.layers give no forward/backward");
  try {
    split_compute(layers, weights, f, b);
  } catch (const std::invalid_argument&) {
    throw ConfigError(mark_of(model.node("layers"), model.file()),
                      fmt::format("model.layers: the layers' {} add up to 0, so compute.forward "
                                  "cannot be shared out; give forward/backward per layer",
                                  first_flops ? "flops" : "params"));
  }
  return layers;
}

// model: {preset: NAME} (model_presets.hpp), with layers, hidden, vocab, seq_len and params
// overriding the preset's; params rescales the blocks (within kMaxPresetMismatch).
std::vector<LayerSpec> read_named_preset(const MapReader& m, const MapReader& top,
                                         ComputeDraft& compute, ModelSpec& model) {
  std::vector<std::string> names;
  for (const ModelPreset& p : model_presets()) names.emplace_back(p.name);
  const ModelPreset& preset = *find_model_preset(m.choice("preset", names));
  if (m.has("tie_embeddings"))
    m.fail("tie_embeddings", fmt::format("is fixed by the preset's architecture ({})", preset.name));
  PresetDims d = preset_dims(preset);
  if (preset.arch == PresetArch::ResNet)
    for (const char* key : {"layers", "hidden", "vocab", "seq_len", "params"})
      if (m.has(key))
        m.fail(key, fmt::format("{} is a convolutional network with fixed layers; remove {}",
                                preset.name, key));
  if (m.has("layers")) d.blocks = static_cast<std::uint32_t>(m.integer("layers", 1, kMaxLayers - 2));
  if (m.has("hidden")) d.hidden = static_cast<double>(m.integer("hidden", 1, kMaxHidden));
  if (m.has("vocab")) d.vocab = static_cast<double>(m.integer("vocab", 1, kMaxVocab));
  if (m.has("seq_len")) d.seq_len = static_cast<double>(m.integer("seq_len", 1, kMaxSeqLen));
  const auto [f, b] = required_totals(top, compute, "the preset shares them out");
  std::vector<LayerSpec> layers = preset_layers(preset, d, f, b);
  double total = 0.0, blocks = 0.0;
  for (const LayerSpec& l : layers) {
    total += l.params;
    if (l.name.rfind("block", 0) == 0) blocks += l.params;
  }
  if (total >= kMaxParams)
    m.fail("hidden", fmt::format("the model would have {:.4g} parameters (at most 1e13)", total));
  if (m.has("params")) {
    const double params = count_of(m, "params", false);
    const double scale = (params - (total - blocks)) / blocks;
    if (std::abs(total - params) > kMaxPresetMismatch * params || !(scale > 0.0))
      m.fail("params", fmt::format("{:.4g} is more than {:.0f} % away from the {:.4g} parameters "
                                   "of {} with these dimensions; check them, or leave params out",
                                   params, 100 * kMaxPresetMismatch, total, preset.name));
    for (LayerSpec& l : layers)
      if (l.name.rfind("block", 0) == 0) {
        l.params *= scale;
        for (double& n : l.tensors) n *= scale;
      }
  }
  if (preset.arch != PresetArch::ResNet) {  // a CNN has no tokens of a width to move
    model.hidden = d.hidden;
    model.vocab = d.vocab;
    model.seq_len = d.seq_len;
  }
  return layers;
}

std::vector<LayerSpec> read_preset(const MapReader& m, const MapReader& top,
                                   ComputeDraft& compute) {
  const bool has_hidden = m.has("hidden");
  if (has_hidden != m.has("vocab"))
    throw ConfigError(m.mark(), fmt::format("missing required key '{}' in model (hidden: and "
                                            "vocab: size the embedding and head together)",
                                            has_hidden ? "vocab" : "hidden"));
  std::vector<LayerSpec> layers;
  if (has_hidden) {
    TransformerShape shape;
    shape.blocks = static_cast<std::uint32_t>(m.integer("layers", 1, kMaxLayers - 2));
    shape.hidden = static_cast<double>(m.integer("hidden", 1, kMaxHidden));
    shape.vocab = static_cast<double>(m.integer("vocab", 1, kMaxVocab));
    shape.seq_len = static_cast<double>(m.opt_integer("seq_len", 1, kMaxSeqLen).value_or(0));
    shape.tie_embeddings = m.opt_boolean("tie_embeddings").value_or(false);
    std::optional<double> params;
    const double formula = transformer_params(shape);
    if (m.has("params")) {
      params = count_of(m, "params", false);
      if (std::abs(formula - *params) > kMaxPresetMismatch * *params)
        m.fail("params",
               fmt::format("{:.4g} is more than {:.0f} % away from the {:.4g} "
                           "parameters of layers: {}, hidden: {}, vocab: {}{}; check "
                           "them, or leave params out",
                           *params, 100 * kMaxPresetMismatch, formula, shape.blocks, shape.hidden,
                           shape.vocab, shape.tie_embeddings ? ", tied embeddings" : ""));
    } else if (formula >= kMaxParams) {
      m.fail("hidden",
             fmt::format("the model would have {:.4g} parameters (at most 1e13)", formula));
    }
    const auto [f, b] = required_totals(top, compute, "the transformer preset shares them out");
    try {
      return transformer_layers(shape, params, f, b);
    } catch (const std::invalid_argument& e) {
      m.fail("params", e.what());
    }
  }
  for (const char* key : {"seq_len", "tie_embeddings"})
    if (m.has(key)) m.fail(key, "applies to the transformer preset (hidden:, vocab:)");
  const double params = count_of(m, "params", false);
  const auto count = static_cast<std::uint32_t>(m.opt_integer("layers", 1, kMaxLayers).value_or(1));
  const auto [f, b] = required_totals(top, compute, "the params preset shares them out");
  return equal_layers(params, count, f, b);
}

ModelSpec read_model(const MapReader& top, ComputeDraft& compute) {
  MapReader m(top.node("model"), top.file(), "model", kModelKeys);
  ModelSpec model;
  const bool named = m.has("preset");
  model.grad_dtype = *grad_dtype_from_string(
      named ? m.opt_choice("grad_dtype", kDtypes).value_or("bf16") : m.choice("grad_dtype", kDtypes));
  const YAML::Node layers = m.self()["layers"];
  if (named) {
    if (layers.IsDefined() && layers.IsSequence())
      m.fail("layers", "with a preset, layers: is the number of blocks");
    model.layers = read_named_preset(m, top, compute, model);
  } else if (layers.IsDefined() && layers.IsSequence()) {
    for (const char* key : {"params", "hidden", "vocab", "seq_len", "tie_embeddings"})
      if (m.has(key))
        m.fail(key,
               "applies to a preset (layers: N); an explicit layer list gives each "
               "layer's params");
    model.layers = read_layer_list(m, top, compute);
  } else {
    model.layers = read_preset(m, top, compute);
  }
  if (!named && m.has("hidden") && !(layers.IsDefined() && layers.IsSequence())) {
    model.hidden = static_cast<double>(m.integer("hidden", 1, kMaxHidden));
    model.vocab = static_cast<double>(m.integer("vocab", 1, kMaxVocab));
    model.seq_len = static_cast<double>(m.opt_integer("seq_len", 1, kMaxSeqLen).value_or(0));
  }
  const double total = model.total_params();
  if (!(total > 0.0)) throw ConfigError(m.mark(), "model: the layers hold no parameters");
  if (total >= kMaxParams)
    throw ConfigError(m.mark(), fmt::format("model: {:.4g} parameters; at most 1e13", total));
  return model;
}

TrainingSpec read_training(const MapReader& top) {
  TrainingSpec t;
  if (!top.has("training")) return t;
  MapReader r(top.node("training"), top.file(), "training", kTrainingKeys);
  t.accumulation =
      static_cast<std::uint32_t>(r.opt_integer("accumulation", 1, kMaxAccumulation).value_or(1));
  t.steps = static_cast<std::uint32_t>(r.opt_integer("steps", 1, kMaxSteps).value_or(1));
  return t;
}

CompressionSpec read_compression(const MapReader& sync) {
  CompressionSpec c;
  const YAML::Node node = sync.node("compression");
  if (node.IsScalar()) {  // compression: int8
    c.method = *compression_method_from_string(sync.choice("compression", kMethods));
    if (c.method == CompressionMethod::TopK)
      sync.fail("compression", "topk needs a ratio: write {method: topk, ratio: 0.01}");
    return c;
  }
  MapReader r(node, sync.file(), "sync.compression", kCompressionKeys);
  c.method = *compression_method_from_string(r.choice("method", kMethods));
  const bool none = c.method == CompressionMethod::None;
  if (c.method == CompressionMethod::TopK) {
    if (!r.has("ratio"))
      throw ConfigError(r.mark(),
                        "missing required key 'ratio' in sync.compression (method: "
                        "topk keeps this share of the elements)");
    c.ratio = r.number("ratio");
    if (!(c.ratio > 0.0 && c.ratio <= 1.0))
      r.fail("ratio", fmt::format("must be in (0, 1], got {}", c.ratio));
  } else if (r.has("ratio")) {
    r.fail("ratio", "applies to method: topk only");
  }
  for (const char* key : {"error_feedback", "encode_rate", "decode_rate"})
    if (none && r.has(key)) r.fail(key, "applies when a compression method is set");
  c.error_feedback = r.opt_boolean("error_feedback").value_or(false);
  if (r.has("encode_rate")) c.encode_rate = positive_rate(r, "encode_rate");
  if (r.has("decode_rate")) c.decode_rate = positive_rate(r, "decode_rate");
  return c;
}

// sync.buckets: [{bytes: 1MiB, ready_at: 2ms}, ...] in the order they become ready.
std::vector<ExplicitBucket> read_explicit_buckets(const MapReader& r) {
  const auto items = config::sequence_of(r.node("buckets"), r.file(), "sync.buckets");
  if (items.empty()) r.fail("buckets", "an explicit bucket list needs at least one bucket");
  if (items.size() > 1000000) r.fail("buckets", "at most 1000000 buckets");
  std::vector<ExplicitBucket> out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const MapReader b(items[i], r.file(), fmt::format("sync.buckets.{}", i), kBucketKeys);
    ExplicitBucket e;
    e.bytes = b.size("bytes");
    if (!(e.bytes.bytes() > 0.0) || e.bytes.bytes() > kMaxBucketBytes)
      b.fail("bytes", fmt::format("must be positive and at most 1 TiB, got {}",
                                  format_size(e.bytes)));
    e.ready_at = b.time("ready_at");
    if (e.ready_at.seconds() < 0.0) b.fail("ready_at", "must be at least 0");
    if (e.ready_at.seconds() > kMaxComputeSeconds)
      b.fail("ready_at", "must be within the backward (at most 1h)");
    if (!out.empty() && e.ready_at < out.back().ready_at)
      b.fail("ready_at", fmt::format("is before sync.buckets.{}.ready_at ({}): buckets are "
                                     "listed in the order they become ready",
                                     i - 1, format_time(out.back().ready_at)));
    out.push_back(e);
  }
  return out;
}

SyncSpec read_sync(const MapReader& top) {
  SyncSpec s;
  if (!top.has("sync")) return s;
  MapReader r(top.node("sync"), top.file(), "sync", kSyncKeys);
  s.strategy =
      *sync_strategy_from_string(r.opt_choice("strategy", kStrategies).value_or("allreduce"));
  s.algorithm =
      *sync_algorithm_from_string(r.opt_choice("algorithm", kAlgorithms).value_or("auto"));
  if (r.has("ps")) {
    MapReader p(r.node("ps"), r.file(), "sync.ps", kPsKeys);
    s.ps.servers = static_cast<std::uint32_t>(p.opt_integer("servers", 1, kMaxServers).value_or(1));
    s.ps.placement = p.opt_choice("placement", kPlacements).value_or("dedicated") == "colocated"
                         ? PsPlacement::Colocated
                         : PsPlacement::Dedicated;
    if (p.has("hosts")) {
      MapReader h(p.node("hosts"), r.file(), "sync.ps.hosts", kPsHostsKeys);
      PsHostsSpec hosts;
      hosts.count = static_cast<std::uint32_t>(h.integer("count", 1, kMaxServers));
      hosts.nic_bandwidth = h.opt_rate("nic_bandwidth");
      hosts.origin = h.mark();
      if (p.has("placement") && s.ps.placement == PsPlacement::Colocated)
        p.fail("placement", "colocated servers run on the GPUs; sync.ps.hosts puts them on hosts "
                            "of their own (remove one of the two)");
      if (p.has("servers") && s.ps.servers != hosts.count)
        p.fail("servers", fmt::format("{} servers on {} hosts: with sync.ps.hosts each host runs "
                                      "one server (servers defaults to hosts.count)",
                                      s.ps.servers, hosts.count));
      s.ps.servers = hosts.count;
      s.ps.hosts = hosts;
    }
  }
  s.bucket = bucket_size(r, "bucket", kDdpBucketBytes);
  s.first_bucket = bucket_size(r, "first_bucket", kDdpFirstBucketBytes);
  // overlap: true / false read as bucketed / none (DDP overlaps by default; none turns it off).
  const std::optional<std::string> overlap_text =
      r.has("overlap") ? r.opt_string("overlap") : std::nullopt;
  if (overlap_text == "true" || overlap_text == "false")
    s.overlap = *overlap_text == "true" ? Overlap::Bucketed : Overlap::None;
  else
    s.overlap = *overlap_from_string(r.opt_choice("overlap", kOverlaps).value_or("bucketed"));
  if (r.has("compression")) s.compression = read_compression(r);
  if (r.has("buckets")) s.buckets = read_explicit_buckets(r);
  return s;
}

// Checks of sync.buckets against the model, the compute and the other sync keys: they are the
// gradients of this model, ready during its backward, and they replace DDP's bucket rule.
void check_explicit_buckets(const MapReader& top, const Scenario& sc) {
  if (sc.sync.buckets.empty()) return;
  const MapReader r(top.node("sync"), top.file(), "sync", kSyncKeys);
  for (const char* key : {"bucket", "first_bucket"})
    if (r.has(key))
      r.fail(key, "sync.buckets gives the buckets themselves; remove sync.bucket and "
                  "sync.first_bucket (DDP's rule for building them)");
  if (sc.sync.overlap == Overlap::Layerwise)
    r.fail("overlap", "layerwise makes one bucket per layer; it cannot be used with sync.buckets");
  if (!sc.parallel.plain())
    r.fail("buckets", "applies to plain data parallelism (parallel.data: ddp, tensor and "
                      "pipeline 1)");
  Bytes sum{0.0};
  for (const ExplicitBucket& b : sc.sync.buckets) sum += b.bytes;
  const Bytes grads = sc.model.grad_bytes();
  if (std::abs(sum.bytes() - grads.bytes()) > 0.01 * grads.bytes())
    r.fail("buckets", fmt::format("add up to {}, and the model's gradients are {} ({} parameters "
                                  "× {:g} bytes): they must agree within 1 %",
                                  format_size(sum), format_size(grads),
                                  fmt::format("{:.0f}", sc.model.total_params()),
                                  sc.model.bytes_per_grad()));
  const auto items = config::sequence_of(r.node("buckets"), r.file(), "sync.buckets");
  for (std::size_t i = 0; i < sc.sync.buckets.size(); ++i)
    if (sc.sync.buckets[i].ready_at.seconds() > sc.compute.backward.seconds() + 1e-9)
      throw ConfigError(
          MapReader(items[i], r.file(), fmt::format("sync.buckets.{}", i), kBucketKeys)
              .mark("ready_at"),
          fmt::format("sync.buckets.{}.ready_at: {} is after the backward ends ({})", i,
                      format_time(sc.sync.buckets[i].ready_at), format_time(sc.compute.backward)));
}

// `data_from_set`: parallel.data comes from a --set (a what-if), so the file's keys of its
// other mode (shard_group for hsdp; prefetch, resharding and micro-batch syncs for sharded
// modes) are set aside with a note instead of rejected.
ParallelSpec read_parallel(const MapReader& top, bool data_from_set, std::vector<std::string>& notes) {
  ParallelSpec p;
  if (!top.has("parallel")) return p;
  MapReader r(top.node("parallel"), top.file(), "parallel", kParallelKeys);
  p.data = *data_parallelism_from_string(r.opt_choice("data", kDataModes).value_or("ddp"));
  auto set_aside = [&](const char* key, std::string_view applies_to) {
    if (!data_from_set || !r.has(key)) return false;
    notes.push_back(fmt::format("parallel.{} of {} set aside: it applies to data: {}, and --set "
                                "made data: {}", key, top.file(), applies_to, to_string(p.data)));
    return true;
  };
  p.tensor = static_cast<std::uint32_t>(r.opt_integer("tensor", 1, kMaxModelParallel).value_or(1));
  p.pipeline =
      static_cast<std::uint32_t>(r.opt_integer("pipeline", 1, kMaxModelParallel).value_or(1));
  p.schedule = *pipeline_schedule_from_string(r.opt_choice("schedule", kSchedules).value_or("1f1b"));
  p.virtual_stages = static_cast<std::uint32_t>(
      r.opt_integer("virtual_stages", 1, kMaxVirtualStages).value_or(1));
  if (r.has("order")) {
    const std::string text = r.string("order");
    const auto order = parallel_order_from_string(text);
    if (!order)
      r.fail("order", fmt::format("'{}' is not an order of tp, dp and pp, innermost first (the "
                                  "default: tp-dp-pp)", text));
    p.order = *order;
  }
  const bool sharded = shards_parameters(p.data);
  if (r.has("shard_group") &&
      !(p.data != DataParallelism::Hsdp && set_aside("shard_group", "hsdp"))) {
    if (p.data != DataParallelism::Hsdp) r.fail("shard_group", "applies to data: hsdp only");
    p.shard_group = static_cast<std::uint32_t>(r.integer("shard_group", 1, kMaxGpus));
  }
  bool use_sharded_keys = true;
  for (const char* key : {"prefetch", "reshard_after_forward", "sync_every_micro_batch"}) {
    if (sharded || !r.has(key)) continue;
    if (set_aside(key, "zero3, fsdp or hsdp")) {
      use_sharded_keys = false;
      continue;
    }
    r.fail(key, fmt::format("applies to data: zero3, fsdp or hsdp (they gather parameters "
                              "per unit); {} {}",
                              to_string(p.data),
                              p.data == DataParallelism::Zero1
                                  ? "syncs once per step (it keeps unsharded gradients)"
                              : p.data == DataParallelism::Zero2
                                  ? "reduce-scatters after every micro-batch (its gradients are "
                                    "sharded)"
                                  : "all-reduces once per step"));
  }
  if (use_sharded_keys) {
    p.prefetch = r.opt_boolean("prefetch").value_or(true);
    p.reshard_after_forward = r.opt_boolean("reshard_after_forward").value_or(true);
    p.sync_every_micro_batch = r.opt_boolean("sync_every_micro_batch").value_or(true);
  }
  p.activation_checkpointing = r.opt_boolean("activation_checkpointing").value_or(false);
  if (p.virtual_stages > 1 && p.schedule != PipelineSchedule::Interleaved)
    r.fail("virtual_stages", "applies to schedule: interleaved");
  if (p.schedule == PipelineSchedule::Interleaved && p.pipeline < 2)
    r.fail("schedule", "interleaved needs pipeline: 2 or more");
  return p;
}

// Checks of parallel: against the model, the training loop, the sync and the GPUs used.
void check_parallel(const MapReader& top, const Scenario& sc, std::uint32_t gpus,
                    const Topology& topo) {
  const ParallelSpec& p = sc.parallel;
  if (p.plain()) return;
  const std::uint32_t gpus_per_server = ranks_per_node(topo, place_ranks(topo, gpus));
  const MapReader r(top.node("parallel"), top.file(), "parallel", kParallelKeys);
  const std::string first_key = r.has("data") ? "data" : r.has("tensor") ? "tensor" : "pipeline";
  if (sc.sync.strategy != SyncStrategy::AllReduce)
    r.fail(first_key, fmt::format("needs sync.strategy: allreduce ({} is a parameter server)",
                                  to_string(sc.sync.strategy)));
  if (sc.sync.compression.method != CompressionMethod::None)
    r.fail(first_key, "compression is modelled for plain DDP only (data: ddp, tensor: 1, "
                      "pipeline: 1)");
  if ((p.tensor > 1 || p.pipeline > 1) && !(sc.model.hidden > 0.0 && sc.model.seq_len > 0.0))
    r.fail(p.tensor > 1 ? "tensor" : "pipeline",
           "needs model.hidden and model.seq_len (the transformer preset): they size the "
           "activations that tensor and pipeline parallelism move");
  try {
    const ParallelLayout layout = make_layout(gpus, p, gpus_per_server);
    (void)stage_layers(sc.model, p);
    (void)layout;
  } catch (const std::invalid_argument& e) {
    const std::string key = r.has("shard_group") && std::string(e.what()).find("shard_group") == 0
                                ? "shard_group"
                            : r.has("tensor") ? "tensor"
                                              : "pipeline";
    r.fail(key, fmt::format("{} ({} GPUs used)", e.what(), gpus));
  }
  if (p.schedule == PipelineSchedule::Interleaved && sc.training.accumulation % p.pipeline != 0)
    r.fail("schedule", fmt::format("interleaved needs training.accumulation (micro-batches, {}) "
                                   "a multiple of pipeline ({})",
                                   sc.training.accumulation, p.pipeline));
}

// topology_overrides: {nodes: 2, network.fabric: roce, node: {nics: 4}} → dotted overrides,
// each reported at its value in the scenario file (or the --set that wrote it).
void flatten_overrides(const YAML::Node& node, const std::string& file,
                       std::vector<std::string> prefix, std::vector<Override>& out) {
  for (auto it = node.begin(); it != node.end(); ++it) {
    const YAML::Node key = it->first;
    const YAML::Node value = it->second;
    if (!key.IsScalar()) throw ConfigError(mark_of(key, file), "keys must be plain words");
    std::vector<std::string> path = prefix;
    const std::string& k = key.Scalar();
    std::size_t start = 0;
    while (true) {
      const std::size_t dot = k.find('.', start);
      path.push_back(k.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
      if (path.back().empty())
        throw ConfigError(
            mark_of(key, file),
            fmt::format("topology_overrides: '{}' has an empty part between dots", k));
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    if (value.IsMap()) {
      flatten_overrides(value, file, path, out);
      continue;
    }
    if (!value.IsScalar())
      throw ConfigError(
          mark_of(value.IsNull() ? key : value, file),
          fmt::format("topology_overrides: {} needs a single value", join(path, ".")));
    Override o;
    o.path = path;
    o.value = value.Scalar();
    // In the coordinates of the (possibly --set-patched) scenario text: an error there passes
    // through the scenario's patch too, which maps it to the file or to the --set.
    o.origin = mark_of(value, file);
    o.label = join(path, ".") + "=" + value.Scalar();
    out.push_back(std::move(o));
  }
}

// The inline topology mapping alone, at the same offsets as in the scenario text: everything
// before it becomes spaces (newlines kept), everything from the next top-level key on is cut.
std::string inline_topology_text(const std::string& text, const YAML::Node& root,
                                 const YAML::Node& topology) {
  const auto begin = static_cast<std::size_t>(topology.Mark().pos);
  std::size_t end = text.size();
  for (auto it = root.begin(); it != root.end(); ++it) {
    const auto pos = static_cast<std::size_t>(it->first.Mark().pos);
    if (pos > begin) end = std::min(end, pos);
  }
  std::string out = text.substr(0, end);
  for (std::size_t i = 0; i < begin && i < out.size(); ++i)
    if (out[i] != '\n' && out[i] != '\r') out[i] = ' ';
  return out;
}

// compute: {mfu | tflops}: one micro-batch's forward = its FLOPs (Σ LayerSpec::flops × samples)
// over the achieved rate (mfu × the GPU's dense peak for the gradient dtype, gpu_catalog.hpp, or
// tflops), backward twice that (Kaplan et al. 2020 §2.1), the layers rescaled from their
// placeholder split; without compute.optimizer, the fused AdamW step from memory traffic
// (kAdamBytesPerParam × parameters / bandwidth). What was derived goes to sc.notes.
void derive_compute(const MapReader& top, const ComputeDraft& c, const Topology& topo, Scenario& sc) {
  const MapReader r(top.node("compute"), top.file(), "compute", kComputeKeys);
  const char* key = c.mfu ? "mfu" : "tflops";
  double per_sample = 0.0;
  for (const LayerSpec& l : sc.model.layers) per_sample += l.flops;
  if (!(per_sample > 0.0))
    r.fail(key, "needs the model's FLOPs: a preset (model.preset), a transformer with "
                "model.seq_len, or flops: on every layer of model.layers");
  const GpuSpec* gpu = find_gpu(topo.gpu_model());
  double rate = 0.0;
  std::string how;
  if (c.mfu) {
    if (gpu == nullptr)
      r.fail(key, fmt::format("the topology's gpu: '{}' is not in the GPU catalog (v100, a100, "
                              "h100, h200, b200, gb200, l40s, rtx4090); give compute.tflops",
                              topo.gpu_model()));
    const std::optional<double> peak = peak_flops(*gpu, sc.model.grad_dtype);
    if (!peak)
      r.fail(key, fmt::format("{} has no dense {} tensor-core peak; give compute.tflops",
                              gpu->name, to_string(sc.model.grad_dtype)));
    rate = *c.mfu * *peak;
    how = fmt::format("{:g} × {} {:g} TFLOP/s dense {} peak ({})", *c.mfu, gpu->name,
                      *peak / 1e12, to_string(sc.model.grad_dtype), gpu->source);
  } else {
    rate = *c.tflops * 1e12;
    how = fmt::format("{:g} TFLOP/s achieved", *c.tflops);
  }
  const double samples = sc.compute.samples_per_micro_batch;
  const Seconds forward(per_sample * samples / rate);
  if (forward.seconds() > kMaxComputeSeconds)
    r.fail(key, fmt::format("gives a forward of {} per micro-batch ({:.4g} FLOP at {:.4g} "
                            "FLOP/s); more than an hour is a unit or model mistake",
                            format_time(forward), per_sample * samples, rate));
  const double f_scale = forward.seconds() / sc.compute.forward.seconds();
  const double b_scale = 2.0 * forward.seconds() / sc.compute.backward.seconds();
  for (LayerSpec& l : sc.model.layers) {
    l.forward = l.forward * f_scale;
    l.backward = l.backward * b_scale;
  }
  sc.compute.forward = forward;
  sc.compute.backward = forward * 2.0;
  sc.notes.push_back(fmt::format("compute derived: forward {} = {:.4g} FLOP per micro-batch "
                                 "({:g} sample{}) / {}; backward 2 × forward",
                                 format_time(forward), per_sample * samples, samples,
                                 samples == 1 ? "" : "s", how));
  if (!c.optimizer_given) {
    if (gpu == nullptr)
      r.fail(key, fmt::format("cannot derive compute.optimizer: the topology's gpu: '{}' is not "
                              "in the GPU catalog; give compute.optimizer",
                              topo.gpu_model()));
    const double params = sc.model.total_params();
    sc.compute.optimizer = Seconds(kAdamBytesPerParam * params / (gpu->memory_tbps * 1e12));
    sc.notes.push_back(fmt::format("compute derived: optimizer {} = {:g} B × {:.4g} parameters / "
                                   "{:g} TB/s (fused AdamW)", format_time(sc.compute.optimizer),
                                   kAdamBytesPerParam, params, gpu->memory_tbps));
  }
}

LoadedScenario load(const std::string& text, const std::string& file,
                    const std::vector<std::string>& sets) {
  // Split the --set overrides: topology_overrides.* go to the topology.
  std::vector<Override> scenario_sets, topology_sets;
  for (const std::string& s : sets) {
    Override o = parse_set(s);
    if (o.path.front() == "topology_overrides") {
      if (o.path.size() == 1)
        throw ConfigError(o.origin, "name the topology key: --set topology_overrides.nodes=2");
      o.path.erase(o.path.begin());
      o.label = join(o.path, ".") + "=" + o.value;
      topology_sets.push_back(std::move(o));
    } else {
      check_set_path(o);
      scenario_sets.push_back(std::move(o));
    }
  }

  const TextPatch scenario_patch(text, file, scenario_sets, "");
  return scenario_patch.guard([&] {
    const YAML::Node root = config::parse_yaml(scenario_patch.text(), file);
    if (!root.IsDefined() || root.IsNull())
      throw ConfigError(SourceMark{file, 1, 1},
                        "empty file: expected a scenario (README.md, Scenario files)");
    MapReader top(root, file, "", kTopKeys);

    LoadedScenario out;
    Scenario& sc = out.scenario;
    sc.file = file;
    sc.sets = sets;
    sc.name = top.opt_string("name").value_or(fs::path(file).stem().string());

    ComputeDraft compute = read_compute(top);
    sc.model = read_model(top, compute);
    sc.compute = compute.spec;
    if (compute.from_flops()) compute.forward = Seconds(1.0), compute.backward = Seconds(2.0);
    sc.compute.forward = *compute.forward;
    sc.compute.backward = *compute.backward;
    if (!((sc.compute.forward + sc.compute.backward).seconds() > 0.0))
      throw ConfigError(MapReader(top.node("compute"), file, "compute", kComputeKeys).mark(),
                        "compute: forward + backward must be positive");
    sc.training = read_training(top);
    sc.sync = read_sync(top);
    const bool data_from_set = std::any_of(sets.begin(), sets.end(), [](const std::string& s) {
      return s.rfind("parallel.data=", 0) == 0;
    });
    sc.parallel = read_parallel(top, data_from_set, sc.notes);
    if (top.has("memory")) {
      const Bytes mem = top.size("memory");
      if (!(mem.bytes() > 0.0) || mem.bytes() > kMaxGpuMemoryBytes)
        top.fail("memory", fmt::format("must be positive and at most 16 TiB per GPU, got {}",
                                       format_size(mem)));
      sc.memory = mem;
    }
    const auto gpus = top.opt_integer("gpus", 1, kMaxGpus);
    if (gpus) sc.gpus = static_cast<std::uint32_t>(*gpus);

    // Topology overrides: the file's, then the --set ones (later ones win).
    std::vector<Override> topology_overrides;
    if (top.has("topology_overrides")) {
      const YAML::Node node = top.node("topology_overrides");
      if (!node.IsMap())
        throw ConfigError(mark_of(node, file),
                          "topology_overrides must be a mapping of topology keys, e.g. {nodes: 2}");
      flatten_overrides(node, file, {}, topology_overrides);
    }
    for (auto& o : topology_sets) topology_overrides.push_back(o);
    for (const auto& o : topology_overrides) sc.topology_overrides.push_back(o.label);

    const YAML::Node topology = top.node("topology");
    if (topology.IsScalar()) {
      fs::path path(topology.Scalar());
      if (path.is_relative()) path = fs::path(file).parent_path() / path;
      path = path.lexically_normal();
      std::error_code ec;
      if (!fs::is_regular_file(path, ec))
        top.fail("topology",
                 fmt::format("cannot open '{}' (looked for {})", topology.Scalar(), path.string()));
      sc.topology.path = path;
      const std::string topo_file = path.string();
      std::string topo_text;
      (void)config::load_yaml_file(topo_file, &topo_text);
      const TextPatch patch(topo_text, topo_file, topology_overrides,
                            fmt::format("in topology {}: ", topo_file));
      out.topology = patch.guard([&] { return load_topology_text(patch.text(), topo_file); });
    } else if (topology.IsMap()) {
      sc.topology.path = file;
      sc.topology.inline_mapping = true;
      const TextPatch patch(inline_topology_text(scenario_patch.text(), root, topology), file,
                            topology_overrides, "in the inline topology: ");
      out.topology = patch.guard([&] { return load_topology_text(patch.text(), file); });
    } else {
      top.fail("topology", "expected a topology file path or an inline topology mapping");
    }
    out.topology.path = sc.topology.path;

    if (compute.from_flops()) derive_compute(top, compute, out.topology.topology, sc);
    const auto available = static_cast<std::uint32_t>(out.topology.topology.gpu_count());
    if (sc.gpus && *sc.gpus > available)
      top.fail("gpus",
               fmt::format("the topology {} has {} GPUs", out.topology.topology.name(), available));
    const std::uint32_t used = sc.gpus.value_or(available);
    check_parallel(top, sc, used, out.topology.topology);
    // A --set of DDP's bucket rule on a scenario with explicit buckets (an imported trace) is
    // a what-if of bucket sizes: the file's buckets are set aside, its layers are bucketed.
    const bool rule_from_set = std::any_of(sets.begin(), sets.end(), [](const std::string& s) {
      return s.rfind("sync.bucket=", 0) == 0 || s.rfind("sync.first_bucket=", 0) == 0;
    });
    if (rule_from_set && !sc.sync.buckets.empty()) {
      sc.sync.buckets.clear();
      sc.notes.push_back(fmt::format("sync.buckets of {} set aside: --set sync.bucket makes DDP's "
                                     "rule bucket the layers' tensors", file));
    }
    check_explicit_buckets(top, sc);
    const bool nvls = sc.sync.algorithm == SyncAlgorithm::Nvls;
    if (sc.sync.strategy == SyncStrategy::AllReduce &&
        (nvls || sc.sync.algorithm == SyncAlgorithm::NvlsTree)) {
      // NVLS needs one NVSwitch domain of NVLink4 or later and NCCL (nvls_switch()), or one
      // per server and SHARP switches between them (nvls_sharp_devices()); NVLSTree one such
      // domain per server, two servers or more (nvls_tree_devices()).
      const std::string name(to_string(sc.sync.algorithm));
      const MapReader s(top.node("sync"), file, "sync", kSyncKeys);
      const Topology& topo = out.topology.topology;
      if (topo.software() != SoftwareModel::Nccl)
        s.fail("algorithm", name + " is NCCL's algorithm, and the topology has software: none");
      if (used < 2) s.fail("algorithm", name + " needs 2 GPUs or more");
      try {
        const std::vector<DeviceId> placed = place_ranks(topo, used);
        (void)in_switch_devices(topo, placed, ranks_per_node(topo, placed),
                                nvls ? Algorithm::Nvls : Algorithm::NvlsTree);
      } catch (const ConfigError& e) {
        std::string why = e.what();  // "topology.yaml:L:C: error: why"
        if (const auto at = why.find("error: "); at != std::string::npos) why.erase(0, at + 7);
        s.fail("algorithm", name + " cannot run on these GPUs: " + why);
      }
    }
    if (sc.sync.strategy != SyncStrategy::AllReduce && sc.sync.ps.hosts) {
      if (!sc.parallel.plain())
        throw ConfigError(sc.sync.ps.hosts->origin,
                          "sync.ps.hosts: parameter servers run with plain data parallelism "
                          "(parallel: of one data-parallel group)");
      out.server_hosts = add_server_hosts(out.topology.topology, sc.sync.ps.hosts->count,
                                          sc.sync.ps.hosts->nic_bandwidth,
                                          sc.sync.ps.hosts->origin);
    }
    if (sc.sync.strategy != SyncStrategy::AllReduce) {
      const MapReader s(top.node("sync"), file, "sync", kSyncKeys);
      const bool dedicated = sc.sync.ps.placement == PsPlacement::Dedicated;
      if (data_parallel_ranks(used, sc.sync) == 0 || (!dedicated && sc.sync.ps.servers > used)) {
        const std::string msg =
            dedicated ? fmt::format(
                            "{} dedicated servers leave no worker among the {} GPUs "
                            "(the last {} GPUs serve, the others train)",
                            sc.sync.ps.servers, used, sc.sync.ps.servers)
                      : fmt::format("{} colocated servers need at least as many GPUs, got {}",
                                    sc.sync.ps.servers, used);
        if (s.has("ps")) MapReader(s.node("ps"), file, "sync.ps", kPsKeys).fail("servers", msg);
        throw ConfigError(s.mark(), "sync: " + msg);
      }
    }
    return out;
  });
}

}  // namespace

TopologyFile load_topology_file(const std::filesystem::path& path,
                                const std::vector<std::string>& sets) {
  if (sets.empty()) return load_topology_file(path);
  std::vector<Override> overrides;
  for (const std::string& text : sets) {
    Override o = parse_set(text);
    if (o.path.size() > 1 && o.path.front() == "topology_overrides") o.path.erase(o.path.begin());
    overrides.push_back(std::move(o));
  }
  const std::string file = path.string();
  std::string text;
  (void)config::load_yaml_file(file, &text);
  const TextPatch patch(text, file, overrides, fmt::format("in topology {}: ", file));
  TopologyFile out = patch.guard([&] { return load_topology_text(patch.text(), file); });
  out.path = path;
  return out;
}

LoadedScenario load_scenario_file(const std::filesystem::path& path,
                                  const std::vector<std::string>& sets) {
  const std::string file = path.string();
  std::string text;
  (void)config::load_yaml_file(file, &text);
  return load(text, file, sets);
}

LoadedScenario load_scenario_text(const std::string& text, const std::string& display_name,
                                  const std::vector<std::string>& sets) {
  return load(text, display_name, sets);
}

}  // namespace gradsync
