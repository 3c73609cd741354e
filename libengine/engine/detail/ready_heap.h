#pragma once
/// @file ready_heap.h
/// The ready queue of one actor (or one thread): a heap under ReadyOrder.

#include <algorithm>
#include <array>
#include <cstdint>
#include <new>
#include <utility>
#include <vector>

#include "actorgrad/libengine/engine/detail/ready_task.h"

namespace actorgrad::detail {

/// A max-heap of ReadyTasks under ReadyOrder that lets the top be moved out.
/// Not synchronized: it belongs to exactly one actor (or one thread).
///
/// Note [Keyed ready heap]
/// The heap orders small keys (ReadyKey and a slot), compared by ReadyOrder;
/// the tasks stay in `slots_` (a freed slot is reused). So a push or pop
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
/// used while `keys_` is empty. Only the first `num_few_` places hold a
/// task (a constructed object): an empty heap is made, moved and destroyed
/// without touching the others. A call with a caller's Runner hands its
/// heap over three times; a synchronous 2-node call spent about 330
/// instructions making and destroying the four tasks of its heaps
/// (bench/HISTORY.md, "A coordinator woken without a message").
class ReadyHeap {
  struct Slot {
    ReadyKey key;
    std::uint32_t slot;
  };

public:
  /// The vectors of a heap, with their capacity: what an empty heap leaves
  /// for the next heap of its thread (Note [Caller scratch reuse] in
  /// actors/engine.cpp), a quarter of a whole heap's size.
  struct Storage {
    std::vector<Slot> keys;
    std::vector<ReadyTask> slots;
    std::vector<std::uint32_t> free;
  };

  ReadyHeap() = default;
  /// An empty heap on `storage`'s vectors (emptied, capacity kept).
  explicit ReadyHeap(Storage&& storage) noexcept
    : keys_(std::move(storage.keys)), slots_(std::move(storage.slots)),
      free_(std::move(storage.free)) {}
  ReadyHeap(const ReadyHeap& other) : keys_(other.keys_), slots_(other.slots_), free_(other.free_) {
    for (; num_few_ < other.num_few_; ++num_few_)
      ::new (few_[num_few_].place()) ReadyTask(other.few_[num_few_].task);
  }
  ReadyHeap& operator=(const ReadyHeap& other) {
    if (this != &other)
      *this = ReadyHeap(other);
    return *this;
  }
  /// A moved-from heap is empty (actors hand heaps over and reuse their own).
  ReadyHeap(ReadyHeap&& other) noexcept { *this = std::move(other); }
  ReadyHeap& operator=(ReadyHeap&& other) noexcept {
    // std::vector's move leaves the source empty (std::allocator): no
    // temporaries (every call hands a caller's heap over a few times).
    keys_ = std::move(other.keys_);
    slots_ = std::move(other.slots_);
    free_ = std::move(other.free_);
    clear_few();
    for (; num_few_ < other.num_few_; ++num_few_)
      ::new (few_[num_few_].place()) ReadyTask(std::move(other.few_[num_few_].task));
    other.clear_few();
    return *this;
  }
  ~ReadyHeap() { clear_few(); }

  /// Forced inline: it runs once per node, and GCC stopped inlining it into
  /// BasicGraphTask::route once route could also call route_spread (48
  /// instructions a node more on the chain; callgrind, bench_chain_driver).
  [[gnu::always_inline]] void push(ReadyTask&& t) {
    if (keys_.empty() && num_few_ < few) {
      // Insertion: the tasks that run after t stay before it, the others
      // move up one place (the first of them into the new last place).
      std::size_t i = num_few_;
      if (i > 0 && !ReadyOrder{}(few_[i - 1].task, t)) {
        ::new (few_[i].place()) ReadyTask(std::move(few_[i - 1].task));
        for (--i; i > 0 && !ReadyOrder{}(few_[i - 1].task, t); --i)
          few_[i].task = std::move(few_[i - 1].task);
        few_[i].task = std::move(t);
      } else {
        ::new (few_[i].place()) ReadyTask(std::move(t));
      }
      ++num_few_;
      return;
    }
    for (std::size_t i = 0; i < num_few_; ++i)
      push_keyed(std::move(few_[i].task));
    clear_few();
    push_keyed(std::move(t));
  }
  /// Removes and returns the task that runs next. Forced inline, as push.
  [[gnu::always_inline]] ReadyTask pop() {
    if (num_few_ > 0) {
      ReadyTask& last = few_[--num_few_].task;
      ReadyTask t = std::move(last);
      last.~ReadyTask();
      return t;
    }
    std::pop_heap(keys_.begin(), keys_.end(), ReadyOrder{});
    const std::uint32_t slot = keys_.back().slot;
    keys_.pop_back();
    free_.push_back(slot);
    return std::move(slots_[slot]);
  }
  const ReadyTask& top() const {
    return num_few_ > 0 ? few_[num_few_ - 1].task : slots_[keys_.front().slot];
  }
  /// Calls `f` with each waiting task, in no particular order.
  template <class F>
  void for_each(F f) const {
    for (std::size_t i = 0; i < num_few_; ++i)
      f(few_[i].task);
    for (const Slot& k : keys_)
      f(slots_[k.slot]);
  }
  bool empty() const { return num_few_ == 0 && keys_.empty(); }
  std::size_t size() const { return keys_.size() + num_few_; }

  /// Moves this empty heap's vectors out, with their capacity.
  Storage take_storage() noexcept {
    return {std::move(keys_), std::move(slots_), std::move(free_)};
  }

private:
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
  /// A place for one of the few tasks, constructed only while it holds one.
  union FewPlace {
    FewPlace() {}
    ~FewPlace() {}
    void* place() { return &task; }
    ReadyTask task;
  };

  void clear_few() {
    for (; num_few_ > 0; --num_few_)
      few_[num_few_ - 1].task.~ReadyTask();
  }

  static constexpr std::size_t few = 4;
  std::array<FewPlace, few> few_; ///< see Note [Few ready tasks]
  std::size_t num_few_ = 0;
};

} // namespace actorgrad::detail
