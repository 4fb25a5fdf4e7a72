// Subcommands of the gradsync CLI. Each add_*_command registers its options on `app` and
// sets a callback; callbacks throw ConfigError for bad input (main maps it to exit code 2).
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace gradsync::cli {

void add_topo_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_estimate_command(CLI::App& app);
void add_calibrate_command(CLI::App& app);
void add_sweep_command(CLI::App& app);
void add_merge_command(CLI::App& app);
void add_report_command(CLI::App& app);
void add_advise_command(CLI::App& app);
// Thrown by a command to exit with `code` (sweep/merge: 3, 4, 128+signal; calibrate: 3).
struct ExitStatus { int code; };
// The whole file at `path`; a file that cannot be read is bad input: ConfigError
// "gradsync COMMAND OPTION: error: cannot open 'PATH'".
[[nodiscard]] std::string read_input_file(const std::string& path, const std::string& command,
                                          const std::string& option);

}  // namespace gradsync::cli
