// Every bad input becomes one exception type, ConfigError, whose message reads
// "file:line:col: error: what" with 1-based line and column. The library never prints and
// never exits; only the CLI's main maps ConfigError to exit code 2.
#pragma once

#include <stdexcept>
#include <string>

namespace gradsync {

// Where a value came from: a file and a 1-based position. line == 0 means "the whole file".
struct SourceMark {
  std::string file;
  int line = 0;
  int column = 0;

  [[nodiscard]] std::string to_string() const;  // "file:line:col" or "file" when line == 0
};

class ConfigError : public std::runtime_error {
 public:
  ConfigError(const SourceMark& at, const std::string& what);

  [[nodiscard]] const SourceMark& where() const { return where_; }
  [[nodiscard]] const std::string& reason() const { return reason_; }

 private:
  SourceMark where_;
  std::string reason_;
};

}  // namespace gradsync
