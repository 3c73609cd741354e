#pragma once
/// @file exec_info.h
/// Selective execution: which nodes a grad(inputs=...) call runs and captures.

#include <cstdint>

namespace actorgrad {

/// Selective execution info of one node (PyTorch's ExecInfo), built by
/// BasicGraphTask::create and read-only while the task runs. It lives in
/// the node's state in the task's node table, 4 bytes in what was padding,
/// and the captures in one list of the task (see Note [Exec info in the
/// node table] in basic_graph_task.h).
struct ExecInfo {
  /// Captures the gradient arriving on input `input_idx` as result
  /// `output_idx`. `owner` is the capturing node's state: a node's captures
  /// are adjacent in the task's list, in the order of the call's inputs.
  struct Capture {
    std::uint32_t input_idx;
    std::uint32_t output_idx;
    const void* owner;
  };
  /// The node runs: it is on a path from the root to a requested input.
  std::uint32_t needed : 1 = 0;
  /// init_to_execute's search has reached the node.
  std::uint32_t seen : 1 = 0;
  /// The node's first capture: its index in the task's list plus one, 0
  /// when the node captures nothing.
  std::uint32_t first_capture : 30 = 0;
  bool should_execute() const { return needed || first_capture != 0; }
};

} // namespace actorgrad
