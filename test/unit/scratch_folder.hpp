// A fresh folder for one test process under the system's temp directory:
// <tmp>/gradsync-TAG-PID, emptied if a previous run left it. Shared by the unit tests that
// write files (io, sweep, trace).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

inline std::filesystem::path fresh_folder(const std::string& tag) {
  namespace fs = std::filesystem;
  const fs::path root =
      fs::temp_directory_path() / fs::path("gradsync-" + tag + "-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root);
  return root;
}
