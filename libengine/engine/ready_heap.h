#pragma once
/// @file ready_heap.h
/// The ready queue of one actor (or one thread): a heap under ReadyOrder.

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "actorgrad/libengine/engine/ready_task.h"

namespace actorgrad {

/// A max-heap of ReadyTasks under ReadyOrder that lets the top be moved out.
/// Not synchronized: it belongs to exactly one actor (or one thread).
///
/// Note [Keyed ready heap]
/// The heap orders small keys (ReadyKey and a slot), compared by ReadyOrder;
/// the tasks stay in `slots_` (a freed slot is reused). So a push or pop
/// moves one ReadyTask once, instead of up to log2(size) + 3 times.
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

  void push(ReadyTask&& t) {
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
  ReadyTask pop() {
    if (has_lone_) {
      has_lone_ = false;
      return std::move(lone_);
    }
    std::pop_heap(keys_.begin(), keys_.end(), ReadyOrder{});
    const std::uint32_t slot = keys_.back().slot;
    keys_.pop_back();
    free_.push_back(slot);
    return std::move(slots_[slot]);
  }
  const ReadyTask& top() const { return has_lone_ ? lone_ : slots_[keys_.front().slot]; }
  bool empty() const { return !has_lone_ && keys_.empty(); }
  std::size_t size() const { return keys_.size() + (has_lone_ ? 1 : 0); }

private:
  struct Slot {
    ReadyKey key;
    std::uint32_t slot;
  };

  void push_keyed(ReadyTask&& t) {
    Slot k{t.key, 0};
    if (free_.empty()) {
      k.slot = static_cast<std::uint32_t>(slots_.size());
      slots_.push_back(std::move(t));
    } else {
      k.slot = free_.back();
      free_.pop_back();
      slots_[k.slot] = std::move(t);
    }
    keys_.push_back(k);
    std::push_heap(keys_.begin(), keys_.end(), ReadyOrder{});
  }

  std::vector<Slot> keys_;
  std::vector<ReadyTask> slots_;
  std::vector<std::uint32_t> free_;
  ReadyTask lone_; ///< see Note [Lone ready task]
  bool has_lone_ = false;
};

} // namespace actorgrad
