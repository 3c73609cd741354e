#pragma once
/// @file spare_stack.h
/// What a thread keeps of its spent storage (freed blocks, emptied vectors)
/// for its own next use, with no lock. Internal.

#include <cstddef>
#include <new>
#include <utility>

#include "actorgrad/libengine/engine/detail/thread_exit.h"

namespace actorgrad::detail {

// Note [Storage a thread keeps]
// A backward call makes and drops the same few blocks every time (its task,
// its edge lists, each node's input list). malloc's per-thread cache holds
// 7 blocks a size, fewer than a call (or 60 nested calls) holds at once, so
// these went to malloc's arena and back on every call. Instead the thread
// that drops one keeps it, up to a bound, and its next call takes it. A
// block made on one thread and dropped on another is kept by the second.
//
// The stack is a trivial thread_local, reached with one load and no
// initialisation check. It can have no destructor, so its slots are on the
// heap, made when the thread first keeps an item, and the thread's exit
// destroys them, with the items, through close_at_thread_exit. Once that
// ran, keep() refuses (another thread_local's destructor may still make a
// call), so nothing is left behind.

/// The nested backward calls on one thread whose per-call storage (task
/// block, node table, edge lists) the thread keeps: two stacks of
/// max_recursion_depth (60) calls, its own and one fresh stack past the
/// limit (Note [A fresh stack past the depth limit] in
/// actors/detail/fresh_stack.h). A deeper call allocates its own.
inline constexpr std::size_t nested_calls_with_spares = 128;

/// Up to `N` items (of a swappable type whose default and moved-from
/// values own nothing) that one thread keeps for its own next use, the
/// last kept first out (Note [Storage a thread keeps]). One stack a thread
/// for each Item and N. Written and read only by its own thread.
template <class Item, std::size_t N>
class SpareStack {
public:
  /// What the stack holds.
  using item = Item;
  /// Items kept at most.
  static constexpr std::size_t max_kept = N;

  /// How many items this thread keeps.
  static std::size_t size() noexcept { return state_.count; }

  /// Moves the item this thread kept last into `into`, which owns nothing
  /// (empty or moved from). Requires size() != 0.
  static void take(Item& into) noexcept {
    State& s = state_;
    using std::swap; // the slot then owns nothing, as every slot past count
    swap(into, s.slots[--s.count]);
  }

  /// Moves `item` in and returns true, unless the thread keeps max_kept
  /// items, is ending, or has no memory for its slots: then `item` stays
  /// with the caller.
  static bool keep(Item& item) noexcept {
    State& s = state_;
    if (s.closed || s.count == N || (!s.slots && !open()))
      return false;
    using std::swap; // the slot owned nothing: now `item` owns nothing
    swap(s.slots[s.count++], item);
    return true;
  }

private:
  struct State {
    Item* slots;       ///< N slots, or null until the thread first keeps an item
    std::size_t count; ///< slots[0, count) hold kept items, the last kept at the top
    bool closed;       ///< the thread is ending: keep nothing more
  };
  static inline thread_local State state_{};

  /// Makes the thread's slots and has its exit close them (once a thread).
  [[gnu::noinline]] static bool open() noexcept {
    state_.slots = new (std::nothrow) Item[N];
    if (!state_.slots)
      return false;
    close_at_thread_exit<&close>();
    return true;
  }

  /// Destroys the kept items and their slots, and keeps nothing more.
  static void close() noexcept {
    State& s = state_;
    s.closed = true;
    s.count = 0;
    delete[] std::exchange(s.slots, nullptr);
  }
};

/// The emptied vectors of type V that a thread keeps for its next ones: up
/// to `Lists` of them, each with room for at most `MaxSize` elements (a
/// longer one goes back to malloc). Moving a kept vector in or out moves
/// its storage, not its elements.
template <class V, std::size_t Lists, std::size_t MaxSize>
struct SpareVectors {
  /// The thread's kept vectors.
  using stack = SpareStack<V, Lists>;
  /// The most room (capacity) a kept vector has.
  static constexpr std::size_t max_size = MaxSize;

  /// An empty vector with room for `size`: in the storage this thread kept
  /// last, when `size` fits it and the thread keeps one.
  static V take(std::size_t size) {
    V v;
    if (size != 0 && size <= MaxSize && stack::size() != 0)
      stack::take(v);
    v.reserve(size);
    return v;
  }

  /// Empties `v` and keeps its storage when it holds at most MaxSize and
  /// the thread keeps fewer than Lists; a vector not kept keeps its
  /// storage (and is left as it was when it is longer than MaxSize).
  static void keep(V&& v) {
    if (v.capacity() == 0 || v.capacity() > MaxSize)
      return;
    v.clear(); // may run destructors (of nodes, tensors) that keep vectors too
    stack::keep(v);
  }
};

} // namespace actorgrad::detail
