// libFuzzer harness: scenario YAML (load_scenario_text), with its topology inline or a file
// (a relative path resolves against /tmp, the display name's folder). Bad input must be a
// ConfigError with a one-line "file:line:col: error: ..." message.
#include <cstdint>
#include <string>

#include "fuzz_contract.hpp"
#include "gradsync/config/scenario_loader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > gradsync::fuzz::kMaxInput) return 0;
  const std::string text = gradsync::fuzz::text_of(data, size);
  try {
    (void)gradsync::load_scenario_text(text, "/tmp/fuzz-scenario.yaml");
  } catch (const gradsync::ConfigError& e) {
    gradsync::fuzz::check(e);
  }
  return 0;
}
