// The calibration fit (see calibration_fit.hpp).
#include "gradsync/calibrate/calibration_fit.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "gradsync/units/units.hpp"

namespace gradsync {

namespace {

constexpr double kFarOff = 2.0;     // a fitted band's median beyond 2x its promise
constexpr double kFarOffRow = 5.0;  // a fitted row beyond 5x its promise
constexpr double kDegraded = 0.005;  // a band's median |error| worse by more: degraded
constexpr double kConverged = 1e-8;  // weighted sum of squared log errors: nothing left to fit

using Times = std::map<long long, double>;

// The first band that holds the size (a 64 KiB row weighs in the latency band).
std::size_t band_index(double bytes) {
  for (std::size_t b = 0; b < kNcclTestsBands.size(); ++b)
    if (in_band(kNcclTestsBands[b], bytes)) return b;
  return kNcclTestsBands.size() - 1;
}

struct Problem {
  const std::vector<FitRow>& rows;
  std::vector<double> weight;  // 1 / rows of the band, 0 outside the asked bands
  const FitSimulator& simulate;
};

std::vector<double> residuals(const Problem& p, const Times& sim) {
  std::vector<double> r;
  r.reserve(p.rows.size());
  for (std::size_t i = 0; i < p.rows.size(); ++i)
    r.push_back(std::sqrt(p.weight[i]) *
                std::log(sim.at(std::llround(p.rows[i].bytes)) / p.rows[i].measured_time_us));
  return r;
}

double cost_of(const std::vector<double>& r) {
  double c = 0;
  for (double v : r) c += v * v;
  return c;
}

// Solves A x = b (n ≤ a handful, positive definite after damping) by Gaussian elimination with
// partial pivoting; false when singular.
bool solve(std::vector<std::vector<double>> a, std::vector<double> b, std::vector<double>& x) {
  const std::size_t n = b.size();
  for (std::size_t c = 0; c < n; ++c) {
    std::size_t piv = c;
    for (std::size_t r = c + 1; r < n; ++r)
      if (std::abs(a[r][c]) > std::abs(a[piv][c])) piv = r;
    if (!(std::abs(a[piv][c]) > 1e-300)) return false;
    std::swap(a[c], a[piv]);
    std::swap(b[c], b[piv]);
    for (std::size_t r = c + 1; r < n; ++r) {
      const double f = a[r][c] / a[c][c];
      for (std::size_t k = c; k < n; ++k) a[r][k] -= f * a[c][k];
      b[r] -= f * b[c];
    }
  }
  x.assign(n, 0.0);
  for (std::size_t c = n; c-- > 0;) {
    double s = b[c];
    for (std::size_t k = c + 1; k < n; ++k) s -= a[c][k] * x[k];
    x[c] = s / a[c][c];
  }
  return true;
}

struct State {
  Times sim;
  double cost = 0;
  int updates = 0;
};

// Levenberg-Marquardt over the parameters of `stage` (with `joint`, also those of the stages
// before it), from `st` (the simulation of `params`).
void fit_stage(const Problem& pb, std::vector<FitParam>& params, int stage, bool joint,
               int iterations, State& st) {
  std::vector<double> r = residuals(pb, st.sim);
  st.cost = cost_of(r);
  double lambda = 1e-2;
  for (int it = 0; it < iterations && st.cost > kConverged; ++it) {
    std::vector<std::size_t> free;
    std::vector<std::vector<double>> cols;
    for (std::size_t j = 0; j < params.size(); ++j) {
      FitParam& p = params[j];
      if ((joint ? p.stage > stage : p.stage != stage) || p.no_effect) continue;
      std::vector<FitParam> probe = params;
      const double h = p.log_scale ? std::log(p.probe) : p.probe;
      probe[j].value = p.from_coord(p.coord() + h);
      if (probe[j].coord() == p.coord()) probe[j].value = p.from_coord(p.coord() - h);  // at a bound
      double step = probe[j].coord() - p.coord();
      if (step == 0.0) continue;
      std::vector<double> col(r.size());
      double norm = 0;
      // A latency below NCCL's per-step value has no effect (the collective takes the larger
      // of the two), so a linear parameter is probed further out before it counts as idle.
      for (int widen = 0; widen < (p.log_scale ? 1 : 4); ++widen) {
        if (widen > 0) {
          probe[j].value = p.from_coord(p.coord() + 4.0 * step);
          step = probe[j].coord() - p.coord();
        }
        const std::vector<double> rp = residuals(pb, pb.simulate(probe, stage));
        norm = 0;
        for (std::size_t i = 0; i < r.size(); ++i) {
          col[i] = (rp[i] - r[i]) / step;
          norm += col[i] * col[i];
        }
        if (norm >= 1e-8) break;
      }
      if (norm < 1e-8) {  // the rows do not depend on it (another limit holds them)
        p.no_effect = true;
        continue;
      }
      p.fitted = true;
      free.push_back(j);
      cols.push_back(std::move(col));
    }
    if (free.empty()) return;
    const std::size_t n = free.size();
    std::vector<std::vector<double>> jtj(n, std::vector<double>(n, 0.0));
    std::vector<double> jtr(n, 0.0);
    for (std::size_t a = 0; a < n; ++a) {
      for (std::size_t i = 0; i < r.size(); ++i) jtr[a] -= cols[a][i] * r[i];
      for (std::size_t b = 0; b < n; ++b)
        for (std::size_t i = 0; i < r.size(); ++i) jtj[a][b] += cols[a][i] * cols[b][i];
    }
    bool accepted = false;
    for (int tries = 0; tries < 10 && !accepted; ++tries) {
      std::vector<std::vector<double>> m = jtj;
      for (std::size_t a = 0; a < n; ++a) m[a][a] *= 1.0 + lambda;
      std::vector<double> d;
      if (!solve(m, jtr, d)) break;
      double shrink = 1.0;  // the trust region
      for (std::size_t a = 0; a < n; ++a) {
        const FitParam& p = params[free[a]];
        const double limit = p.log_scale ? 1.0 : std::max(2.0 * std::abs(p.coord()), 2.0);
        if (std::abs(d[a]) > limit) shrink = std::min(shrink, limit / std::abs(d[a]));
      }
      std::vector<FitParam> trial = params;
      for (std::size_t a = 0; a < n; ++a) {
        FitParam& p = trial[free[a]];
        p.value = p.from_coord(p.coord() + d[a] * shrink);
      }
      Times sim = pb.simulate(trial, stage);
      const std::vector<double> rt = residuals(pb, sim);
      const double c = cost_of(rt);
      if (c < st.cost) {
        const double gain = (st.cost - c) / st.cost;
        params = std::move(trial);
        st.sim = std::move(sim);
        r = rt;
        st.cost = c;
        ++st.updates;
        lambda = std::max(lambda / 3.0, 1e-6);
        accepted = true;
        if (gain < 1e-4 || c < kConverged) return;
      } else {
        lambda *= 4.0;
      }
    }
    if (!accepted) return;
  }
}

std::vector<ComparedRow> compared(const std::vector<FitRow>& rows, const Times& sim) {
  std::vector<ComparedRow> out;
  for (const FitRow& r : rows) {
    ComparedRow c;
    c.bytes = r.bytes;
    c.measured_time_us = r.measured_time_us;
    c.simulated_time_us = sim.at(std::llround(r.bytes));
    c.measured_busbw_GBps = r.measured_busbw_GBps;
    c.simulated_busbw_GBps = r.measured_busbw_GBps * r.measured_time_us / c.simulated_time_us;
    c.line = r.line;
    out.push_back(c);
  }
  return out;
}

std::string shown(const FitParam& p) {
  return p.is_time ? format_time(Seconds(p.value)) : fmt::format("{:.6g}", p.value);
}

}  // namespace

double FitParam::coord() const { return log_scale ? std::log(value) : value / unit; }
double FitParam::from_coord(double u) const {
  return std::clamp(log_scale ? std::exp(u) : u * unit, lo, hi);
}
bool FitParam::at_bound() const { return value <= lo * (1 + 1e-9) || value >= hi * (1 - 1e-9); }

double calibration_promise(double bytes) {
  return bytes >= kCalibrationPromiseBytes ? kCalibrationPromiseLarge : kCalibrationPromiseSmall;
}

CalibrationFit fit_calibration(const std::vector<FitRow>& rows, std::vector<FitParam> params,
                               const FitSimulator& simulate, const FitOptions& options) {
  Problem pb{rows, {}, simulate};
  std::array<int, kNcclTestsBands.size()> per_band{};
  for (const FitRow& r : rows) ++per_band[band_index(r.bytes)];
  for (const FitRow& r : rows) {
    const std::size_t b = band_index(r.bytes);
    pb.weight.push_back(options.asked[b] ? 1.0 / per_band[b] : 0.0);
  }
  if (std::all_of(pb.weight.begin(), pb.weight.end(), [](double w) { return w == 0.0; }))
    throw std::invalid_argument("fit_calibration: no row in the bands asked for");
  for (FitParam& p : params) p.value = p.initial;

  CalibrationFit fit;
  const Times sim0 = simulate(params, 1);
  fit.before = compared(rows, sim0);
  const auto within_promise = [&](const std::vector<ComparedRow>& cr) {
    for (std::size_t i = 0; i < cr.size(); ++i)
      if (pb.weight[i] > 0 && std::abs(cr[i].busbw_error()) > calibration_promise(cr[i].bytes))
        return false;
    return true;
  };

  // A fit is kept only when it leaves no band worse than the stage found it: the fit weighs
  // bands equally, so it could trade one band's accuracy for another's. Stage 2 first fits
  // its own parameters, then refits them with stage 1's (a level fitted while the shape was
  // wrong would otherwise stay wrong), keeping that only when it is better still.
  State st;
  st.sim = sim0;
  st.cost = cost_of(residuals(pb, sim0));
  std::vector<std::string> undone;
  const auto attempt = [&](int stage, bool joint, const std::vector<BandSummary>& start) {
    const std::vector<FitParam> keep = params;
    const State kept = st;
    fit_stage(pb, params, stage, joint, options.iterations, st);
    std::string worse;
    for (const BandSummary& e : summarize_bands(compared(rows, st.sim)))
      for (const BandSummary& b : start)
        if (worse.empty() && b.band.name == e.band.name &&
            e.median_abs_error > b.median_abs_error + kDegraded)
          worse = fmt::format("band {} worse (median |error| {:.1f} % -> {:.1f} %)", e.band.name,
                              b.median_abs_error * 100, e.median_abs_error * 100);
    if (worse.empty() && !(joint && st.cost >= kept.cost)) return;
    if (!worse.empty())
      undone.push_back(fmt::format("{} was undone: it made {}",
                                   stage == 1 ? "stage 1 (link group)"
                                   : joint    ? "stage 2 refitting the link group with nccl:"
                                              : "stage 2 (nccl:)",
                                   worse));
    std::vector<FitParam> tried = std::move(params);
    params = keep;
    for (std::size_t i = 0; i < params.size(); ++i)  // what the undone fit learnt about idleness
      if (!params[i].fitted && tried[i].no_effect) params[i].no_effect = true;
    st = kept;
  };
  attempt(1, false, summarize_bands(fit.before));
  if (!within_promise(compared(rows, st.sim)) &&
      std::any_of(params.begin(), params.end(), [](const FitParam& p) { return p.stage == 2; })) {
    fit.stages = 2;
    const std::vector<BandSummary> start = summarize_bands(compared(rows, st.sim));
    attempt(2, false, start);
    if (!within_promise(compared(rows, st.sim))) attempt(2, true, start);
  }
  for (FitParam& p : params)  // probed but not moved: nothing to write
    if (p.fitted && std::abs(p.value - p.initial) <= 1e-9 * std::abs(p.initial)) p.fitted = false;
  fit.after = compared(rows, st.sim);
  fit.updates = st.updates;

  // The verdict, per row and per band, against the uncalibrated topology.
  bool far_off = false;
  fit.within_promise = true;
  for (std::size_t i = 0; i < fit.after.size(); ++i) {
    const ComparedRow& r = fit.after[i];
    const double e = std::abs(r.busbw_error());
    if (r.bytes >= kCalibrationPromiseBytes) fit.worst_large = std::max(fit.worst_large, e);
    if (pb.weight[i] == 0) continue;
    if (e > calibration_promise(r.bytes)) fit.within_promise = false;
    if (e > kFarOffRow * calibration_promise(r.bytes) && !far_off) {
      fit.failures.push_back(fmt::format("{} is off by {:+.1f} % (beyond {}x the promise)",
                                         format_size(Bytes(r.bytes)), r.busbw_error() * 100,
                                         kFarOffRow));
      far_off = true;
    }
  }
  std::vector<std::string> fitted, stuck, idle;
  for (const FitParam& p : params) {
    if (p.fitted) fitted.push_back(p.label);
    if (p.fitted && p.at_bound()) stuck.push_back(fmt::format("{} at its bound {}", p.label, shown(p)));
    if (p.no_effect && p.stage <= fit.stages) idle.push_back(p.label);
  }
  const std::vector<BandSummary> before = summarize_bands(fit.before);
  for (const BandSummary& a : summarize_bands(fit.after)) {
    FitBand fb;
    fb.after = a;
    for (const BandSummary& b : before)
      if (b.band.name == a.band.name) fb.before = b;
    std::size_t bi = 0;
    while (kNcclTestsBands[bi].name != a.band.name) ++bi;
    fb.asked = options.asked[bi];
    int slower = 0, total = 0;
    for (const ComparedRow& r : fit.after)
      if (in_band(a.band, r.bytes)) {
        ++total;
        if (std::abs(r.busbw_error()) > calibration_promise(r.bytes)) fb.within_promise = false;
        slower += r.busbw_error() > 0 ? 1 : 0;  // gradsync optimistic: the run is slower
      }
    fb.degraded = a.median_abs_error > fb.before.median_abs_error + kDegraded;
    const double band_promise = calibration_promise(a.band.lo_bytes);
    if (fb.asked && a.median_abs_error > kFarOff * band_promise)
      fit.failures.push_back(fmt::format("band {} ({}) median |error| {:.1f} % (beyond {}x its "
                                         "{} % promise)",
                                         a.band.name, a.band.label, a.median_abs_error * 100,
                                         kFarOff, band_promise * 100));
    if (!fb.within_promise && fb.asked) {
      const bool run_slower = slower * 2 >= total;
      fit.notes.push_back(fmt::format(
          "band {} ({}) misses the promise: worst {:+.1f} % at {}, the run {} than the model "
          "at {} of {} rows; {}: the model's shape differs from this run here{}",
          a.band.name, a.band.label, a.worst_error * 100, format_size(Bytes(a.worst_bytes)),
          run_slower ? "slower" : "faster", run_slower ? slower : total - slower, total,
          fitted.empty() ? std::string("no parameter was fitted or kept")
                         : fmt::format("the fitted parameters ({}) cannot move these sizes "
                                       "apart from the others",
                                       fmt::join(fitted, ", ")),
          stuck.empty() ? "" : fmt::format("; {}", fmt::join(stuck, ", "))));
    }
    if (fb.degraded) {
      const std::string msg =
          fmt::format("band {} ({}) got worse: median |error| {:.1f} % -> {:.1f} %{}", a.band.name,
                      a.band.label, fb.before.median_abs_error * 100, a.median_abs_error * 100,
                      fb.asked ? "" : " (a band the fit was not asked for)");
      fit.notes.push_back(msg);
      fit.failures.push_back(msg);
    }
    fit.bands.push_back(fb);
  }
  for (const std::string& u : undone) fit.notes.push_back(u);
  if (!idle.empty())
    fit.notes.push_back(fmt::format("{} had no effect on these rows (another limit holds them)",
                                    fmt::join(idle, ", ")));
  fit.ok = fit.failures.empty();
  fit.params = std::move(params);
  return fit;
}

}  // namespace gradsync
