#pragma once
/// @file parallelism.h
/// How one backward pass used the actors that ran its nodes: each track's
/// busy share of the pass, the parallelism achieved, and the longest chain
/// of dependent nodes, which bounds what more CPU workers could give (Note
/// [Parallelism of a pass] in parallelism.cpp).
/// Internal (tools/trace/detail/, not installed).

#include <cstdint>
#include <vector>

#include "actorgrad/tools/trace/timeline.h"

namespace actorgrad::trace::detail {

/// One actor's share of a pass.
struct PassTrack {
  std::size_t actor = 0; ///< index into Timeline::actors
  /// Time inside the pass's node slices on this actor (nested ones once).
  std::int64_t busy_ns = 0;
  /// busy_ns over the pass's wall time, in percent.
  double busy_percent = 0;
  /// Node executions of the pass on this actor.
  std::size_t nodes = 0;
};

/// The parallelism of one backward pass (one graph task of one process).
struct PassParallelism {
  std::uint64_t graph_task = 0;
  std::size_t process = 0;
  /// Its first node slice's start to its last one's end.
  std::int64_t wall_ns = 0;
  /// Node time summed over its tracks (PassTrack::busy_ns).
  std::int64_t node_ns = 0;
  /// node_ns / wall_ns: how many actors ran its nodes at once, on average.
  double parallelism = 0;
  /// The actors that ran its nodes, in Timeline::actors order.
  std::vector<PassTrack> tracks;
  /// The longest chain of dependent nodes by node time (indices into
  /// Timeline::slices, first to last) and its summed durations.
  std::vector<std::size_t> critical_chain;
  std::int64_t critical_ns = 0;
  /// node_ns / critical_ns: the most parallelism any number of workers
  /// could reach on this pass (its nodes' times as recorded).
  double max_parallelism = 0;
};

/// The parallelism of the pass made of `task_slices` (graph task `task` of
/// process `process`; indices into tl.slices, sorted by start).
PassParallelism pass_parallelism(const Timeline& tl, std::size_t process, std::uint64_t task,
                                 const std::vector<std::size_t>& task_slices);

/// Time covered by the outermost of `slices` (one actor's, sorted by
/// start): a slice nested in another counts once.
std::int64_t busy_time(const std::vector<const Slice*>& slices);

} // namespace actorgrad::trace::detail
