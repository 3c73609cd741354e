#pragma once
/// @file current_graph_task.h
/// The GraphTask whose node runs on this thread: a thread-local the node
/// runners set and queue_callback and reentrant calls read.
/// Internal (libengine/engine/detail/, not installed).

namespace actorgrad {
class GraphTaskBase;
} // namespace actorgrad

namespace actorgrad::detail {

/// See current_graph_task(). In the header, so that the guard a node runs
/// under is inlined (it runs for every node). Written and read by its own
/// thread only.
inline constinit thread_local GraphTaskBase* current_task = nullptr;

/// The GraphTask whose node runs on this thread right now (null outside
/// a node), for queue_callback and for reentrant calls.
inline GraphTaskBase* current_graph_task() { return current_task; }

/// Sets current_graph_task() (for graph types that restore it themselves,
/// see Note [Per-thread call state] in libengine/torch/torch_graph.cpp).
inline void set_current_graph_task(GraphTaskBase* t) { current_task = t; }

/// Sets current_graph_task() for a scope.
class CurrentGraphTaskGuard {
public:
  explicit CurrentGraphTaskGuard(GraphTaskBase* t) : current_(&current_task), prev_(*current_) {
    *current_ = t;
  }
  ~CurrentGraphTaskGuard() { *current_ = prev_; }
  CurrentGraphTaskGuard(const CurrentGraphTaskGuard&) = delete;
  CurrentGraphTaskGuard& operator=(const CurrentGraphTaskGuard&) = delete;

private:
  /// This thread's slot, looked up once (see AutoGradMode::mode_).
  GraphTaskBase** current_;
  GraphTaskBase* prev_;
};

} // namespace actorgrad::detail
