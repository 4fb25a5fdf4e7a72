// The HTML report of a sweep's results (sweep_report.hpp): the points, the gnuplot programs of
// the charts, and the page with its sortable table.
#include "gradsync/report/sweep_report.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "gradsync/report/run_json.hpp"

namespace gradsync {
namespace {

using Json = nlohmann::ordered_json;

std::string html(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// A label for gnuplot's single-quoted strings and double-quoted data fields.
std::string gp_text(std::string s) {
  std::replace(s.begin(), s.end(), '"', '\'');
  std::string out;
  for (const char c : s) {
    if (c == '\'') out += "''";
    else if (c == '\n' || c == '\r') out += ' ';
    else out += c;
  }
  return out;
}
std::string gp_data_text(std::string s) {
  std::replace(s.begin(), s.end(), '"', ' ');
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

std::string num_text(double v) { return std::isnan(v) ? "" : fmt::format("{:.4g}", v); }

constexpr const char* kTerminal =
    "set terminal svg size {},{} font 'sans,11' background '#ffffff'\n"
    "set encoding utf8\nset grid lc rgb '#dddddd'\nset key noenhanced\n"
    "set border lc rgb '#555555'\n";

// Swept keys that set the GPU count: points equal in every other key differ in gpus.
std::set<std::size_t> scale_keys(const std::vector<SweepReportPoint>& pts, std::size_t nkeys) {
  std::set<std::size_t> out;
  for (std::size_t k = 0; k < nkeys; ++k) {
    std::map<std::vector<std::string>, std::map<std::string, double>> groups;
    bool scales = false;
    for (const SweepReportPoint& p : pts) {
      std::vector<std::string> rest = p.values;
      rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(k));
      auto& g = groups[rest];
      for (const auto& [value, gpus] : g)
        if (value != p.values[k] && gpus != p.num(run_json::kGpus)) scales = true;
      g[p.values[k]] = p.num(run_json::kGpus);
    }
    if (scales) out.insert(k);
  }
  return out;
}

std::string point_label(const SweepReportPoint& p) {
  std::string s;
  for (const std::string& v : p.values) s += (s.empty() ? "" : "/") + v;
  return s.empty() ? p.id : s;
}

// Distinct series styles: 10 colors (Tableau 10), then the same colors dashed, dotted, …, so
// series beyond 10 stay apart.
std::string series_style(std::size_t i) {
  static constexpr std::array<const char*, 10> kColors{
      "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
      "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  return fmt::format("lc rgb '{}' dt {} pt {}", kColors[i % kColors.size()],
                     1 + (i / kColors.size()) % 5, 7 + (i / kColors.size()) % 6);
}

}  // namespace

double SweepReportPoint::num(const char* key) const {
  if (!metrics.is_object() || !metrics.contains(key) || !metrics[key].is_number()) return NAN;
  return metrics[key].get<double>();
}

std::string SweepReportPoint::str(const char* key) const {
  if (!metrics.is_object() || !metrics.contains(key)) return "";
  const Json& v = metrics[key];
  return v.is_string() ? v.get<std::string>() : v.is_null() ? "" : v.dump();
}

SweepReportPoint sweep_report_point(const Json& record, const std::vector<std::string>& keys,
                                    std::size_t index, std::string id, bool ok,
                                    std::string error) {
  SweepReportPoint p;
  p.index = index;
  p.id = std::move(id);
  p.ok = ok;
  p.error = std::move(error);
  for (const std::string& k : keys) {
    const Json& sets = record["sets"];
    p.values.push_back(sets.contains(k) ? (sets[k].is_string() ? sets[k].get<std::string>()
                                                               : sets[k].dump())
                                        : "");
  }
  if (ok && record.contains("metrics") && record["metrics"].is_object())
    p.metrics = record["metrics"];
  else
    p.ok = false;
  return p;
}

std::vector<SweepReportPoint> chartable_points(const std::vector<SweepReportPoint>& points) {
  std::vector<SweepReportPoint> good;
  for (const SweepReportPoint& p : points)
    if (p.ok && !std::isnan(p.num(run_json::kGpus)) && !std::isnan(p.num(run_json::kSamplesPerS)))
      good.push_back(p);
  return good;
}

// Cost per sample of a point: cost_per_sample, or cost_per_hour / (samples_per_s * 3600).
double point_cost_per_sample(const SweepReportPoint& p) {
  const double direct = p.num(run_json::kCostPerSample);
  if (!std::isnan(direct)) return direct;
  const double hourly = p.num(run_json::kCostPerHour);
  const double rate = p.num(run_json::kSamplesPerS);
  if (!std::isnan(hourly) && rate > 0) return hourly / (rate * 3600.0);
  return NAN;
}

GnuplotChart sweep_scaling_chart(const std::vector<SweepReportPoint>& pts,
                                 const std::vector<std::string>& keys,
                                 const std::string& data_file) {
  const std::set<std::size_t> scale = scale_keys(pts, keys.size());
  std::map<std::string, std::vector<std::pair<double, double>>> series;
  for (const SweepReportPoint& p : pts) {
    // Labelled by what differs: the topology and each swept key=value that does not set the
    // GPU count (a bare "4" says nothing; an overridden fabric keeps the topology's name).
    std::string name = p.str("topology");
    for (std::size_t k = 0; k < keys.size(); ++k)
      if (!scale.count(k)) {
        const std::size_t dot = keys[k].rfind('.');  // the key's last part: nic_bandwidth=25Gbps
        name += " " + (dot == std::string::npos ? keys[k] : keys[k].substr(dot + 1)) + "=" +
                p.values[k];
      }
    series[name].emplace_back(p.num(run_json::kGpus), p.num(run_json::kSamplesPerS));
  }
  std::string data;
  double min_gpus = INFINITY, max_gpus = 0, per_gpu = 0;
  for (auto& [name, xy] : series) {
    std::sort(xy.begin(), xy.end());
    for (const auto& [x, y] : xy) {
      data += fmt::format("{} {}\n", x, y);
      min_gpus = std::min(min_gpus, x);
      max_gpus = std::max(max_gpus, x);
    }
    data += "\n\n";
  }
  // Linear reference: the best per-GPU throughput at the smallest GPU count, times GPUs.
  for (const auto& [name, xy] : series)
    for (const auto& [x, y] : xy)
      if (x == min_gpus) per_gpu = std::max(per_gpu, y / x);
  // The legend below the plot, one series per line: long labels do not squeeze the plot.
  const int height = 480 + 18 * static_cast<int>(series.size() + 1);
  std::string gp = fmt::format(fmt::runtime(kTerminal), 960, height);
  gp += "set xlabel 'GPUs'\nset ylabel 'samples/s'\nset key below left vertical Left reverse\n";
  // Log-log when the GPU counts span a range: linear scaling is then a straight line (slope 1)
  // and a curve bending below it is lost efficiency.
  if (max_gpus > min_gpus * 1.5) gp += "set logscale x 2\nset logscale y 10\n";
  gp += fmt::format("set xrange [{}:{}]\n", min_gpus / (max_gpus > min_gpus ? 1.15 : 2),
                    max_gpus * (max_gpus > min_gpus ? 1.15 : 2));
  gp += max_gpus > min_gpus * 1.5 ? "set yrange [*:*]\n" : "set yrange [0:*]\n";
  gp += fmt::format("plot {}*x with lines dt 2 lw 1.5 lc rgb '#888888' title 'linear scaling'",
                    per_gpu);
  std::size_t i = 0;
  for (const auto& [name, xy] : series) {
    gp += fmt::format(", '{}' index {} using 1:2 with linespoints lw 2 {} ps 0.8 title '{}'",
                      gp_text(data_file), i, series_style(i), gp_text(name));
    ++i;
  }
  gp += "\n";
  return {data, gp};
}

GnuplotChart sweep_breakdown_chart(const std::vector<SweepReportPoint>& pts,
                                   const std::string& data_file) {
  std::string data;
  for (const SweepReportPoint& p : pts) {
    const double compute = p.num(run_json::kComputeTime), comm = p.num(run_json::kCommTime),
                 exposed = p.num(run_json::kExposedComm);
    auto ms = [](double s) { return std::isnan(s) ? 0.0 : s * 1e3; };
    data += fmt::format("\"{}\" {} {} {}\n", gp_data_text(point_label(p)), ms(compute),
                        ms(exposed), ms(comm));
  }
  const int width = std::clamp(200 + 34 * static_cast<int>(pts.size()), 700, 2400);
  std::string gp = fmt::format(fmt::runtime(kTerminal), width, 560);
  gp += "set ylabel 'time per step (ms)'\nset style data histograms\n"
        "set style histogram rowstacked\nset style fill solid 0.85 border -1\n"
        "set boxwidth 0.75\nset xtics rotate by -50 noenhanced font 'sans,9'\n"
        "set rmargin 10\nset bmargin 9\nset key outside top left horizontal\nset yrange [0:*]\nset grid noxtics\n";
  const std::string f = gp_text(data_file);
  // The bar is the step: compute + exposed comm. All communication (overlapped with compute
  // or not) is a marker, not stacked: stacking the overlapped part would draw bars taller
  // than the step.
  gp += fmt::format(
      "plot '{0}' using 2:xtic(1) lc rgb '#4c78a8' title 'compute', "
      "'{0}' using 3 lc rgb '#e45756' title 'exposed comm (the GPU waits)', "
      "'{0}' using 0:4 with points pt 9 ps 1.2 lc rgb '#222222' title 'all comm (overlapped + exposed)'\n",
      f);
  return {data, gp};
}

GnuplotChart sweep_cost_chart(const std::vector<SweepReportPoint>& pts,
                              const std::string& data_file) {
  std::string currency;
  for (const SweepReportPoint& p : pts)
    if (!p.str("cost_currency").empty()) currency = p.str("cost_currency");
  std::string data;
  for (const SweepReportPoint& p : pts)
    if (const double c = point_cost_per_sample(p); !std::isnan(c))
      data += fmt::format("\"{}\" {}\n", gp_data_text(point_label(p)), c);
  const int width = std::clamp(200 + 34 * static_cast<int>(pts.size()), 700, 2400);
  std::string gp = fmt::format(fmt::runtime(kTerminal), width, 480);
  gp += fmt::format("set ylabel 'cost per sample{}'\n", currency.empty() ? "" : " (" + gp_text(currency) + ")");
  gp += "set style data histograms\n"
        "set style fill solid 0.85 border -1\nset boxwidth 0.75\n"
        "set xtics rotate by -50 noenhanced font 'sans,9'\nset rmargin 10\nset bmargin 9\nset key off\nset yrange [0:*]\n"
        "set grid noxtics\n";
  gp += fmt::format("plot '{}' using 2:xtic(1) lc rgb '#54a24b'\n",
                    gp_text(data_file));
  return {data, gp};
}

std::string no_chart_html(const std::string& why) {
  return "<p class=\"note\">(no chart: " + html(why) + ")</p>";
}

namespace {

constexpr const char* kStyle = R"(<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}
.chart svg{max-width:100%;height:auto}.note{color:#666}.wide{overflow-x:auto}
table{border-collapse:collapse;font-size:12px}th,td{border:1px solid #ccc;padding:3px 6px}
th{background:#f0f0f0;position:sticky;top:0;cursor:pointer;white-space:nowrap}
td{white-space:nowrap}td.n{text-align:right;font-variant-numeric:tabular-nums}tr.fail td{background:#fde8e8}
tbody tr:nth-child(even) td{background:#fafafa}
</style>)";

// Click a header: sort by that column (numbers as numbers), click again: reverse.
constexpr const char* kScript = R"(<script>
document.querySelectorAll('table.sortable th').forEach(function(th, col) {
  th.title = 'click to sort';
  th.addEventListener('click', function() {
    var body = th.closest('table').tBodies[0], rows = Array.from(body.rows);
    var dir = th.dataset.dir === 'asc' ? -1 : 1; th.dataset.dir = dir === 1 ? 'asc' : 'desc';
    var key = function(r) { var c = r.cells[col]; return c.dataset.v !== undefined ? c.dataset.v : c.textContent; };
    rows.sort(function(a, b) {
      var x = key(a), y = key(b), nx = parseFloat(x), ny = parseFloat(y);
      if (!isNaN(nx) && !isNaN(ny) && String(nx) !== 'NaN') return (nx - ny) * dir;
      return x.localeCompare(y, undefined, {numeric: true}) * dir;
    });
    rows.forEach(function(r) { body.appendChild(r); });
  });
});
</script>)";

}  // namespace

std::string sweep_report_html(const SweepReport& report, const SweepReportCharts& charts) {
  const std::vector<SweepReportPoint>& points = report.points;
  const std::vector<SweepReportPoint> good = chartable_points(points);
  const bool has_cost = std::any_of(good.begin(), good.end(), [](const SweepReportPoint& p) {
    return !std::isnan(point_cost_per_sample(p));
  });
  const std::string& title = report.title;
  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  h += fmt::format("<title>gradsync report: {}</title>\n{}\n</head><body>\n", html(title), kStyle);
  h += fmt::format("<h1>gradsync report: {}</h1>\n", html(title));
  h += fmt::format("<p class=\"note\">{} points from <code>{}</code>", points.size(),
                   html(report.source));
  if (!report.sweep_file.empty())
    h += fmt::format(" (sweep <code>{}</code>)", html(report.sweep_file));
  if (good.size() != points.size())
    h += fmt::format("; {} failed (in the table, not in the charts)", points.size() - good.size());
  h += ".</p>\n";
  h += "<h2>Throughput vs GPUs</h2>\n<p class=\"note\">samples/s per series (topology and the "
       "swept key=value pairs that do not set the GPU count), on log-log axes when the GPU "
       "counts span a range; dashed: linear scaling from the best per-GPU throughput at the "
       "smallest GPU count, a straight line there.</p>\n";
  h += "<div class=\"chart\">" + charts.scaling + "</div>\n";
  h += "<h2>Step time breakdown</h2>\n<p class=\"note\">per point, a bar as tall as the step: "
       "compute, then exposed communication (the GPU waiting for gradients); the marker is all "
       "communication, overlapped with compute or not (above the compute part, the "
       "communication was not hidden).</p>\n";
  h += "<div class=\"chart\">" + charts.breakdown + "</div>\n";

  h += "<h2>All points</h2>\n<p class=\"note\">click a column header to sort.</p>\n";
  h += "<div class=\"wide\"><table class=\"sortable\"><thead><tr><th>#</th>";
  for (const std::string& k : report.keys) h += "<th>" + html(k) + "</th>";
  const std::vector<std::pair<const char*, const char*>> cols{
      {"topology", "topology"},          {"gpus", "GPUs"},
      {"nodes", "nodes"},                {"step_time_s", "step (s)"},
      {"compute_time_s", "compute (s)"}, {"comm_time_s", "comm (s)"},
      {"exposed_comm_s", "exposed comm (s)"}, {"samples_per_s", "samples/s"},
      {"scaling_efficiency", "scaling eff."}, {"verdict", "verdict"}};
  for (const auto& [key, label] : cols) h += fmt::format("<th>{}</th>", label);
  if (has_cost) h += "<th>cost/sample</th>";
  h += "<th>status</th></tr></thead>\n<tbody>\n";
  for (const SweepReportPoint& p : points) {
    h += p.ok ? "<tr>" : "<tr class=\"fail\">";
    h += fmt::format("<td class=\"n\">{}</td>", p.index);
    for (const std::string& v : p.values) h += "<td>" + html(v) + "</td>";
    for (const auto& [key, label] : cols) {
      const double v = p.num(key);
      if (!std::isnan(v))
        h += fmt::format("<td class=\"n\" data-v=\"{}\">{}</td>", v, num_text(v));
      else
        h += "<td>" + html(p.str(key)) + "</td>";
    }
    if (has_cost) {
      const double c = point_cost_per_sample(p);
      h += std::isnan(c) ? "<td></td>"
                         : fmt::format("<td class=\"n\" data-v=\"{}\">{}</td>", c, num_text(c));
    }
    h += p.ok ? "<td>ok</td>" : "<td>failed: " + html(p.error) + "</td>";
    h += "</tr>\n";
  }
  h += "</tbody></table></div>\n";

  h += "<h2>Cost per sample</h2>\n";
  if (has_cost)
    h += "<div class=\"chart\">" + charts.cost + "</div>\n";
  else
    h += "<p class=\"note\">Not shown: these results carry no cost (no <code>cost_per_sample"
         "</code> or <code>cost_per_hour</code> metric).</p>\n";
  h += kScript;
  h += "\n</body></html>\n";
  return h;
}

}  // namespace gradsync
