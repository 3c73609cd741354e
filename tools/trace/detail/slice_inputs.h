#pragma once
/// @file slice_inputs.h
/// Which node slices of one backward pass fed which: the dependencies the
/// critical path (summary.h) and the parallelism of a pass
/// (parallelism.h) walk.
/// Internal (tools/trace/detail/, not installed).

#include <cstdint>
#include <map>
#include <vector>

#include "actorgrad/tools/trace/timeline.h"

namespace actorgrad::trace::detail {

/// An input of a node slice from another slice of the same pass.
struct SliceInput {
  /// The producer (index into Timeline::slices).
  std::size_t from = 0;
  /// When the input arrived: the message's receipt, or the producer's end
  /// for an input passed on the same actor.
  std::int64_t arrival_ns = 0;
  /// The message's latency (0 for an input passed on the same actor).
  std::int64_t latency_ns = 0;
  /// True when the input came as a message.
  bool message = false;
};

/// The inputs of the slices `task_slices` of graph task `task` on process
/// `process`, by consumer (index into Timeline::slices): each of a slice's
/// local_inputs, and each received message of the pass whose producer is
/// known. Nodes are told apart by sequence_nr within the pass (the first
/// slice of a number stands for it).
std::map<std::size_t, std::vector<SliceInput>>
slice_inputs(const Timeline& tl, std::size_t process, std::uint64_t task,
             const std::vector<std::size_t>& task_slices);

} // namespace actorgrad::trace::detail
