// `gradsync report DIR [-o FILE]`: one self-contained HTML page (no network needed) about the
// results of a sweep (DIR/points/ or DIR/results.jsonl, as `sweep` and `merge` write them).
// The page, its charts' gnuplot programs and the points are the report library's
// (gradsync/report/sweep_report.hpp); here: reading the folder, drawing the charts with gnuplot
// (gnuplot_charts.hpp; GRADSYNC_GNUPLOT overrides the program) and writing the page.
//
// Exit codes: 0 written (without gnuplot: the table only, with a warning); 2 bad input (DIR
// holds no results); 1 gnuplot failing, a file that cannot be written.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "../sweep/durable_file.hpp"
#include "../sweep/sweep_results.hpp"
#include "commands.hpp"
#include "gradsync/units/config_error.hpp"
#include "gradsync/io/gnuplot_charts.hpp"
#include "gradsync/report/sweep_report.hpp"

namespace gradsync::cli {
namespace {

namespace fs = std::filesystem;
using sweep::Json;

struct ReportCliOptions {
  std::string dir;
  std::string out;
};

[[noreturn]] void fail_at(const std::string& where, const std::string& what) {
  throw ConfigError(SourceMark{where, 0, 0}, what);
}

void report(const ReportCliOptions& o) {
  const fs::path dir = o.dir;
  std::vector<sweep::PointRecord> records = sweep::read_results_dir(dir);
  if (records.empty()) fail_at(dir.string(), "holds no sweep results (no points finished yet?)");
  const std::optional<sweep::Manifest> manifest = sweep::read_manifest(dir);

  SweepReport page;
  page.title = manifest && !manifest->name.empty() ? manifest->name : dir.filename().string();
  page.source = dir.string();
  if (manifest) {
    page.sweep_file = manifest->sweep;
    page.keys = manifest->keys;
  }
  for (const sweep::PointRecord& r : records) {
    const Json j = r.load();
    if (!manifest && page.keys.empty())
      for (const auto& [k, v] : j["sets"].items()) page.keys.push_back(k);
    page.points.push_back(sweep_report_point(j, page.keys, r.index, r.id, r.ok, r.error));
  }
  std::sort(page.points.begin(), page.points.end(),
            [](const SweepReportPoint& a, const SweepReportPoint& b) { return a.index < b.index; });
  const std::vector<SweepReportPoint> good = chartable_points(page.points);
  if (good.empty())
    fail_at(dir.string(), fmt::format("holds {} points but none succeeded: nothing to chart",
                                   page.points.size()));

  std::string no_charts;
  const std::optional<std::string> gnuplot = find_gnuplot(no_charts);
  if (!gnuplot)
    std::cerr << printable("gradsync report: warning: " + no_charts +
                           "; the report holds the table only") << '\n';
  const std::string missing = no_chart_html(no_charts);
  const fs::path out = o.out.empty() ? dir / "report.html" : fs::path(o.out);
  const ChartFolder tmp;
  SweepReportCharts charts;
  charts.scaling =
      gnuplot ? tmp.draw(*gnuplot, "scaling",
                         sweep_scaling_chart(good, page.keys, tmp.data_file("scaling")))
              : missing;
  charts.breakdown =
      gnuplot ? tmp.draw(*gnuplot, "breakdown",
                         sweep_breakdown_chart(good, tmp.data_file("breakdown")))
              : missing;
  const bool has_cost = std::any_of(good.begin(), good.end(), [](const SweepReportPoint& p) {
    return !std::isnan(point_cost_per_sample(p));
  });
  if (has_cost)
    charts.cost = gnuplot ? tmp.draw(*gnuplot, "cost", sweep_cost_chart(good, tmp.data_file("cost")))
                          : missing;
  sweep::write_file_atomically(out, sweep_report_html(page, charts));
  std::cout << out.string() << '\n';
}

}  // namespace

void add_report_command(CLI::App& app) {
  auto opts = std::make_shared<ReportCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "report", "One self-contained HTML page (gnuplot SVG charts + sortable table) of a sweep's "
                "results");
  cmd->add_option("dir", opts->dir, "Sweep output folder (points/ or results.jsonl)")->required();
  cmd->add_option("-o,--output", opts->out, "HTML file to write (default DIR/report.html)");
  cmd->callback([opts] { report(*opts); });
}

}  // namespace gradsync::cli
