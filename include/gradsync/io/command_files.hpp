// The files a command names on its command line: an input read whole (a log, a topology's
// text), an output written whole (a scenario, a trace, a run's JSON). Part of gradsync_io
// (files). A missing input is bad input (ConfigError, exit 2); an output that cannot be written
// is the environment's failure (EnvironmentError, exit 1).
#pragma once

#include <filesystem>
#include <string>

namespace gradsync {

// The whole file at `path` (at most 64 MiB); a file that cannot be read is bad input:
// ConfigError "gradsync COMMAND OPTION: error: cannot open 'PATH'" (or read_file_bounded()'s
// errors at PATH).
[[nodiscard]] std::string read_input_file(const std::string& path, const std::string& command,
                                          const std::string& option);
// Writes `text` to `path` (EnvironmentError "PATH: error: cannot write file": exit 1).
void write_output_file(const std::filesystem::path& path, const std::string& text);

}  // namespace gradsync
