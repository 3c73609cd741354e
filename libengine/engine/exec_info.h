#pragma once
/// @file exec_info.h
/// Selective execution: which nodes a grad(inputs=...) call runs and captures.

#include <cstdint>
#include <vector>

namespace actorgrad {

/// Selective execution info of one node (PyTorch's ExecInfo), built by
/// BasicGraphTask::create and read-only while the task runs.
struct ExecInfo {
  /// Captures the gradient arriving on input `input_idx` as result `output_idx`.
  struct Capture {
    std::uint32_t input_idx;
    std::uint32_t output_idx;
  };
  bool needed = false;
  std::vector<Capture> captures;
  bool should_execute() const { return needed || !captures.empty(); }
};

} // namespace actorgrad
