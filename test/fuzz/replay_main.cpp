// Replays files through a libFuzzer harness without libFuzzer: `main` for the harnesses when
// they are built with the project's own compiler (GCC) as ordinary executables, so ctest runs
// every seed and every committed regression through the same contract checks on each build
// (and under ASan/UBSan in the sanitizer build).
//
//   fuzz_topology_replay PATH...      a PATH that is a folder is read recursively
//
// Each input goes through LLVMFuzzerTestOneInput exactly as libFuzzer would pass it; a broken
// contract aborts inside the harness (the name of the file is printed first). Exit 0 when every
// input was replayed, 1 when a path cannot be read or there was no input at all.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
// Optional, as in libFuzzer: a harness that needs set-up defines it (fuzz_sweep does).
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace {

bool read_bytes(const std::filesystem::path& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

}  // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);
  std::vector<std::filesystem::path> files;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    std::error_code ec;
    if (std::filesystem::is_directory(arg, ec)) {
      for (const auto& entry : std::filesystem::recursive_directory_iterator(arg, ec))
        if (entry.is_regular_file()) files.push_back(entry.path());
    } else if (std::filesystem::is_regular_file(arg, ec)) {
      files.push_back(arg);
    } else {
      std::fprintf(stderr, "%s: error: not a file or folder\n", argv[i]);
      return 1;
    }
    if (ec) {
      std::fprintf(stderr, "%s: error: %s\n", argv[i], ec.message().c_str());
      return 1;
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "usage: %s PATH... (no input found)\n", argc > 0 ? argv[0] : "replay");
    return 1;
  }
  std::sort(files.begin(), files.end());  // the same order on every run
  std::string bytes;
  for (const auto& file : files) {
    if (!read_bytes(file, bytes)) {
      std::fprintf(stderr, "%s: error: cannot read\n", file.c_str());
      return 1;
    }
    std::fprintf(stderr, "replay %s (%zu bytes)\n", file.c_str(), bytes.size());
    // A copy in its own allocation, as libFuzzer passes it: ASan sees a read past the end.
    const std::vector<std::uint8_t> input(bytes.begin(), bytes.end());
    LLVMFuzzerTestOneInput(input.data(), input.size());
  }
  std::printf("%zu inputs replayed\n", files.size());
  return 0;
}
