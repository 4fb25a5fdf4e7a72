// gnuplot for `gradsync report` (gnuplot_charts.hpp).
#include "gradsync/io/gnuplot_charts.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "../sweep/worker_pool.hpp"
#include "gradsync/units/config_error.hpp"

namespace gradsync {
namespace {

namespace fs = std::filesystem;

// Runs `gnuplot script`; returns the SVG element it prints (prolog stripped).
std::string run_gnuplot(const std::string& gnuplot, const fs::path& script) {
  const sweep::WorkerResult w =
      sweep::run_process(gnuplot, "gnuplot", {script.string()}, std::chrono::minutes(10));
  if (w.exit_code != 0) {
    std::string msg = w.err;
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    if (msg.size() > 300) msg.resize(300);
    throw EnvironmentError("gradsync report",
                           w.exit_code == 127
                               ? fmt::format("gnuplot not found: cannot run {}", gnuplot)
                               : fmt::format("gnuplot failed on {}: {}", script.string(), msg));
  }
  const std::size_t start = w.out.find("<svg");
  if (start == std::string::npos)
    throw EnvironmentError("gradsync report",
                           fmt::format("gnuplot wrote no SVG for {}", script.string()));
  return w.out.substr(start);
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
  if (!out) throw EnvironmentError(p.string(), "cannot write file");
}

}  // namespace

std::optional<std::string> find_gnuplot(std::string& why) {
  if (const char* env = std::getenv("GRADSYNC_GNUPLOT"); env && *env) {
    if (::access(env, X_OK) == 0) return std::string(env);
    why = fmt::format("gnuplot not found: GRADSYNC_GNUPLOT={} is not an executable program", env);
    return std::nullopt;
  }
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string d;
  while (std::getline(dirs, d, ':')) {
    const fs::path p = fs::path(d.empty() ? "." : d) / "gnuplot";
    if (::access(p.c_str(), X_OK) == 0) return p.string();
  }
  why = "gnuplot not found on PATH: the report draws its charts with it (Debian: apt-get install "
        "gnuplot-nox), or set GRADSYNC_GNUPLOT to the program";
  return std::nullopt;
}

ChartFolder::ChartFolder() {
  std::string templ = (fs::temp_directory_path() / "gradsync-report-XXXXXX").string();
  if (!::mkdtemp(templ.data()))
    throw EnvironmentError("gradsync report",
                           fmt::format("cannot create a temp folder: {}", std::strerror(errno)));
  path_ = templ;
}

ChartFolder::~ChartFolder() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string ChartFolder::data_file(const std::string& name) const {
  return (path_ / (name + ".dat")).string();
}

std::string ChartFolder::draw(const std::string& gnuplot, const std::string& name,
                              const GnuplotChart& chart) const {
  const fs::path script = path_ / (name + ".gp");
  write_text(data_file(name), chart.data);
  write_text(script, chart.script);
  return run_gnuplot(gnuplot, script);
}

}  // namespace gradsync
