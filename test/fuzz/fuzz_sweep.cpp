// libFuzzer harness: sweep YAML (load_sweep_text) only; check_sweep_keys/points would load
// and run scenario files. `base:` must name a regular file relative to the sweep's folder,
// so the harness makes one, base.yaml, in its own folder (/tmp/gradsync-fuzz-sweep/); the
// seeds say `base: base.yaml`. Bad input must be a ConfigError with a one-line message.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "fuzz_contract.hpp"
#include "gradsync/sweep/sweep.hpp"

namespace {
const std::filesystem::path kFolder = "/tmp/gradsync-fuzz-sweep";
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::filesystem::create_directories(kFolder);
  std::ofstream(kFolder / "base.yaml", std::ios::app).flush();  // content is not read
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > gradsync::fuzz::kMaxInput) return 0;
  const std::string text = gradsync::fuzz::text_of(data, size);
  try {
    (void)gradsync::load_sweep_text(text, (kFolder / "fuzz-sweep.yaml").string());
  } catch (const gradsync::ConfigError& e) {
    gradsync::fuzz::check(e);
  }
  return 0;
}
