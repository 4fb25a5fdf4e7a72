// gnuplot as `gradsync report` runs it: the program found on GRADSYNC_GNUPLOT or PATH, and a
// temp folder where each chart (sweep_report.hpp: its data and script) is drawn by running
// gnuplot as a subprocess (sweep::run_process). Part of gradsync_io (files and processes):
// the model, engine and report libraries never start programs.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "gradsync/report/sweep_report.hpp"

namespace gradsync {

// The gnuplot program: GRADSYNC_GNUPLOT, else "gnuplot" found on PATH; nullopt (with why)
// when there is none: the report then holds its table only.
[[nodiscard]] std::optional<std::string> find_gnuplot(std::string& why);

// A temp folder (TMPDIR/gradsync-report-XXXXXX), removed with the object, to draw charts in.
class ChartFolder {
 public:
  ChartFolder();  // EnvironmentError when it cannot be created
  ~ChartFolder();
  ChartFolder(const ChartFolder&) = delete;
  ChartFolder& operator=(const ChartFolder&) = delete;

  // Where chart `name` keeps its data (FOLDER/NAME.dat): give it to the function making it.
  [[nodiscard]] std::string data_file(const std::string& name) const;
  // Writes the chart's data and script (FOLDER/NAME.gp), runs `gnuplot NAME.gp` and returns
  // the SVG element it prints (XML prolog stripped). EnvironmentError when gnuplot fails.
  [[nodiscard]] std::string draw(const std::string& gnuplot, const std::string& name,
                                 const GnuplotChart& chart) const;

 private:
  std::filesystem::path path_;
};

}  // namespace gradsync
