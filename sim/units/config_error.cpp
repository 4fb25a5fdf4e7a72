// ConfigError: the one exception type for bad input (STYLE.md rule 4). Its message follows
// the compiler convention "file:line:col: error: reason" so editors and CI logs can jump to
// the offending line.
#include "gradsync/config_error.hpp"

#include <fmt/format.h>

namespace gradsync {

std::string SourceMark::to_string() const {
  // Line 0 means the whole file (e.g. it could not be opened); column 0 means the line is
  // known but not the column. Printing ":0" would send editors to a position that is not there.
  if (line <= 0) {
    return file;
  }
  if (column <= 0) {
    return fmt::format("{}:{}", file, line);
  }
  return fmt::format("{}:{}:{}", file, line, column);
}

ConfigError::ConfigError(const SourceMark& at, const std::string& what)
    : std::runtime_error(fmt::format("{}: error: {}", at.to_string(), what)),
      where_(at),
      reason_(what) {}

}  // namespace gradsync
