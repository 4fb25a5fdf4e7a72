// What `gradsync sweep` prints when it ends (sweep_summary.hpp).
#include "gradsync/report/sweep_summary.hpp"

#include <fmt/format.h>

namespace gradsync {
namespace {

using Json = nlohmann::ordered_json;

std::string first_line(const std::string& text) {
  const std::size_t end = text.find('\n');
  return end == std::string::npos ? text : text.substr(0, end) + " …";
}

}  // namespace

Json sweep_summary_json(const SweepSummary& s) {
  Json failures = Json::array();
  for (const SweepSummary::Failure& f : s.failed)
    failures.push_back({{"point", f.id}, {"sets", f.sets}, {"error", f.error}});
  Json out{{"sweep", s.name},
           {"dir", s.dir},
           {"points", s.points},
           {"ran", s.ran},
           {"reused", s.points - s.ran},
           {"failed", failures},
           {"interrupted", s.interrupted},
           {"wall_s", s.wall_s},
           {"results_csv", s.results_csv},
           {"results_jsonl", s.results_jsonl}};
  if (s.gate) {
    Json regressions = Json::array();
    for (const SweepRegression& g : s.gate->regressions)
      regressions.push_back(
          {{"point", g.id}, {"sets", g.sets}, {"baseline", g.baseline},
           {"old_step_time_s", g.old_step_s},
           {"new_step_time_s", g.error.empty() ? Json(g.new_step_s) : Json(nullptr)},
           {"error", g.error.empty() ? Json(nullptr) : Json(g.error)}});
    out["baseline"] = s.gate->baseline_file;
    out["max_regression"] = s.gate->max_regression;
    out["compared"] = s.gate->compared;
    out["unmatched"] = s.gate->unmatched;
    out["regressions"] = regressions;
  }
  return out;
}

std::string sweep_summary_text(const SweepSummary& s) {
  std::string out = fmt::format("{}: {} points ({} run now{}), {} failed, {:.1f} s → {}\n", s.name,
                                s.points, s.ran,
                                s.points > s.ran
                                    ? fmt::format(", {} from before", s.points - s.ran)
                                    : "",
                                s.failed.size(), s.wall_s, s.results_csv);
  for (std::size_t i = 0; i < s.failed.size() && i < 20; ++i)
    out += fmt::format("failed: {} {}: {}\n", s.failed[i].id, s.failed[i].sets.dump(),
                       first_line(s.failed[i].error));
  if (s.failed.size() > 20)
    out += fmt::format("… and {} more failed points\n", s.failed.size() - 20);
  if (!s.gate) return out;
  const SweepSummary::Gate& gate = *s.gate;
  for (const SweepRegression& g : gate.regressions) {
    if (!g.error.empty())
      out += fmt::format("regression: {} ({}): now fails ({}: ran in {:.6g} s): {}\n", g.id,
                         g.sets, g.baseline, g.old_step_s, first_line(g.error));
    else
      out += fmt::format(
          "regression: {} ({}): step_time_s {:.6g} → {:.6g} s ({:+.1f} %, limit {:.1f} %; "
          "baseline {})\n",
          g.id, g.sets, g.old_step_s, g.new_step_s, 100.0 * (g.new_step_s / g.old_step_s - 1.0),
          100.0 * gate.max_regression, g.baseline);
  }
  out += fmt::format("baseline {}: {} points compared, {} regressed beyond {:.1f} %{}\n",
                     gate.baseline_file, gate.compared, gate.regressions.size(),
                     100.0 * gate.max_regression,
                     gate.unmatched ? fmt::format(", {} points not in the baseline", gate.unmatched)
                                    : "");
  return out;
}

}  // namespace gradsync
