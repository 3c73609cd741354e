#pragma once
/// @file recycling_allocator.h
/// An allocator that keeps the blocks a thread frees for that thread's next
/// allocations of the same type: a backward call's task block
/// (std::allocate_shared) then costs no malloc.

#include <cstddef>
#include <memory>
#include <new>

#include "actorgrad/libengine/engine/thread_exit.h"

namespace actorgrad {

namespace detail {

/// A thread's kept blocks for objects of type T. Trivial, so reaching it is
/// one thread-local load with no initialisation check, and small (see Note
/// [Node table memory] on the static TLS a module loaded with dlopen gets):
/// the slots themselves are on the heap, made when the thread first keeps
/// a block and freed, with the blocks, when it ends. Written and read only
/// by its own thread.
template <class T>
struct KeptBlocks {
  /// Blocks kept at most: a thread with max_recursion_depth (60) nested
  /// calls holds that many tasks at once, and each finds its block again
  /// in the next pass.
  static constexpr std::size_t max_kept = 64;
  T** slots;          ///< max_kept slots, or null until the thread first keeps a block
  std::size_t count;  ///< slots[0, count) hold kept blocks, the last kept at the top
  bool closed;        ///< this thread is ending: keep nothing more
};

/// This thread's kept blocks for T.
template <class T>
inline thread_local KeptBlocks<T> kept_blocks{};

/// Frees this thread's kept blocks for T and their slots, and keeps
/// nothing more: the thread is ending.
template <class T>
void close_kept_blocks() noexcept {
  KeptBlocks<T>& k = kept_blocks<T>;
  k.closed = true;
  while (k.count != 0)
    std::allocator<T>{}.deallocate(k.slots[--k.count], 1);
  delete[] k.slots;
  k.slots = nullptr;
}

/// Gives this thread's KeptBlocks<T> its slots, and has the thread's exit
/// close them (called once a thread). False when there was no memory for
/// the slots.
template <class T>
[[gnu::noinline]] bool open_kept_blocks() noexcept {
  kept_blocks<T>.slots = new (std::nothrow) T*[KeptBlocks<T>::max_kept];
  if (!kept_blocks<T>.slots)
    return false;
  close_at_thread_exit<&close_kept_blocks<T>>();
  return true;
}

} // namespace detail

/// A stateless allocator for single objects of T: deallocate keeps up to
/// KeptBlocks<T>::max_kept blocks for the calling thread, allocate takes
/// the one kept last. A block may be allocated on one thread and kept by
/// another (the one that dropped the last reference); each thread's kept
/// blocks are bounded, so none grows without bound.
template <class T>
class RecyclingAllocator {
public:
  using value_type = T;

  RecyclingAllocator() = default;
  /// The rebinding std::allocate_shared makes (to its control block).
  template <class U>
  RecyclingAllocator(const RecyclingAllocator<U>&) noexcept {}

  /// A block for `n` objects: for one, the block this thread kept last, if any.
  T* allocate(std::size_t n) {
    detail::KeptBlocks<T>& k = detail::kept_blocks<T>;
    if (n == 1 && k.count != 0)
      return k.slots[--k.count];
    return std::allocator<T>{}.allocate(n);
  }

  /// Frees `p`, or keeps it for this thread's next allocate when it holds
  /// one object and the thread keeps fewer than max_kept.
  void deallocate(T* p, std::size_t n) noexcept {
    detail::KeptBlocks<T>& k = detail::kept_blocks<T>;
    if (n == 1 && !k.closed && k.count < detail::KeptBlocks<T>::max_kept &&
        (k.slots || detail::open_kept_blocks<T>())) {
      k.slots[k.count++] = p;
      return;
    }
    std::allocator<T>{}.deallocate(p, n);
  }

  /// Stateless: any two free each other's blocks.
  template <class U>
  bool operator==(const RecyclingAllocator<U>&) const noexcept {
    return true;
  }
};

} // namespace actorgrad
