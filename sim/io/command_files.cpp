// Reading a whole input file for a command, writing an output file (command_files.hpp).
#include "gradsync/io/command_files.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "gradsync/units/bounded_read.hpp"
#include "gradsync/units/config_error.hpp"

namespace gradsync {

std::string read_input_file(const std::string& path, const std::string& command,
                            const std::string& option) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw ConfigError(SourceMark{"gradsync " + command + " " + option, 0, 0},
                      fmt::format("cannot open '{}'", path));
  // An nccl-tests log of a full sweep is ~100 KiB (with every rank's lines, a few MiB).
  return read_file_bounded(path, std::size_t{64} << 20, "64 MiB");
}

void write_output_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw EnvironmentError(path.string(), "cannot write file");
  out << text;
  out.flush();
  if (!out) throw EnvironmentError(path.string(), "cannot write file (disk full?)");
}

}  // namespace gradsync
