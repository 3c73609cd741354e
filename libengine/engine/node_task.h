#pragma once
/// @file node_task.h
/// A unit of ready work and the order in which ready work runs.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
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
///
/// Note [Keyed ready heap]
/// The heap orders small keys (shutdown/wake-up flags, depth, sequence_nr,
/// slot), compared exactly as ReadyOrder compares their tasks; the tasks
/// stay in `slots_` (a freed slot is reused). So a push or pop moves one
/// NodeTask once, instead of up to log2(size) + 3 times (each move of a
/// NodeTask is two shared_ptrs and a vector, and each moved-from temporary
/// is destroyed) and compares without reading the nodes.
///
/// Note [Lone ready task]
/// Most of the time the heap holds at most one task: along a chain each node
/// makes the next one ready just after the heap gave up the last. A task
/// pushed onto an empty heap waits in `lone_`, without a key, a slot or a
/// heap step; a second push moves it into the keyed heap first. So `lone_`
/// is only ever set while `keys_` is empty.
class ReadyHeap {
public:
  ReadyHeap() = default;
  ReadyHeap(const ReadyHeap&) = default;
  ReadyHeap& operator=(const ReadyHeap&) = default;
  /// A moved-from heap is empty (actors hand heaps over and reuse their own).
  ReadyHeap(ReadyHeap&& other) noexcept { *this = std::move(other); }
  ReadyHeap& operator=(ReadyHeap&& other) noexcept {
    keys_ = std::exchange(other.keys_, {});
    slots_ = std::exchange(other.slots_, {});
    free_ = std::exchange(other.free_, {});
    lone_ = std::move(other.lone_);
    has_lone_ = std::exchange(other.has_lone_, false);
    return *this;
  }

  void push(NodeTask&& t) {
    if (empty()) {
      lone_ = std::move(t);
      has_lone_ = true;
      return;
    }
    if (has_lone_) {
      has_lone_ = false;
      push_keyed(std::move(lone_));
    }
    push_keyed(std::move(t));
  }
  /// Removes and returns the task that runs next.
  NodeTask pop() {
    if (has_lone_) {
      has_lone_ = false;
      return std::move(lone_);
    }
    std::pop_heap(keys_.begin(), keys_.end(), KeyOrder{});
    const std::uint32_t slot = keys_.back().slot;
    keys_.pop_back();
    free_.push_back(slot);
    return std::move(slots_[slot]);
  }
  const NodeTask& top() const { return has_lone_ ? lone_ : slots_[keys_.front().slot]; }
  bool empty() const { return !has_lone_ && keys_.empty(); }
  std::size_t size() const { return keys_.size() + (has_lone_ ? 1 : 0); }

private:
  void push_keyed(NodeTask&& t) {
    Key k{t.fn ? t.fn->sequence_nr() : 0, t.reentrant_depth, 0, t.shutdown, !t.fn};
    if (free_.empty()) {
      k.slot = static_cast<std::uint32_t>(slots_.size());
      slots_.push_back(std::move(t));
    } else {
      k.slot = free_.back();
      free_.pop_back();
      slots_[k.slot] = std::move(t);
    }
    keys_.push_back(k);
    std::push_heap(keys_.begin(), keys_.end(), KeyOrder{});
  }

  struct Key {
    std::uint64_t sequence_nr;
    int reentrant_depth;
    std::uint32_t slot;
    bool shutdown;
    bool wake_up; ///< no node
  };
  /// ReadyOrder on keys.
  struct KeyOrder {
    bool operator()(const Key& t1, const Key& t2) const {
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
  };
  std::vector<Key> keys_;
  std::vector<NodeTask> slots_;
  std::vector<std::uint32_t> free_;
  NodeTask lone_; ///< see Note [Lone ready task]
  bool has_lone_ = false;
};

} // namespace actorgrad
