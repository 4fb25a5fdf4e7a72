// gradsync command line (run_cli, commands.hpp): a thin layer over the library. Exit codes
// (README.md, Commands):
// 0 success, 2 bad input (one line "file:line:col: error: ..."), 1 the environment failed (a
// file that cannot be written, a missing program, out of memory: "PATH: error: ...") or a bug
// in gradsync ("internal error").
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <new>
#include <iostream>
#include <string>

#include "commands.hpp"
#include "gradsync/units/config_error.hpp"
#include "gradsync/units/memory_budget.hpp"
#include "gradsync/units/units.hpp"

namespace gradsync::cli {

int run_cli(int argc, char** argv) {
  CLI::App app{"gradsync: how long a training step takes on a cluster, and why"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "gradsync 0.1.0");
  // GRADSYNC_MEMORY_LOG=1: every memory estimate on stderr (test/bench/memory_bench.py reads them).
  if (std::getenv("GRADSYNC_MEMORY_LOG") != nullptr)
    gradsync::set_memory_log(
        [](const std::string& line) { std::cerr << "gradsync: memory: " << line << '\n'; });
  gradsync::cli::add_topo_command(app);
  gradsync::cli::add_run_command(app);
  gradsync::cli::add_bench_command(app);
  gradsync::cli::add_estimate_command(app);
  gradsync::cli::add_calibrate_command(app);
  gradsync::cli::add_sweep_command(app);
  gradsync::cli::add_merge_command(app);
  gradsync::cli::add_report_command(app);
  gradsync::cli::add_advise_command(app);
  gradsync::cli::add_models_command(app);
  gradsync::cli::add_import_trace_command(app);
  try {
    app.parse(argc, argv);
  } catch (const gradsync::cli::ExitStatus& status) {
    return status.code;  // sweep, merge: see their files
  } catch (const CLI::ParseError& e) {
    // --help and --version print and succeed. Usage errors are bad input like any other:
    // one line on stderr and exit 2 (CLI11's own report adds a second "Run with --help" line).
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    std::string what = e.what();
    for (char& c : what)
      if (c == '\n') c = ' ';
    std::cerr << "gradsync: error: " << what << " (see gradsync --help)\n";
    return 2;
  } catch (const gradsync::ConfigError& e) {
    std::cerr << e.what() << '\n';
    return 2;
  } catch (const gradsync::UnitError& e) {
    std::cerr << "gradsync: error: " << e.what() << '\n';
    return 2;
  } catch (const gradsync::EnvironmentError& e) {  // the machine, not the input
    std::cerr << e.what() << '\n';
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    std::cerr << gradsync::printable("gradsync: error: " + std::string(e.what())) << '\n';
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "gradsync: error: out of memory: the model of this cluster needs more memory "
                 "than this machine gives (try fewer nodes or --fidelity flow)\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "gradsync: internal error (please report): " << e.what() << '\n';
    return 1;
  }
  return 0;
}

}  // namespace gradsync::cli
