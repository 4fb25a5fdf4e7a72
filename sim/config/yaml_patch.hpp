// Internal to sim/config: overrides applied to YAML *text* before it is read (the scenario's
// --set, topology_overrides). A value written in the file is replaced in place, a missing key
// is added as a new line of its mapping (or inside its braces); the patched text then goes
// through the same readers as a file would, and a piece table maps every position of it back
// to the file or to the override that wrote it, so errors keep their file:line:col or name
// the override ("--set sync.bucket=5B: error: ...").
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "gradsync/units/config_error.hpp"

namespace gradsync::config {

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

struct PendingInsert {
  YAML::Node parent;
  std::vector<AddedKey> keys;
};

// "a.b.c=value" (the CLI's --set) → an override reported at "--set a.b.c=value".
[[nodiscard]] Override parse_set(const std::string& text);
// The YAML text of an override value: a flow collection ("{a: 1}", "[1, 2]") as given, any
// other value as a scalar that YAML reads back exactly.
[[nodiscard]] std::string yaml_value(const Override& o);

class TextPatch {
 public:
  // Applies `overrides` (later ones win on equal keys) to `text`. `context` prefixes the
  // reason of errors found inside an override's value ("in topology x.yaml: ").
  TextPatch(std::string text, std::string file, std::vector<Override> overrides,
            std::string context);

  [[nodiscard]] const std::string& text() const { return patched_; }
  [[nodiscard]] const std::vector<Override>& overrides() const { return overrides_; }

  // Where a position in the patched text came from, and which override wrote it (if any).
  struct Origin {
    SourceMark mark;
    std::size_t owner = kNoOwner;
  };
  [[nodiscard]] Origin origin_of(const SourceMark& at) const;

  // The same error, placed in the original file or at the override that caused it.
  [[nodiscard]] ConfigError translate(const ConfigError& e) const;

  template <typename Load>
  auto guard(Load&& load) const -> decltype(load()) {
    try {
      return load();
    } catch (const ConfigError& e) {
      throw translate(e);
    }
  }

 private:
  [[noreturn]] void fail(std::size_t i, const std::string& message) const;

  std::string prefix(std::size_t i, std::size_t depth) const;

  void keep_last_of_each_path();

  SourceMark position_in_original(std::size_t offset, bool line_only) const;

  // End (exclusive) of the value written at `pos`: a scalar on one line or a flow collection.
  std::optional<std::size_t> value_end(const YAML::Node& node) const;

  void apply(const YAML::Node& root);

  Edit replace(std::size_t i, const YAML::Node& target) const;

  // New keys under a mapping: inside the braces of a flow mapping, else as new lines after the
  // first key whose value is a one-line scalar (so the mapping keeps its first key and mark),
  // indented like it.
  Edit insert(const PendingInsert& p) const;

  std::string original_;
  std::string file_;
  std::vector<Override> overrides_;
  std::string context_;
  std::string patched_;
  std::vector<Piece> pieces_;
  std::vector<std::size_t> line_starts_;
  std::string note_;
};

}  // namespace gradsync::config
