// Shared by the libFuzzer harnesses (test/fuzz/README.md): the message contract of
// ConfigError and the input-size cap. A broken contract aborts, so libFuzzer records the input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "gradsync/units/config_error.hpp"

namespace gradsync::fuzz {

// Inputs above this are skipped: every loader is linear or close to it in the text, and small
// inputs keep executions fast; huge-count bugs need a few bytes ("nodes: 100000"), not 1 MB.
inline constexpr std::size_t kMaxInput = 64 * 1024;

// ConfigError's what() printed as one line for a terminal or CI log (config_error.hpp):
// "FILE[:LINE[:COL]]: error: REASON" — one line, no control characters, bounded in length.
inline constexpr std::size_t kMaxMessageBytes = 2100;

[[noreturn]] inline void contract_broken(const char* rule, std::string_view message) {
  std::fprintf(stderr, "\n==gradsync-fuzz== ConfigError message contract broken: %s\n", rule);
  std::fprintf(stderr, "==gradsync-fuzz== what() has %zu bytes: ", message.size());
  // Escaped, so the report itself stays readable.
  for (const char ch : message.substr(0, 4096)) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) std::fprintf(stderr, "\\x%02x", c);
    else std::fputc(ch, stderr);
  }
  std::fputc('\n', stderr);
  std::abort();
}

// ^[^\n]+: error: [^\n]*$, no byte < 0x20 or 0x7f, at most kMaxMessageBytes.
inline void check_message(std::string_view message) {
  if (message.size() > kMaxMessageBytes) contract_broken("longer than 2100 bytes", message);
  for (const char ch : message) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) contract_broken("control character (\\n, \\t, ESC, ...)", message);
  }
  const std::size_t at = message.find(": error: ");
  if (at == std::string_view::npos || at == 0)
    contract_broken("not 'FILE[:LINE:COL]: error: REASON'", message);
}

// GRADSYNC_FUZZ_PRINT=1 prints each ConfigError: to see why a seed is rejected
// (GRADSYNC_FUZZ_PRINT=1 build-fuzz/test/fuzz/fuzz_scenario FILE...).
inline bool print_errors() {
  static const bool on = std::getenv("GRADSYNC_FUZZ_PRINT") != nullptr;
  return on;
}

inline void check(const ConfigError& e) {
  if (print_errors()) std::fprintf(stderr, "%s\n", e.what());
  check_message(e.what());
  check_message(std::string("x: error: ") + e.reason());  // the reason alone is one safe line too
}

inline std::string text_of(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

}  // namespace gradsync::fuzz
