// Every bad input becomes one exception type, ConfigError, whose message reads
// "file:line:col: error: what" with 1-based line and column. The library never prints and
// never exits; only the CLI's main maps ConfigError to exit code 2.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace gradsync {

// Where a value came from: a file and a 1-based position. line == 0 means "the whole file".
struct SourceMark {
  std::string file;
  int line = 0;
  int column = 0;

  [[nodiscard]] std::string to_string() const;  // "file:line:col" or "file" when line == 0
};

// `text` as one safe line for a terminal or a CI log: control characters written as escapes
// (\n, \r, \t, else \xHH: an ANSI escape becomes \x1b), a run of more than 80 characters
// without a space cut to 79 and "…", at most 2000 bytes in all. ConfigError's message and
// reason pass through it.
[[nodiscard]] std::string printable(std::string_view text);

class ConfigError : public std::runtime_error {
 public:
  ConfigError(const SourceMark& at, const std::string& what);

  [[nodiscard]] const SourceMark& where() const { return where_; }
  [[nodiscard]] const std::string& reason() const { return reason_; }

 private:
  SourceMark where_;
  std::string reason_;
};

// The environment failed, not the input: a file that cannot be written (disk full, no
// permission), a folder that cannot be read or created, a helper program that is missing or
// fails. what() reads "PATH: error: what"; the CLI exits 1 (ConfigError: 2).
class EnvironmentError : public std::runtime_error {
 public:
  EnvironmentError(const std::string& where, const std::string& what);
};

}  // namespace gradsync
