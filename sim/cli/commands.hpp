// Subcommands of the gradsync CLI. Each add_*_command registers its options on `app` and
// sets a callback; callbacks throw ConfigError for bad input (main maps it to exit code 2).
#pragma once

namespace CLI {
class App;
}

namespace gradsync::cli {

void add_topo_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_estimate_command(CLI::App& app);

}  // namespace gradsync::cli
