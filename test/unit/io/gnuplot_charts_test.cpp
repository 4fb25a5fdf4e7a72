// gnuplot as `gradsync report` runs it (include/gradsync/io/gnuplot_charts.hpp), with a shell
// script standing in for gnuplot: the program named by GRADSYNC_GNUPLOT, a chart's data and
// script written to the chart folder and the SVG element the program prints returned without
// its XML prolog, a failing program reported as the environment's failure, and the folder
// removed with its object.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gradsync/units/config_error.hpp"
#include "gradsync/io/gnuplot_charts.hpp"
#include "../scratch_folder.hpp"

using namespace gradsync;
namespace fs = std::filesystem;

namespace {

struct FakeGnuplot {
  fs::path root;
  FakeGnuplot() {
    root = fresh_folder("gnuplot");
    // Prints its script's data file name inside an SVG element; fails on a script holding
    // "fail".
    std::ofstream(root / "gnuplot") << "#!/bin/sh\n"
                                       "if grep -q fail \"$1\"; then echo 'bad plot' >&2; exit 1; fi\n"
                                       "echo '<?xml version=\"1.0\"?>'\n"
                                       "echo \"<svg>$(cat \"$1\")</svg>\"\n";
    fs::permissions(root / "gnuplot", fs::perms::owner_all);
    std::ofstream(root / "not-a-program") << "x";
  }
  ~FakeGnuplot() {
    ::unsetenv("GRADSYNC_GNUPLOT");
    std::error_code ec;
    fs::remove_all(root, ec);
  }
};

std::string chart_text_of(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("gnuplot: GRADSYNC_GNUPLOT names the program, or why there is none") {
  FakeGnuplot g;
  std::string why;
  ::setenv("GRADSYNC_GNUPLOT", (g.root / "gnuplot").c_str(), 1);
  CHECK(find_gnuplot(why) == (g.root / "gnuplot").string());
  ::setenv("GRADSYNC_GNUPLOT", (g.root / "not-a-program").c_str(), 1);
  CHECK_FALSE(find_gnuplot(why));
  CHECK(why == "gnuplot not found: GRADSYNC_GNUPLOT=" + (g.root / "not-a-program").string() +
                   " is not an executable program");
}

TEST_CASE("gnuplot: a chart drawn in the folder, its SVG returned, the folder removed") {
  FakeGnuplot g;
  const std::string program = (g.root / "gnuplot").string();
  fs::path folder;
  {
    const ChartFolder tmp;
    const std::string data = tmp.data_file("scaling");
    folder = fs::path(data).parent_path();
    CHECK(fs::path(data).filename() == "scaling.dat");
    const std::string svg = tmp.draw(program, "scaling", GnuplotChart{"1 2\n", "plot data\n"});
    CHECK(svg == "<svg>plot data</svg>\n");
    CHECK(chart_text_of(data) == "1 2\n");
    CHECK_THROWS_WITH_AS(tmp.draw(program, "broken", GnuplotChart{"", "fail\n"}),
                         doctest::Contains("gnuplot failed on"), EnvironmentError);
    CHECK(fs::is_directory(folder));
  }
  CHECK_FALSE(fs::exists(folder));
}
