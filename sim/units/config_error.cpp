// ConfigError: the one exception type for bad input. Its message follows
// the compiler convention "file:line:col: error: reason" so editors and CI logs can jump to
// the offending line.
#include "gradsync/units/config_error.hpp"

#include <fmt/format.h>

namespace gradsync {
namespace {

constexpr std::size_t kMaxToken = 80;     // longer runs without a space are cut
constexpr std::size_t kMaxMessage = 2000;  // bytes of one error line, then at most "…"

// Back to the start of a UTF-8 character at or before `i`.
std::size_t char_start(std::string_view s, std::size_t i) {
  while (i > 0 && i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) --i;
  return i;
}

}  // namespace

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(std::min(text.size(), kMaxMessage) + 8);
  // Appends one character as printed, unless that would take the line past kMaxMessage: the
  // bound holds after escaping too (a control character prints as 4 bytes, \xHH).
  bool full = false;
  const auto put = [&](std::string_view printed) {
    if (out.size() + printed.size() > kMaxMessage) full = true;
    else out += printed;
    return !full;
  };
  std::size_t i = 0;
  while (i < text.size() && !full) {
    // One token: up to the next space.
    std::size_t end = text.find(' ', i);
    if (end == std::string_view::npos) end = text.size();
    std::string_view token = text.substr(i, end - i);
    const bool cut = token.size() > kMaxToken;
    if (cut) token = token.substr(0, char_start(token, kMaxToken - 1));
    for (std::size_t k = 0; k < token.size() && !full;) {
      const char ch = token[k];
      const auto c = static_cast<unsigned char>(ch);
      std::size_t n = 1;  // a UTF-8 character's bytes go in whole or not at all
      if (c >= 0xC0)
        while (k + n < token.size() && n < 4 &&
               (static_cast<unsigned char>(token[k + n]) & 0xC0) == 0x80)
          ++n;
      if (ch == '\n') put("\\n");
      else if (ch == '\r') put("\\r");
      else if (ch == '\t') put("\\t");
      else if (c < 0x20 || c == 0x7f) put(fmt::format("\\x{:02x}", c));
      else put(token.substr(k, n));
      k += n;
    }
    if (full || (cut && !put("…")) || (end < text.size() && !put(" "))) break;
    i = end + 1;
  }
  if (full || i < text.size()) out += "…";
  return out;
}

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
    : std::runtime_error(printable(fmt::format("{}: error: {}", at.to_string(), what))),
      where_(at),
      reason_(printable(what)) {}

EnvironmentError::EnvironmentError(const std::string& where, const std::string& what)
    : std::runtime_error(printable(where + ": error: " + what)) {}

}  // namespace gradsync
