#pragma once
/// @file ready_task.h
/// A unit of ready work, and the one definition of the order in which ready work runs.
/// Internal (libengine/engine/detail/, not installed).

#include <cstdint>
#include <memory>
#include <utility>

namespace actorgrad {
class GraphTaskBase;
} // namespace actorgrad

namespace actorgrad::detail {

/// What the ready order looks at (PyTorch's CompareNodeTaskTime inputs).
struct ReadyKey {
  std::uint64_t sequence_nr = 0;
  int reentrant_depth = 0;
  bool shutdown = false;
  /// No node: it only makes a waiting loop look at its exit condition again
  /// (the mutex/condvar baseline's wake-up; actors use a message instead).
  bool wake_up = false;
};

/// `ReadyOrder{}(a, b)` is true when `a` runs after `b`: shutdown first, then
/// wake-ups, then higher reentrant depth, then higher sequence_nr. This is
/// PyTorch's CompareNodeTaskTime, kept bit for bit, and the only definition
/// of the order: ReadyHeap, the baseline's priority queue and the tests use it.
struct ReadyOrder {
  bool operator()(const ReadyKey& t1, const ReadyKey& t2) const {
    if (t2.shutdown)
      return true;
    if (t1.wake_up || t1.shutdown)
      return false;
    if (t2.wake_up)
      return true;
    if (t1.reentrant_depth == t2.reentrant_depth)
      return t1.sequence_nr < t2.sequence_nr;
    return t1.reentrant_depth < t2.reentrant_depth;
  }
  template <class T>
  bool operator()(const T& t1, const T& t2) const {
    return (*this)(t1.key, t2.key);
  }
};

/// A node whose inputs are complete, ready to run for one GraphTask
/// (PyTorch's NodeTask), in a form every graph type shares: the node is an
/// owning handle whose type only the GraphTask knows (see Note [Graph
/// interface] in graph_interface.h), and its inputs stay in the GraphTask's
/// state of the node (`slot`), owned by the actor that runs it.
struct ReadyTask {
  std::shared_ptr<GraphTaskBase> graph_task;
  /// Keeps the node alive while it waits (a graph may be dropped by its
  /// caller after backward started).
  std::shared_ptr<void> node;
  /// The node's state in `graph_task` (its input buffer).
  void* slot = nullptr;
  ReadyKey key;

  ReadyTask() = default;
  ReadyTask(std::shared_ptr<GraphTaskBase> task, std::shared_ptr<void> handle, void* state,
            ReadyKey k) noexcept
    : graph_task(std::move(task)), node(std::move(handle)), slot(state), key(k) {}
  ReadyTask(const ReadyTask&) = default;
  ReadyTask(ReadyTask&&) noexcept = default;
  ReadyTask& operator=(const ReadyTask&) = default;
  ReadyTask& operator=(ReadyTask&&) noexcept = default;
  /// Forced inline: every node's routing destroys the moved-from task it
  /// pushed, and GCC put that out of line once BasicGraphTask::route grew
  /// (14 instructions a node; callgrind, bench/RESULTS.md).
  [[gnu::always_inline]] ~ReadyTask() {}

  static ReadyTask make_wake_up(int depth = 0) {
    return {nullptr, nullptr, nullptr, {0, depth, false, true}};
  }
  static ReadyTask make_shutdown() { return {nullptr, nullptr, nullptr, {0, 0, true, false}}; }
  bool is_shutdown() const { return key.shutdown; }
  bool is_wake_up() const { return key.wake_up; }
};

} // namespace actorgrad::detail
