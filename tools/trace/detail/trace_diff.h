#pragma once
/// @file trace_diff.h
/// Two recordings compared: per operation and per actor, counts and times
/// before and after (`actorgrad trace --diff BEFORE AFTER`; the HTML
/// report shows it with html_report.h).
/// Internal (tools/trace/detail/, not installed).

#include <cstdint>
#include <string>
#include <vector>

#include "actorgrad/tools/trace/detail/summary.h"

namespace actorgrad::trace::detail {

/// One operation (node name) or actor in both recordings.
struct DiffRow {
  std::string name;
  /// Calls of an operation; node executions of an actor.
  std::size_t count_before = 0;
  std::size_t count_after = 0;
  /// Total time of an operation; busy time of an actor.
  std::int64_t time_before_ns = 0;
  std::int64_t time_after_ns = 0;

  bool added() const { return count_before == 0 && count_after > 0; }
  bool removed() const { return count_before > 0 && count_after == 0; }
  std::int64_t time_change_ns() const { return time_after_ns - time_before_ns; }
  std::int64_t count_change() const {
    return static_cast<std::int64_t>(count_after) - static_cast<std::int64_t>(count_before);
  }
  /// "added", "removed" or the signed change in count.
  std::string count_change_text() const;
};

/// What changed from one recording to another.
struct TraceDiff {
  std::int64_t span_before_ns = 0;
  std::int64_t span_after_ns = 0;
  std::size_t nodes_before = 0;
  std::size_t nodes_after = 0;
  std::size_t messages_before = 0;
  std::size_t messages_after = 0;
  /// Per node name, the largest time change first (then by name).
  std::vector<DiffRow> ops;
  /// Per actor role (its name without a trailing actor id, so the callers
  /// of two runs match), in the order they appear (after, then before only).
  std::vector<DiffRow> actors;
};

/// Compares two recordings through their summaries (summary.h: node
/// executions and messages are the sums over the actors).
TraceDiff diff_summaries(const Summary& before, const Summary& after);

/// The comparison as text; each list shows its first `top` rows (0: all).
std::string format_diff(const TraceDiff& d, std::size_t top = 20);

/// `+12.5%` (after against before; "" when before is 0 and after is not).
std::string percent_change(std::int64_t before, std::int64_t after);

/// `+1.234 ms`, `-56.7 us`, `0 ns`.
std::string signed_duration(std::int64_t ns);

} // namespace actorgrad::trace::detail
