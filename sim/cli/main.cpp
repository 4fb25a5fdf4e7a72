// The gradsync executable: the command line of cli_main.cpp (run_cli, commands.hpp).
#include "commands.hpp"

int main(int argc, char** argv) { return gradsync::cli::run_cli(argc, argv); }
