// The progress `gradsync sweep` shows on stderr while its points run: a redrawn bar with an
// ETA on a terminal, one plain line per point otherwise (batch logs; for sweeps of more than
// 500 points, failures and a status line every 10 s).
#pragma once

#include <chrono>
#include <cstddef>

#include "gradsync/sweep/sweep_runner.hpp"

namespace gradsync::cli {

class SweepProgress {
 public:
  explicit SweepProgress(std::size_t to_run);
  void finished(const SweepPointDone& p);
  void tick();   // redraws the bar at most 4 times a second
  void close();  // clears the bar

 private:
  using Clock = std::chrono::steady_clock;
  [[nodiscard]] double elapsed() const;
  [[nodiscard]] std::string eta() const;
  void draw();

  static constexpr std::size_t kEveryPointUpTo = 500;
  bool tty_;
  std::size_t to_run_;
  std::size_t done_ = 0;
  std::size_t failed_ = 0;
  Clock::time_point start_;
  Clock::time_point last_draw_;
};

}  // namespace gradsync::cli
