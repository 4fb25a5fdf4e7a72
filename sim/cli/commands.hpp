// Subcommands of the gradsync CLI. Each add_*_command registers its options on `app` and
// sets a callback; callbacks throw ConfigError for bad input (main maps it to exit code 2).
#pragma once

#include <string>

#include "gradsync/engine/simulation.hpp"

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
void add_models_command(CLI::App& app);
void add_import_trace_command(CLI::App& app);
// The whole command line: parses argv as `gradsync ...` does, runs the command and returns
// its exit code (0, 2 bad input, 1 the environment; sweep/merge/calibrate add theirs), every
// message on stderr. One per process when it simulates (SimGrid's engine is a singleton):
// the executable's main and, in a child process per call, the Python module.
int run_cli(int argc, char** argv);
// Thrown by a command to exit with `code` (sweep/merge: 3, 4, 128+signal; calibrate: 3).
struct ExitStatus { int code; };
// One progress line for a terminal (Simulation::set_progress): "routing 4096 of 98304
// connections" while the platform is built, else "37 % of 8190 flows, 3.2 ms simulated".
[[nodiscard]] std::string progress_text(const RunProgress& progress);

}  // namespace gradsync::cli
