// `gradsync report DIR [-o FILE]`: one self-contained HTML page (no network needed) about the
// results of a sweep (DIR/points/ or DIR/results.jsonl, as `sweep` and `merge` write them):
//   (a) samples/s vs GPUs, one line per series (topology + the swept keys that do not set the
//       GPU count), with the linear-scaling reference;
//   (b) the step time of each point, stacked: compute, overlapped comm (comm - exposed),
//       exposed comm;
//   (c) a table of every point (failed ones too), sortable by any column with a few lines of
//       inline JS (it reads fine without JS);
//   (d) cost per sample, when the metrics carry cost (cost_per_sample, or cost_per_hour with
//       samples_per_s); otherwise the section says so.
// Charts are SVG drawn by gnuplot (its svg terminal) run on a temp script as a subprocess
// (sweep::run_process), and inlined with gnuplot's XML prolog stripped. GRADSYNC_GNUPLOT overrides the gnuplot program.
//
// Exit codes: 0 written (without gnuplot: the table only, with a warning); 2 bad input (DIR
// holds no results); 1 gnuplot failing, a file that cannot be written.
#include <algorithm>
#include <array>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "../sweep/sweep_results.hpp"
#include "../sweep/worker_pool.hpp"
#include "commands.hpp"
#include "gradsync/config_error.hpp"
#include "gradsync/run_json.hpp"

