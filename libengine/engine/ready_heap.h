#pragma once
/// @file ready_heap.h
/// The ready queue of one actor (or one thread): a heap under ReadyOrder.

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "actorgrad/libengine/engine/ready_task.h"

namespace actorgrad {

/// A max-heap of ReadyTasks under ReadyOrder that lets the top be moved out.
/// Not synchronized: it belongs to exactly one actor (or one thread).
///
/// Note [Keyed ready heap]
/// The heap orders small keys (ReadyKey and a slot), compared by ReadyOrder;
/// the tasks stay in `Keyed::slots` (a freed slot is reused). So a push or pop
/// moves one ReadyTask once, instead of up to log2(size) + 3 times.
///
/// Note [Few ready tasks]
/// Most of the time the heap holds one or two tasks: along a chain each node
/// makes the next one ready just after the heap gave up the last, and a
/// node with two next nodes makes two. While no more than `few` tasks wait,
/// they sit in `few_`, sorted so that the last runs next: a push is an
/// insertion among at most three, a pop takes the last, with no key, slot
/// or heap step. A push past `few` moves them all into the keyed heap,
/// which then takes every push until it is empty. So `few_` is only ever
/// used while the keyed heap is empty.
class ReadyHeap {
public:
  ReadyHeap() = default;
  ReadyHeap(const ReadyHeap& other) { *this = other; }
  ReadyHeap& operator=(const ReadyHeap& other) {
    if (this != &other) {
      keyed_ = other.keyed_ ? std::make_unique<Keyed>(*other.keyed_) : nullptr;
      few_ = other.few_;
      num_few_ = other.num_few_;
    }
    return *this;
  }
  /// A moved-from heap is empty (actors hand heaps over and reuse their own).
  /// Note [Cheap heap moves]: every synchronous call hands a caller's heap
  /// over a few times, so a move touches one pointer and the live inline
  /// tasks only; the keyed storage (with its capacity) goes along.
  ReadyHeap(ReadyHeap&& other) noexcept
    : keyed_(std::move(other.keyed_)), num_few_(std::exchange(other.num_few_, 0)) {
    for (std::size_t i = 0; i < num_few_; ++i)
      few_[i] = std::move(other.few_[i]);
  }
  ReadyHeap& operator=(ReadyHeap&& other) noexcept {
    keyed_ = std::move(other.keyed_);
    // Past both counts both arrays hold empty tasks: nothing to move there.
    for (std::size_t i = 0; i < std::max(num_few_, other.num_few_); ++i)
      few_[i] = std::move(other.few_[i]);
    num_few_ = std::exchange(other.num_few_, 0);
    return *this;
  }

  void push(ReadyTask&& t) {
    if (keyed_empty() && num_few_ < few) {
      // Insertion: the tasks that run after t stay before it.
      std::size_t i = num_few_++;
      for (; i > 0 && !ReadyOrder{}(few_[i - 1], t); --i)
        few_[i] = std::move(few_[i - 1]);
      few_[i] = std::move(t);
      return;
    }
    if (!keyed_)
      keyed_ = std::make_unique<Keyed>();
    for (std::size_t i = 0; i < num_few_; ++i)
      keyed_->push(std::move(few_[i]));
    num_few_ = 0;
    keyed_->push(std::move(t));
  }
  /// Removes and returns the task that runs next.
  ReadyTask pop() {
    if (num_few_ > 0)
      return std::move(few_[--num_few_]);
    return keyed_->pop();
  }
  const ReadyTask& top() const { return num_few_ > 0 ? few_[num_few_ - 1] : keyed_->top(); }
  bool empty() const { return num_few_ == 0 && keyed_empty(); }
  std::size_t size() const { return (keyed_ ? keyed_->keys.size() : 0) + num_few_; }

private:
  /// The heap proper (Note [Keyed ready heap]), made on the first push past `few`.
  struct Keyed {
    struct Slot {
      ReadyKey key;
      std::uint32_t slot;
    };
    std::vector<Slot> keys;
    std::vector<ReadyTask> slots;
    std::vector<std::uint32_t> free;

    void push(ReadyTask&& t) {
      Slot k{t.key, 0};
      if (free.empty()) {
        k.slot = static_cast<std::uint32_t>(slots.size());
        slots.push_back(std::move(t));
      } else {
        k.slot = free.back();
        free.pop_back();
        slots[k.slot] = std::move(t);
      }
      keys.push_back(k);
      std::push_heap(keys.begin(), keys.end(), ReadyOrder{});
    }
    ReadyTask pop() {
      std::pop_heap(keys.begin(), keys.end(), ReadyOrder{});
      const std::uint32_t slot = keys.back().slot;
      keys.pop_back();
      free.push_back(slot);
      return std::move(slots[slot]);
    }
    const ReadyTask& top() const { return slots[keys.front().slot]; }
  };

  bool keyed_empty() const { return !keyed_ || keyed_->keys.empty(); }

  std::unique_ptr<Keyed> keyed_;
  static constexpr std::size_t few = 4;
  std::array<ReadyTask, few> few_; ///< see Note [Few ready tasks]
  std::size_t num_few_ = 0;
};

} // namespace actorgrad
