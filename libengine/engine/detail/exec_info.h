#pragma once
/// @file exec_info.h
/// Selective execution: which nodes a grad(inputs=...) call runs and captures.
/// Internal (libengine/engine/detail/, not installed).

#include <cstdint>

namespace actorgrad::detail {

/// Selective execution info of one node (PyTorch's ExecInfo), built by
/// BasicGraphTask::create and read-only while the task runs. It lives in
/// the node's state in the task's node table, 4 bytes in what was padding,
/// and the captures in one list of the task (see Note [Exec info in the
/// node table] in basic_graph_task.h).
class ExecInfo {
public:
  /// Captures the gradient arriving on input `input_idx` as result
  /// `output_idx`. `owner` is the capturing node's state: a node's captures
  /// are adjacent in the task's list, in the order of the call's inputs.
  struct Capture {
    std::uint32_t input_idx;
    std::uint32_t output_idx;
    const void* owner;
  };
  /// The node runs: it is on a path from the root to a requested input.
  bool needed() const { return bits_ & needed_bit; }
  void set_needed() { bits_ |= needed_bit; }
  /// The dependency walk of a call with inputs has met the node.
  bool seen() const { return bits_ & seen_bit; }
  void set_seen() { bits_ |= seen_bit; }
  /// The node's first capture: its index in the task's list plus one, 0
  /// when the node captures nothing.
  std::uint32_t first_capture() const { return bits_ >> 4; }
  void set_first_capture(std::uint32_t k) { bits_ = (bits_ & 15u) | (k << 4); }
  bool should_execute() const {
    return (bits_ & ~(seen_bit | joins_bit | on_coordinator_bit)) != 0;
  }
  /// More than one gradient reaches the node: set for a task whose CPU
  /// nodes spread over threads, where such a node's inputs add up on the
  /// task's coordinator, in a fixed order (Note [Parallel CPU nodes] in
  /// actors/detail/cpu_lanes.h).
  bool joins() const { return bits_ & joins_bit; }
  void set_joins() { bits_ |= joins_bit; }
  /// The node reads thread-local state that only the task's coordinator
  /// has (Note [Nodes that need their call's thread] in
  /// actors/detail/cpu_lanes.h): set for a task whose CPU nodes spread over
  /// threads, where such a node runs on the coordinator.
  bool on_coordinator() const { return bits_ & on_coordinator_bit; }
  void set_on_coordinator() { bits_ |= on_coordinator_bit; }

private:
  static constexpr std::uint32_t needed_bit = 1;
  static constexpr std::uint32_t seen_bit = 2;
  static constexpr std::uint32_t joins_bit = 4;
  static constexpr std::uint32_t on_coordinator_bit = 8;
  /// One word, made with one store for every node of a call (bit fields
  /// with initializers took a read-modify-write each).
  std::uint32_t bits_ = 0;
};

} // namespace actorgrad::detail
