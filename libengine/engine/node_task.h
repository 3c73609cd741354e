#pragma once
/// @file node_task.h
/// A unit of ready work and the order in which ready work runs.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "libengine/autograd/node.h"
#include "libengine/engine/input_buffer.h"

namespace actorgrad {

class GraphTask;

/// A node whose inputs are complete, ready to run for one GraphTask
/// (PyTorch's NodeTask). `fn == nullptr` marks a wake-up task (it only makes
/// a waiting loop look at its exit condition again); `shutdown` stops a worker.
struct NodeTask {
  std::shared_ptr<GraphTask> graph_task;
  std::shared_ptr<Node> fn;
  InputBuffer inputs;
  int reentrant_depth = 0;
  bool shutdown = false;

  static NodeTask wake_up(int depth = 0) { return NodeTask{nullptr, nullptr, {}, depth, false}; }
  static NodeTask make_shutdown() { return NodeTask{nullptr, nullptr, {}, 0, true}; }
};

/// `ReadyOrder{}(a, b)` is true when `a` runs after `b`: shutdown first, then
/// wake-ups, then higher reentrant depth, then higher sequence_nr. This is
/// PyTorch's CompareNodeTaskTime, kept bit for bit.
struct ReadyOrder {
  bool operator()(const NodeTask& t1, const NodeTask& t2) const {
    if (t2.shutdown)
      return true;
    if (!t1.fn || t1.shutdown)
      return false;
    if (!t2.fn)
      return true;
    if (t1.reentrant_depth == t2.reentrant_depth)
      return t1.fn->sequence_nr() < t2.fn->sequence_nr();
    return t1.reentrant_depth < t2.reentrant_depth;
  }
};

/// A max-heap of NodeTasks under ReadyOrder that lets the top be moved out.
/// Not synchronized: it belongs to exactly one actor (or one thread).
class ReadyHeap {
public:
  void push(NodeTask&& t) {
    tasks_.push_back(std::move(t));
    std::push_heap(tasks_.begin(), tasks_.end(), ReadyOrder{});
  }
  /// Removes and returns the task that runs next.
  NodeTask pop() {
    std::pop_heap(tasks_.begin(), tasks_.end(), ReadyOrder{});
    NodeTask t = std::move(tasks_.back());
    tasks_.pop_back();
    return t;
  }
  const NodeTask& top() const { return tasks_.front(); }
  bool empty() const { return tasks_.empty(); }
  std::size_t size() const { return tasks_.size(); }

private:
  std::vector<NodeTask> tasks_;
};

} // namespace actorgrad
