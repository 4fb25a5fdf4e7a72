// The files a command names (include/gradsync/io/command_files.hpp): an input read whole, a
// missing one reported as bad input at the command's option, an output written whole, and one
// that cannot be written reported as the environment's failure.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gradsync/io/command_files.hpp"
#include "gradsync/units/config_error.hpp"
#include "../scratch_folder.hpp"

using namespace gradsync;
namespace fs = std::filesystem;

namespace {

struct TempFolder {
  fs::path root;
  TempFolder() {
    root = fresh_folder("files");
  }
  ~TempFolder() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
};

}  // namespace

TEST_CASE("command files: an output written whole is read back whole") {
  TempFolder t;
  const fs::path file = t.root / "out.txt";
  write_output_file(file, "line 1\nline 2\n");
  CHECK(read_input_file(file.string(), "bench", "--compare") == "line 1\nline 2\n");
  write_output_file(file, "shorter\n");  // replaced, not appended
  CHECK(read_input_file(file.string(), "bench", "--compare") == "shorter\n");
}

TEST_CASE("command files: a missing input is bad input at the command's option") {
  TempFolder t;
  const std::string missing = (t.root / "missing.log").string();
  CHECK_THROWS_WITH_AS(read_input_file(missing, "calibrate", "--nccl-tests"),
                       ("gradsync calibrate --nccl-tests: error: cannot open '" + missing + "'")
                           .c_str(),
                       ConfigError);
  CHECK_THROWS_AS(read_input_file(t.root.string(), "calibrate", "TOPOLOGY"), ConfigError);
}

TEST_CASE("command files: an output that cannot be written is the environment's failure") {
  TempFolder t;
  const fs::path file = t.root / "no-such-folder" / "out.txt";
  CHECK_THROWS_WITH_AS(write_output_file(file, "x"),
                       (file.string() + ": error: cannot write file").c_str(), EnvironmentError);
}
