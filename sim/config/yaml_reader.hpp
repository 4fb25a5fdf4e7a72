// Checked access to YAML mappings: every value is read with its position, unknown keys are
// rejected with the closest valid key suggested, and type or unit mistakes name the key,
// what was expected and what was found. Internal to the config layer.
#pragma once

#include <yaml-cpp/yaml.h>

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "gradsync/units/config_error.hpp"
#include "gradsync/units/units.hpp"

namespace gradsync::config {

// 1-based position of a node in `file`.
[[nodiscard]] SourceMark mark_of(const YAML::Node& node, const std::string& file);
[[nodiscard]] SourceMark mark_of(const YAML::Mark& mark, const std::string& file);

// The closest spelling among `candidates` (edit distance), or "" when none is close.
[[nodiscard]] std::string closest_match(const std::string& word,
                                        const std::vector<std::string>& candidates);

// Parses YAML text: syntax errors and duplicate keys become ConfigErrors.
[[nodiscard]] YAML::Node parse_yaml(const std::string& text, const std::string& file);
// Reads a file (ConfigError when it cannot be read) and parses it.
[[nodiscard]] YAML::Node load_yaml_file(const std::string& path, std::string* text_out = nullptr);

class MapReader {
 public:
  // `what` names the mapping in messages, e.g. "node.intra". Throws when `node` is not a
  // mapping or holds a key outside `allowed`.
  MapReader(const YAML::Node& node, std::string file, std::string what,
            const std::vector<std::string>& allowed);

  [[nodiscard]] bool has(const std::string& key) const;
  [[nodiscard]] SourceMark mark() const { return mark_of(node_, file_); }
  [[nodiscard]] SourceMark mark(const std::string& key) const;  // the value's position
  [[nodiscard]] const std::string& file() const { return file_; }
  [[nodiscard]] std::string path(const std::string& key) const;  // "what.key"
  [[nodiscard]] YAML::Node node(const std::string& key) const;   // required
  [[nodiscard]] const YAML::Node& self() const { return node_; }

  // Required values (ConfigError at the mapping when missing).
  [[nodiscard]] std::string string(const std::string& key) const;
  [[nodiscard]] long long integer(const std::string& key, long long min, long long max) const;
  [[nodiscard]] double number(const std::string& key) const;
  [[nodiscard]] bool boolean(const std::string& key) const;
  [[nodiscard]] Bytes size(const std::string& key) const;
  [[nodiscard]] BytesPerSecond rate(const std::string& key) const;
  [[nodiscard]] Seconds time(const std::string& key) const;
  // One of `choices` (the message lists them all).
  [[nodiscard]] std::string choice(const std::string& key,
                                   const std::vector<std::string>& choices) const;

  // Optional values.
  [[nodiscard]] std::optional<std::string> opt_string(const std::string& key) const;
  [[nodiscard]] std::optional<long long> opt_integer(const std::string& key, long long min,
                                                     long long max) const;
  [[nodiscard]] std::optional<double> opt_number(const std::string& key) const;
  [[nodiscard]] std::optional<bool> opt_boolean(const std::string& key) const;
  [[nodiscard]] std::optional<BytesPerSecond> opt_rate(const std::string& key) const;
  [[nodiscard]] std::optional<Seconds> opt_time(const std::string& key) const;
  [[nodiscard]] std::optional<std::string> opt_choice(const std::string& key,
                                                      const std::vector<std::string>& choices) const;

  [[noreturn]] void fail(const std::string& key, const std::string& message) const;

 private:
  [[nodiscard]] std::string scalar(const std::string& key, const char* expected) const;

  YAML::Node node_;
  std::string file_;
  std::string what_;
};

// A sequence node, checked (`what` names it in messages).
[[nodiscard]] std::vector<YAML::Node> sequence_of(const YAML::Node& node, const std::string& file,
                                                  const std::string& what);

}  // namespace gradsync::config
