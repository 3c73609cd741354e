#pragma once
/// @file op_table.h
/// The per-operation table of a timeline (what PyTorch users read first in
/// the profiler's `key_averages()`): for each node name, its calls and
/// times, sorted by total time.
/// Internal (tools/trace/detail/, not installed).

#include <cstdint>
#include <string>
#include <vector>

#include "actorgrad/tools/trace/timeline.h"

namespace actorgrad::trace::detail {

/// The executions of the nodes of one name.
struct OpStats {
  std::string name;
  std::size_t calls = 0;
  /// Sum of the executions' durations (nested reentrant executions inside
  /// them included).
  std::int64_t total_ns = 0;
  /// total_ns without the nested executions on the same actor: the time
  /// its own code ran.
  std::int64_t self_ns = 0;
  std::int64_t min_ns = 0;
  std::int64_t max_ns = 0;
  /// self_ns over all nodes' self time, in percent (the shares add up to 100).
  double share_percent = 0;
  /// Time its executions' kernels and copies ran on their streams (Note
  /// [Stream tracks]): on an asynchronous device, the work the node's time
  /// only launched.
  std::int64_t device_ns = 0;
  std::int64_t mean_ns() const { return calls ? total_ns / static_cast<std::int64_t>(calls) : 0; }
};

/// One row per node name, by total time (then name).
std::vector<OpStats> op_table(const Timeline& tl);

/// The table as CSV: a header line, then one line per op, times in ns
/// (name,calls,total_ns,self_ns,mean_ns,min_ns,max_ns,share_percent,device_ns).
std::string op_table_csv(const std::vector<OpStats>& ops);

} // namespace actorgrad::trace::detail
