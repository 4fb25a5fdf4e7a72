// The sweep's regression gate (regression_gate.hpp).
#include "regression_gate.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "gradsync/units/config_error.hpp"
#include "gradsync/report/run_json.hpp"
#include "csv_text.hpp"
#include "durable_file.hpp"

namespace gradsync::sweep {

namespace fs = std::filesystem;

Baseline load_baseline(const fs::path& path, const std::vector<std::string>& keys) {
  Baseline b;
  b.file = path.string();
  b.keys = keys;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))  // a baseline the user names that is not there: bad input
    throw ConfigError(SourceMark{b.file, 0, 0}, "cannot open the baseline (a sweep's results.csv)");
  const auto rows = parse_csv(read_text(path), b.file);
  if (rows.empty() || (rows.size() == 1 && rows[0].size() == 1 && rows[0][0].empty()))
    throw ConfigError(SourceMark{b.file, 1, 1}, "empty baseline: expected a sweep's results.csv");
  const auto& header = rows.front();
  auto column = [&](const std::string& name) -> std::size_t {
    const auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end()) {
      std::vector<std::string> present;
      for (const auto& h : header)
        if (h.find('.') != std::string::npos) present.push_back(h);
      throw ConfigError(
          SourceMark{b.file, 1, 1},
          fmt::format("the baseline has no column '{}' (a swept key of this sweep or the "
                      "step_time_s metric); its dotted columns: {}",
                      name, present.empty() ? "none" : fmt::format("{}", fmt::join(present, ", "))));
    }
    return static_cast<std::size_t>(it - header.begin());
  };
  std::vector<std::size_t> key_columns;
  for (const std::string& k : keys) key_columns.push_back(column(k));
  const std::size_t step = column(run_json::kStepTime);
  const auto ok_it = std::find(header.begin(), header.end(), "ok");
  for (std::size_t r = 1; r < rows.size(); ++r) {
    const auto& row = rows[r];
    if (row.size() == 1 && row[0].empty()) continue;  // a blank line
    std::vector<std::string> values;
    for (std::size_t c : key_columns) values.push_back(c < row.size() ? row[c] : "");
    Baseline::Row entry;
    entry.line = static_cast<int>(r + 1);  // quoted line breaks aside, rows are lines
    entry.step_time_s = step < row.size() ? row[step] : "";
    if (ok_it != header.end()) {
      const auto c = static_cast<std::size_t>(ok_it - header.begin());
      if (c < row.size() && row[c] == "false") entry.step_time_s.clear();
    }
    b.rows.emplace_back(std::move(values), std::move(entry));
  }
  return b;
}

double parse_regression_limit(const std::string& text) {
  const SourceMark at{"--max-regression " + text, 0, 0};
  std::string number = text;
  while (!number.empty() && number.back() == ' ') number.pop_back();
  if (number.empty() || number.back() != '%')
    throw ConfigError(at, "expected a percentage such as 5%");
  number.pop_back();
  while (!number.empty() && number.back() == ' ') number.pop_back();
  double value = 0;
  const auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (number.empty() || ec != std::errc() || ptr != number.data() + number.size() ||
      !std::isfinite(value) || value < 0)
    throw ConfigError(at, "expected a percentage of at least 0, such as 5%");
  return value / 100.0;
}

BaselineReport compare_to_baseline(const Baseline& baseline,
                                   const std::vector<PointRecord>& records,
                                   double max_regression) {
  std::map<std::vector<std::string>, const Baseline::Row*> rows;
  for (const auto& [values, row] : baseline.rows) rows.emplace(values, &row);  // first one wins
  auto number = [](const std::string& s) -> std::optional<double> {
    double v = 0;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
    return v;
  };
  BaselineReport report;
  for (const PointRecord& r : records) {
    const Json j = r.load();
    const Json& sets = j["sets"];
    std::vector<std::string> values;
    std::string described;
    for (const std::string& k : baseline.keys) {
      values.push_back(sets.contains(k) ? scalar_text(sets[k]) : "");
      described += fmt::format("{}{}={}", described.empty() ? "" : ", ", k, values.back());
    }
    const auto it = rows.find(values);
    if (it == rows.end()) {
      ++report.unmatched;
      continue;
    }
    const auto old_step = number(it->second->step_time_s);
    if (!old_step) continue;  // the baseline point failed: nothing to regress from
    ++report.compared;
    Regression reg{r.id, described, fmt::format("{}:{}", baseline.file, it->second->line),
                   *old_step, 0.0, ""};
    const Json& m = j.value("metrics", Json(nullptr));
    if (!r.ok || !m.is_object() || !m.contains(run_json::kStepTime) || !m[run_json::kStepTime].is_number()) {
      reg.error = r.ok ? "no step_time_s in the result" : r.error;
      report.regressions.push_back(std::move(reg));
      continue;
    }
    reg.new_step_s = m[run_json::kStepTime].get<double>();
    if (reg.new_step_s > reg.old_step_s * (1.0 + max_regression))
      report.regressions.push_back(std::move(reg));
  }
  return report;
}

}  // namespace gradsync::sweep
