#pragma once
/// @file progress.h
/// The progress of a run of steps: on a terminal a status line redrawn in
/// place, elsewhere plain log lines only.

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

namespace actorgrad::cli {

/// Reports a run of `total` steps on `out`. When `out` is a terminal, a
/// status line (step, loss, steps/s, ETA) is redrawn at most ten times a
/// second and log lines are printed above it; otherwise only the log lines
/// appear.
class Progress {
public:
  Progress(std::FILE* out, std::int64_t total);

  /// Step `step` (1-based) is done; `loss` is asked for only when the
  /// status line is redrawn.
  void step_done(std::int64_t step, const std::function<double()>& loss);
  /// Prints one log line.
  void print(const std::string& line);
  /// Clears the status line (call before the last lines of the run).
  void finish();

  /// Steps per second since construction.
  double rate() const;
  /// Estimated time left, e.g. `12s` or `3m04s`.
  std::string eta() const;
  /// Seconds since construction.
  double elapsed_s() const;

private:
  void clear_status();

  std::FILE* out_;
  std::int64_t total_;
  std::int64_t done_ = 0;
  bool live_;
  bool status_shown_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

} // namespace actorgrad::cli