namespace gradsync::cli {
namespace {

namespace fs = std::filesystem;
using sweep::Json;

struct ReportCliOptions {
  std::string dir;
  std::string out;
};

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw ConfigError(SourceMark{where, 0, 0}, what);
}

struct Point {
  std::size_t index = 0;
  std::string id;
  std::vector<std::string> values;  // of the swept keys
  bool ok = false;
  std::string error;
  Json metrics;  // null when !ok
  double num(const char* key) const {
    if (!metrics.is_object() || !metrics.contains(key) || !metrics[key].is_number()) return NAN;
    return metrics[key].get<double>();
  }
  std::string str(const char* key) const {
    if (!metrics.is_object() || !metrics.contains(key)) return "";
    const Json& v = metrics[key];
    return v.is_string() ? v.get<std::string>() : v.is_null() ? "" : v.dump();
  }
};

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

// The gnuplot program: GRADSYNC_GNUPLOT, else "gnuplot" found on PATH; nullopt (with why)
// when there is none: the report then holds its table only.
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

class TempDir {
 public:
  TempDir() {
    std::string templ = (fs::temp_directory_path() / "gradsync-report-XXXXXX").string();
    if (!::mkdtemp(templ.data()))
      throw EnvironmentError("gradsync report",
                             fmt::format("cannot create a temp folder: {}", std::strerror(errno)));
    path_ = templ;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
  if (!out) throw EnvironmentError(p.string(), "cannot write file");
}

constexpr const char* kTerminal =
    "set terminal svg size {},{} font 'sans,11' background '#ffffff'\n"
    "set encoding utf8\nset grid lc rgb '#dddddd'\nset key noenhanced\n"
    "set border lc rgb '#555555'\n";

// Swept keys that set the GPU count: points equal in every other key differ in gpus.
std::set<std::size_t> scale_keys(const std::vector<Point>& pts, std::size_t nkeys) {
  std::set<std::size_t> out;
  for (std::size_t k = 0; k < nkeys; ++k) {
    std::map<std::vector<std::string>, std::map<std::string, double>> groups;
    bool scales = false;
    for (const Point& p : pts) {
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

std::string point_label(const Point& p) {
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

std::string scaling_chart(const std::string& gnuplot, const fs::path& tmp,
                          const std::vector<Point>& pts, const std::vector<std::string>& keys) {
  const std::set<std::size_t> scale = scale_keys(pts, keys.size());
  std::map<std::string, std::vector<std::pair<double, double>>> series;
  for (const Point& p : pts) {
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
  write_text(tmp / "scaling.dat", data);
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
                      gp_text((tmp / "scaling.dat").string()), i, series_style(i), gp_text(name));
    ++i;
  }
  gp += "\n";
  write_text(tmp / "scaling.gp", gp);
  return run_gnuplot(gnuplot, tmp / "scaling.gp");
}

std::string breakdown_chart(const std::string& gnuplot, const fs::path& tmp,
                            const std::vector<Point>& pts) {
  std::string data;
  for (const Point& p : pts) {
    const double compute = p.num(run_json::kComputeTime), comm = p.num(run_json::kCommTime),
                 exposed = p.num(run_json::kExposedComm);
    auto ms = [](double s) { return std::isnan(s) ? 0.0 : s * 1e3; };
    data += fmt::format("\"{}\" {} {} {}\n", gp_data_text(point_label(p)), ms(compute),
                        ms(exposed), ms(comm));
  }
  write_text(tmp / "breakdown.dat", data);
  const int width = std::clamp(200 + 34 * static_cast<int>(pts.size()), 700, 2400);
  std::string gp = fmt::format(fmt::runtime(kTerminal), width, 560);
  gp += "set ylabel 'time per step (ms)'\nset style data histograms\n"
        "set style histogram rowstacked\nset style fill solid 0.85 border -1\n"
        "set boxwidth 0.75\nset xtics rotate by -50 noenhanced font 'sans,9'\n"
        "set rmargin 10\nset bmargin 9\nset key outside top left horizontal\nset yrange [0:*]\nset grid noxtics\n";
  const std::string f = gp_text((tmp / "breakdown.dat").string());
  // The bar is the step: compute + exposed comm. All communication (overlapped with compute
  // or not) is a marker, not stacked: stacking the overlapped part would draw bars taller
  // than the step.
  gp += fmt::format(
      "plot '{0}' using 2:xtic(1) lc rgb '#4c78a8' title 'compute', "
      "'{0}' using 3 lc rgb '#e45756' title 'exposed comm (the GPU waits)', "
      "'{0}' using 0:4 with points pt 9 ps 1.2 lc rgb '#222222' title 'all comm (overlapped + exposed)'\n",
      f);
  write_text(tmp / "breakdown.gp", gp);
  return run_gnuplot(gnuplot, tmp / "breakdown.gp");
}

// Cost per sample of a point: cost_per_sample, or cost_per_hour / (samples_per_s * 3600).
double cost_per_sample(const Point& p) {
  const double direct = p.num(run_json::kCostPerSample);
  if (!std::isnan(direct)) return direct;
  const double hourly = p.num(run_json::kCostPerHour);
  const double rate = p.num(run_json::kSamplesPerS);
  if (!std::isnan(hourly) && rate > 0) return hourly / (rate * 3600.0);
  return NAN;
}

std::string cost_chart(const std::string& gnuplot, const fs::path& tmp,
                       const std::vector<Point>& pts) {
  std::string currency;
  for (const Point& p : pts)
    if (!p.str("cost_currency").empty()) currency = p.str("cost_currency");
  std::string data;
  for (const Point& p : pts)
    if (const double c = cost_per_sample(p); !std::isnan(c))
      data += fmt::format("\"{}\" {}\n", gp_data_text(point_label(p)), c);
  write_text(tmp / "cost.dat", data);
  const int width = std::clamp(200 + 34 * static_cast<int>(pts.size()), 700, 2400);
  std::string gp = fmt::format(fmt::runtime(kTerminal), width, 480);
  gp += fmt::format("set ylabel 'cost per sample{}'\n", currency.empty() ? "" : " (" + gp_text(currency) + ")");
  gp += "set style data histograms\n"
        "set style fill solid 0.85 border -1\nset boxwidth 0.75\n"
        "set xtics rotate by -50 noenhanced font 'sans,9'\nset rmargin 10\nset bmargin 9\nset key off\nset yrange [0:*]\n"
        "set grid noxtics\n";
  gp += fmt::format("plot '{}' using 2:xtic(1) lc rgb '#54a24b'\n",
                    gp_text((tmp / "cost.dat").string()));
  write_text(tmp / "cost.gp", gp);
  return run_gnuplot(gnuplot, tmp / "cost.gp");
}

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

void report(const ReportCliOptions& o) {
  const fs::path dir = o.dir;
  std::vector<sweep::PointRecord> records = sweep::read_results_dir(dir);
  if (records.empty()) fail(dir.string(), "holds no sweep results (no points finished yet?)");
  const std::optional<sweep::Manifest> manifest = sweep::read_manifest(dir);

  std::vector<Point> points;
  std::vector<std::string> keys;
  if (manifest) keys = manifest->keys;
  for (const sweep::PointRecord& r : records) {
    const Json j = r.load();
    if (!manifest && keys.empty())
      for (const auto& [k, v] : j["sets"].items()) keys.push_back(k);
    Point p;
    p.index = r.index;
    p.id = r.id;
    p.ok = r.ok;
    p.error = r.error;
    for (const std::string& k : keys) {
      const Json& sets = j["sets"];
      p.values.push_back(sets.contains(k) ? (sets[k].is_string() ? sets[k].get<std::string>()
                                                                 : sets[k].dump())
                                          : "");
    }
    if (r.ok && j.contains("metrics") && j["metrics"].is_object()) p.metrics = j["metrics"];
    else p.ok = false;
    points.push_back(std::move(p));
  }
  std::sort(points.begin(), points.end(),
            [](const Point& a, const Point& b) { return a.index < b.index; });
  std::vector<Point> good;
  for (const Point& p : points)
    if (p.ok && !std::isnan(p.num(run_json::kGpus)) && !std::isnan(p.num(run_json::kSamplesPerS))) good.push_back(p);
  if (good.empty())
    fail(dir.string(), fmt::format("holds {} points but none succeeded: nothing to chart",
                                   points.size()));

  std::string no_charts;
  const std::optional<std::string> gnuplot = find_gnuplot(no_charts);
  if (!gnuplot)
    std::cerr << printable("gradsync report: warning: " + no_charts +
                           "; the report holds the table only") << '\n';
  const std::string missing =
      "<p class=\"note\">(no chart: " + html(no_charts) + ")</p>";
  const fs::path out = o.out.empty() ? dir / "report.html" : fs::path(o.out);
  const TempDir tmp;
  const std::string scaling = gnuplot ? scaling_chart(*gnuplot, tmp.path(), good, keys) : missing;
  const std::string breakdown = gnuplot ? breakdown_chart(*gnuplot, tmp.path(), good) : missing;
  const bool has_cost = std::any_of(good.begin(), good.end(),
                                    [](const Point& p) { return !std::isnan(cost_per_sample(p)); });
  const std::string cost = !has_cost ? "" : gnuplot ? cost_chart(*gnuplot, tmp.path(), good) : missing;

  const std::string title =
      manifest && !manifest->name.empty() ? manifest->name : dir.filename().string();
  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  h += fmt::format("<title>gradsync report: {}</title>\n{}\n</head><body>\n", html(title), kStyle);
  h += fmt::format("<h1>gradsync report: {}</h1>\n", html(title));
  h += fmt::format("<p class=\"note\">{} points from <code>{}</code>", points.size(),
                   html(dir.string()));
  if (manifest && !manifest->sweep.empty())
    h += fmt::format(" (sweep <code>{}</code>)", html(manifest->sweep));
  if (good.size() != points.size())
    h += fmt::format("; {} failed (in the table, not in the charts)", points.size() - good.size());
  h += ".</p>\n";
  h += "<h2>Throughput vs GPUs</h2>\n<p class=\"note\">samples/s per series (topology and the "
       "swept key=value pairs that do not set the GPU count), on log-log axes when the GPU "
       "counts span a range; dashed: linear scaling from the best per-GPU throughput at the "
       "smallest GPU count, a straight line there.</p>\n";
  h += "<div class=\"chart\">" + scaling + "</div>\n";
  h += "<h2>Step time breakdown</h2>\n<p class=\"note\">per point, a bar as tall as the step: "
       "compute, then exposed communication (the GPU waiting for gradients); the marker is all "
       "communication, overlapped with compute or not (above the compute part, the "
       "communication was not hidden).</p>\n";
  h += "<div class=\"chart\">" + breakdown + "</div>\n";

  h += "<h2>All points</h2>\n<p class=\"note\">click a column header to sort.</p>\n";
  h += "<div class=\"wide\"><table class=\"sortable\"><thead><tr><th>#</th>";
  for (const std::string& k : keys) h += "<th>" + html(k) + "</th>";
  const std::vector<std::pair<const char*, const char*>> cols{
      {"topology", "topology"},          {"gpus", "GPUs"},
      {"nodes", "nodes"},                {"step_time_s", "step (s)"},
      {"compute_time_s", "compute (s)"}, {"comm_time_s", "comm (s)"},
      {"exposed_comm_s", "exposed comm (s)"}, {"samples_per_s", "samples/s"},
      {"scaling_efficiency", "scaling eff."}, {"verdict", "verdict"}};
  for (const auto& [key, label] : cols) h += fmt::format("<th>{}</th>", label);
  if (has_cost) h += "<th>cost/sample</th>";
  h += "<th>status</th></tr></thead>\n<tbody>\n";
  for (const Point& p : points) {
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
      const double c = cost_per_sample(p);
      h += std::isnan(c) ? "<td></td>"
                         : fmt::format("<td class=\"n\" data-v=\"{}\">{}</td>", c, num_text(c));
    }
    h += p.ok ? "<td>ok</td>" : "<td>failed: " + html(p.error) + "</td>";
    h += "</tr>\n";
  }
  h += "</tbody></table></div>\n";

  h += "<h2>Cost per sample</h2>\n";
  if (has_cost)
    h += "<div class=\"chart\">" + cost + "</div>\n";
  else
    h += "<p class=\"note\">Not shown: these results carry no cost (no <code>cost_per_sample"
         "</code> or <code>cost_per_hour</code> metric).</p>\n";
  h += kScript;
  h += "\n</body></html>\n";
  sweep::write_file_atomically(out, h);
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
