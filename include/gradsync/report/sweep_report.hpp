// The HTML report of a sweep's results (`gradsync report DIR`, README.md, Commands): its points,
// the gnuplot programs of its charts and the page itself.
//   (a) samples/s vs GPUs, one line per series (topology + the swept keys that do not set the
//       GPU count), with the linear-scaling reference;
//   (b) the step time of each point: compute and exposed comm stacked, all comm as a marker;
//   (c) a table of every point (failed ones too), sortable by any column with a few lines of
//       inline JS (it reads fine without JS);
//   (d) cost per sample, when the metrics carry cost (cost_per_sample, or cost_per_hour with
//       samples_per_s); otherwise the section says so.
// Pure functions of the results: the CLI reads the results folder, writes each chart's data and
// script to files, runs gnuplot (its svg terminal) on them and hands the SVG back for the page.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gradsync {

// One point of a sweep as the report shows it.
struct SweepReportPoint {
  std::size_t index = 0;
  std::string id;
  std::vector<std::string> values;  // of the swept keys, in their order ("" where not set)
  bool ok = false;
  std::string error;                // when !ok
  nlohmann::ordered_json metrics;   // the point's `run --json` object; null when !ok
  // A metric as a number; NaN when absent or not a number.
  [[nodiscard]] double num(const char* key) const;
  // A metric as text: a string as is, "" when absent or null, other values as JSON.
  [[nodiscard]] std::string str(const char* key) const;
};

// A point from its sweep record ({"sets": {key: value}, "metrics": {...}}, sweep_results.hpp):
// the values of `keys` (a string as is, others as JSON, "" when the record does not set it).
// The point is ok only when `ok` and the record holds a metrics object.
[[nodiscard]] SweepReportPoint sweep_report_point(const nlohmann::ordered_json& record,
                                                  const std::vector<std::string>& keys,
                                                  std::size_t index, std::string id, bool ok,
                                                  std::string error);

// The points the charts draw: ok, with a number of GPUs and samples/s.
[[nodiscard]] std::vector<SweepReportPoint> chartable_points(
    const std::vector<SweepReportPoint>& points);

// Cost per sample of a point: its cost_per_sample, or cost_per_hour / (samples_per_s × 3600);
// NaN when it carries neither.
[[nodiscard]] double point_cost_per_sample(const SweepReportPoint& point);

// A chart for gnuplot: the text of its data file and the script that reads that file (the path
// given to the function that made it) and prints one SVG to stdout.
struct GnuplotChart {
  std::string data;
  std::string script;
};
// (a) samples/s vs GPUs of `points` (chartable ones), a series per topology and per value of
// the swept keys that do not set the GPU count; log-log axes when the GPU counts span a range.
[[nodiscard]] GnuplotChart sweep_scaling_chart(const std::vector<SweepReportPoint>& points,
                                               const std::vector<std::string>& keys,
                                               const std::string& data_file);
// (b) per point, a bar as tall as the step (compute, exposed comm) and a marker for all comm.
[[nodiscard]] GnuplotChart sweep_breakdown_chart(const std::vector<SweepReportPoint>& points,
                                                 const std::string& data_file);
// (d) cost per sample of each point that carries one, in the results' currency.
[[nodiscard]] GnuplotChart sweep_cost_chart(const std::vector<SweepReportPoint>& points,
                                            const std::string& data_file);

// What the page shows.
struct SweepReport {
  std::string title;                     // the sweep's name, else the folder's
  std::string source;                    // the results folder, as given
  std::string sweep_file;                // the sweep file, "" when not known
  std::vector<std::string> keys;         // swept keys, in column order
  std::vector<SweepReportPoint> points;  // every point by index, failed ones too
};
// The charts as HTML to inline: gnuplot's SVG element, or no_chart_html(why).
struct SweepReportCharts {
  std::string scaling;
  std::string breakdown;
  std::string cost;  // used only when a chartable point carries a cost
};
// `<p class="note">(no chart: WHY)</p>`, WHY escaped.
[[nodiscard]] std::string no_chart_html(const std::string& why);
// The self-contained page (no network needed): title, the charts, the sortable table of every
// point (failed ones in red with their error), cost per sample or why there is none.
[[nodiscard]] std::string sweep_report_html(const SweepReport& report,
                                            const SweepReportCharts& charts);

}  // namespace gradsync
