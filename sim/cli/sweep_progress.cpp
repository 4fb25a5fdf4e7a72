// `gradsync sweep`'s progress on stderr (see sweep_progress.hpp).
#include "sweep_progress.hpp"

#include <unistd.h>

#include <iostream>
#include <string>

#include <fmt/format.h>

namespace gradsync::cli {
namespace {

std::string clock_text(double seconds) {
  const auto s = static_cast<long long>(seconds + 0.5);
  if (s >= 3600) return fmt::format("{}:{:02d}:{:02d}", s / 3600, (s / 60) % 60, s % 60);
  return fmt::format("{}:{:02d}", s / 60, s % 60);
}

std::string first_line(const std::string& text) {
  const std::size_t end = text.find('\n');
  return end == std::string::npos ? text : text.substr(0, end) + " …";
}

}  // namespace

SweepProgress::SweepProgress(std::size_t to_run)
    : tty_(::isatty(STDERR_FILENO) == 1), to_run_(to_run), start_(Clock::now()),
      last_draw_(start_) {}

void SweepProgress::finished(const SweepPointDone& p) {
  ++done_;
  const bool ok = p.ok;
  if (!ok) ++failed_;
  if (tty_) {
    if (!ok)
      std::cerr << fmt::format("\r\033[Kfailed: {} {}: {}\n", p.id, p.sets, first_line(p.error));
    if (!ok || done_ == to_run_) draw();
    else tick();  // at most 4 redraws a second, however fast points finish
    return;
  }
  // A line per point for small sweeps; for large ones, failures and a status line every 10 s.
  if (!ok || to_run_ <= kEveryPointUpTo)
    std::cerr << fmt::format("sweep: [{}/{}] {} {} {:.2f} s  {}{}\n", done_, to_run_, p.id,
                             ok ? "ok" : "FAILED", p.wall_s, p.sets,
                             ok ? "" : ": " + first_line(p.error))
              << std::flush;
  const auto now = Clock::now();
  const bool status = to_run_ <= kEveryPointUpTo ? done_ % 10 == 0
                                                 : now - last_draw_ >= std::chrono::seconds(10);
  if (status || done_ == to_run_) {
    last_draw_ = now;
    std::cerr << fmt::format("sweep: {}/{} done, {} failed, {} elapsed, ETA {}\n", done_, to_run_,
                             failed_, clock_text(elapsed()), eta())
              << std::flush;
  }
}

void SweepProgress::tick() {
  if (!tty_ || to_run_ == 0) return;
  if (Clock::now() - last_draw_ < std::chrono::milliseconds(250)) return;
  draw();
}

void SweepProgress::close() {
  if (tty_ && to_run_ > 0) std::cerr << "\r\033[K" << std::flush;
}

double SweepProgress::elapsed() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

std::string SweepProgress::eta() const {
  if (done_ == 0) return "?";
  return clock_text(elapsed() / static_cast<double>(done_) *
                    static_cast<double>(to_run_ - done_));
}

void SweepProgress::draw() {
  last_draw_ = Clock::now();
  constexpr std::size_t kWidth = 30;
  const std::size_t filled = to_run_ == 0 ? kWidth : kWidth * done_ / to_run_;
  std::cerr << fmt::format("\r\033[K[{}{}] {}/{} points{}  {} elapsed  ETA {}",
                           std::string(filled, '#'), std::string(kWidth - filled, '.'), done_,
                           to_run_, failed_ ? fmt::format(", {} failed", failed_) : "",
                           clock_text(elapsed()), eta())
            << std::flush;
}

}  // namespace gradsync::cli
