// The sweep report's writers (sweep_report.hpp) on synthetic points: records read into points,
// the gnuplot data and scripts of the three charts, and the HTML page with its table. No
// gnuplot runs here (the CLI tests draw real reports).
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gradsync/report/sweep_report.hpp"

using namespace gradsync;
using Json = nlohmann::ordered_json;

namespace {

const std::vector<std::string> kKeys{"topology_overrides.nodes", "sync.algorithm"};

// A point of 8 GPUs per server: compute 1 s, comm 0.5 s of which 0.25 s exposed.
SweepReportPoint point(std::size_t index, int nodes, const std::string& algorithm,
                       double samples_per_s) {
  const Json record = {
      {"point", "p" + std::to_string(index)},
      {"sets", {{"topology_overrides.nodes", nodes}, {"sync.algorithm", algorithm}}},
      {"metrics",
       {{"topology", "lab"},
        {"gpus", 8 * nodes},
        {"nodes", nodes},
        {"step_time_s", 1.25},
        {"compute_time_s", 1.0},
        {"comm_time_s", 0.5},
        {"exposed_comm_s", 0.25},
        {"samples_per_s", samples_per_s},
        {"verdict", "compute-bound"}}}};
  return sweep_report_point(record, kKeys, index, "p" + std::to_string(index), true, "");
}

SweepReportPoint failed_point(std::size_t index) {
  const Json record = {{"point", "pf"},
                       {"sets", {{"topology_overrides.nodes", 4}, {"sync.algorithm", "rng"}}},
                       {"metrics", nullptr}};
  return sweep_report_point(record, kKeys, index, "pf", false, "'rng' is not <one of> ring");
}

bool has_text(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("sweep report: a record becomes a point with its swept values and metrics") {
  const SweepReportPoint p = point(3, 2, "ring", 180.0);
  CHECK(p.index == 3);
  CHECK(p.ok);
  CHECK(p.values == std::vector<std::string>{"2", "ring"});  // numbers as JSON, strings as is
  CHECK(p.num("gpus") == 16.0);
  CHECK(std::isnan(p.num("verdict")));  // not a number
  CHECK(std::isnan(p.num("absent")));
  CHECK(p.str("verdict") == "compute-bound");
  CHECK(p.str("gpus") == "16");
  CHECK(p.str("absent").empty());
  // A key the record does not set is empty; ok without a metrics object is not ok.
  const SweepReportPoint q = sweep_report_point({{"sets", {{"sync.algorithm", "tree"}}}}, kKeys,
                                                0, "q", true, "");
  CHECK(q.values == std::vector<std::string>{"", "tree"});
  CHECK_FALSE(q.ok);
  CHECK(std::isnan(q.num("gpus")));
}

TEST_CASE("sweep report: chartable points and cost per sample") {
  SweepReportPoint no_rate = point(2, 1, "tree", 0.0);
  no_rate.metrics.erase("samples_per_s");
  const std::vector<SweepReportPoint> good =
      chartable_points({point(0, 1, "ring", 100.0), failed_point(1), no_rate});
  REQUIRE(good.size() == 1);
  CHECK(good[0].index == 0);

  SweepReportPoint p = point(0, 1, "ring", 100.0);
  CHECK(std::isnan(point_cost_per_sample(p)));
  p.metrics["cost_per_hour"] = 36.0;  // 36 per hour at 100 samples/s: 1e-4 per sample
  CHECK(point_cost_per_sample(p) == doctest::Approx(1e-4));
  p.metrics["cost_per_sample"] = 2e-4;  // given directly: wins
  CHECK(point_cost_per_sample(p) == 2e-4);
}

TEST_CASE("sweep report: the scaling chart has a series per non-GPU key and the linear line") {
  // nodes sets the GPU count (8 -> 16): it is the x axis, not a series; algorithm is a series.
  const std::vector<SweepReportPoint> pts{point(0, 1, "ring", 100.0), point(1, 1, "tree", 120.0),
                                          point(2, 2, "ring", 180.0), point(3, 2, "tree", 200.0)};
  const GnuplotChart c = sweep_scaling_chart(pts, kKeys, "/tmp/it's/scaling.dat");
  // Series sorted by name, each sorted by GPUs, separated by two blank lines (gnuplot index).
  CHECK(c.data == "8 100\n16 180\n\n\n8 120\n16 200\n\n\n");
  CHECK(has_text(c.script, "set terminal svg size 960,534 "));  // 480 + 18 × (2 series + 1)
  CHECK(has_text(c.script, "set logscale x 2\nset logscale y 10\n"));  // 16 GPUs > 1.5 × 8
  // Linear scaling from the best per-GPU throughput at 8 GPUs: 120 / 8.
  CHECK(has_text(c.script, "plot 15*x with lines dt 2"));
  CHECK(has_text(c.script, "'/tmp/it''s/scaling.dat' index 0 using 1:2 with linespoints lw 2 "
                           "lc rgb '#4e79a7' dt 1 pt 7 ps 0.8 title 'lab algorithm=ring'"));
  CHECK(has_text(c.script, "index 1 using 1:2 with linespoints lw 2 lc rgb '#f28e2b' dt 1 pt 7 "
                           "ps 0.8 title 'lab algorithm=tree'\n"));
}

TEST_CASE("sweep report: one GPU count draws linear axes from zero") {
  const std::vector<SweepReportPoint> pts{point(0, 1, "ring", 100.0), point(1, 1, "tree", 120.0)};
  const GnuplotChart c = sweep_scaling_chart(pts, kKeys, "s.dat");
  CHECK_FALSE(has_text(c.script, "logscale"));
  CHECK(has_text(c.script, "set xrange [4:16]\nset yrange [0:*]\n"));
  // Neither key changes the GPU count: both label the series.
  CHECK(has_text(c.script, "title 'lab nodes=1 algorithm=ring'"));
}

TEST_CASE("sweep report: the breakdown chart's bars in ms, labelled by the swept values") {
  const GnuplotChart c =
      sweep_breakdown_chart({point(0, 1, "ring", 100.0), point(1, 2, "tree", 200.0)}, "b.dat");
  // label, compute, exposed comm, all comm (ms)
  CHECK(c.data == "\"1/ring\" 1000 250 500\n\"2/tree\" 1000 250 500\n");
  CHECK(has_text(c.script, "set terminal svg size 700,560 "));  // at least 700 wide
  CHECK(has_text(c.script, "plot 'b.dat' using 2:xtic(1) lc rgb '#4c78a8' title 'compute', "
                           "'b.dat' using 3 "));
}

TEST_CASE("sweep report: the cost chart holds the points that carry a cost, in their currency") {
  SweepReportPoint a = point(0, 1, "ring", 100.0), b = point(1, 2, "ring", 180.0);
  a.metrics["cost_per_sample"] = 0.5;
  a.metrics["cost_currency"] = "EUR";
  const GnuplotChart c = sweep_cost_chart({a, b}, "c.dat");
  CHECK(c.data == "\"1/ring\" 0.5\n");
  CHECK(has_text(c.script, "set ylabel 'cost per sample (EUR)'\n"));
  CHECK(has_text(c.script, "plot 'c.dat' using 2:xtic(1) lc rgb '#54a24b'\n"));
}

TEST_CASE("sweep report: the page holds the charts, every point and the failures, escaped") {
  SweepReport r;
  r.title = "scaling <lab>";
  r.source = "out/lab";
  r.sweep_file = "sweeps/lab.yaml";
  r.keys = kKeys;
  r.points = {point(0, 1, "ring", 100.0), failed_point(1), point(2, 2, "ring", 180.0)};
  SweepReportCharts charts{"<svg id=\"scaling\"/>", no_chart_html("no gnuplot & no charts"), ""};
  const std::string h = sweep_report_html(r, charts);
  CHECK(h.rfind("<!DOCTYPE html>\n", 0) == 0);
  CHECK(has_text(h, "<title>gradsync report: scaling &lt;lab&gt;</title>"));
  CHECK(has_text(h, "<p class=\"note\">3 points from <code>out/lab</code> (sweep "
                    "<code>sweeps/lab.yaml</code>); 1 failed (in the table, not in the "
                    "charts).</p>"));
  CHECK(has_text(h, "<div class=\"chart\"><svg id=\"scaling\"/></div>"));
  CHECK(has_text(h, "<div class=\"chart\"><p class=\"note\">(no chart: no gnuplot &amp; no "
                    "charts)</p></div>"));
  CHECK(has_text(h, "<th>#</th><th>topology_overrides.nodes</th><th>sync.algorithm</th>"
                    "<th>topology</th><th>GPUs</th>"));
  CHECK_FALSE(has_text(h, "<th>cost/sample</th>"));
  // A point's row: its values, numbers with data-v for sorting, then ok.
  CHECK(has_text(h, "<tr><td class=\"n\">2</td><td>2</td><td>ring</td><td>lab</td>"
                    "<td class=\"n\" data-v=\"16\">16</td><td class=\"n\" data-v=\"2\">2</td>"
                    "<td class=\"n\" data-v=\"1.25\">1.25</td>"));
  CHECK(has_text(h, "<td class=\"n\" data-v=\"180\">180</td>"));
  CHECK(has_text(h, "<td>compute-bound</td><td>ok</td></tr>"));
  CHECK(has_text(h, "<tr class=\"fail\"><td class=\"n\">1</td><td>4</td><td>rng</td>"));
  CHECK(has_text(h, "<td>failed: 'rng' is not &lt;one of&gt; ring</td></tr>"));
  CHECK(has_text(h, "Not shown: these results carry no cost"));
  CHECK(has_text(h, "table.sortable th"));  // the sorting script
  REQUIRE(h.size() >= 15);
  CHECK(h.substr(h.size() - 15) == "</body></html>\n");
}

TEST_CASE("sweep report: with costs, a cost column and the cost chart") {
  SweepReport r;
  r.title = "t";
  r.source = "d";
  r.keys = kKeys;
  SweepReportPoint a = point(0, 1, "ring", 100.0);
  a.metrics["cost_per_hour"] = 36.0;
  r.points = {a, point(1, 2, "ring", 180.0)};
  const std::string h = sweep_report_html(r, {"", "", "<svg id=\"cost\"/>"});
  CHECK_FALSE(has_text(h, "(sweep <code>"));  // no sweep file known
  CHECK_FALSE(has_text(h, "failed"));
  CHECK(has_text(h, "<th>cost/sample</th><th>status</th>"));
  CHECK(has_text(h, "<td class=\"n\" data-v=\"0.0001\">0.0001</td><td>ok</td>"));
  CHECK(has_text(h, "<td></td><td>ok</td>"));  // the point without a cost
  CHECK(has_text(h, "<h2>Cost per sample</h2>\n<div class=\"chart\"><svg id=\"cost\"/></div>"));
}
