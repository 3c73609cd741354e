#pragma once
/// @file recycling_allocator.h
/// An allocator that keeps the blocks a thread frees for that thread's next
/// allocations of the same type: a backward call's task block
/// (std::allocate_shared) then costs no malloc.
/// Internal (libengine/engine/detail/, not installed).

#include <cstddef>
#include <memory>

#include "actorgrad/libengine/engine/detail/spare_stack.h"

namespace actorgrad::detail {

/// Frees a block of one T (the blocks a thread keeps).
template <class T>
struct FreeBlock {
  void operator()(T* p) const noexcept { std::allocator<T>{}.deallocate(p, 1); }
};

/// The blocks for one T a thread keeps (Note [Storage a thread keeps]): a
/// thread with nested_calls_with_spares nested calls holds that many tasks at
/// once, and each finds its block again in the next pass.
template <class T>
using SpareBlocks = SpareStack<std::unique_ptr<T, FreeBlock<T>>, nested_calls_with_spares>;

/// A stateless allocator for single objects of T: deallocate keeps up to
/// SpareBlocks<T>::max_kept blocks for the calling thread, allocate takes
/// the one kept last (Note [Storage a thread keeps]).
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
    using kept = SpareBlocks<T>;
    if (n == 1 && kept::size() != 0) {
      typename kept::item block;
      kept::take(block);
      return block.release();
    }
    return std::allocator<T>{}.allocate(n);
  }

  /// Frees `p`, or keeps it for this thread's next allocate when it holds
  /// one object and the thread keeps fewer than max_kept.
  void deallocate(T* p, std::size_t n) noexcept {
    if (n != 1) {
      std::allocator<T>{}.deallocate(p, n);
      return;
    }
    typename SpareBlocks<T>::item block(p);
    SpareBlocks<T>::keep(block); // else `block` frees it
  }

  /// Stateless: any two free each other's blocks.
  template <class U>
  bool operator==(const RecyclingAllocator<U>&) const noexcept {
    return true;
  }
};

} // namespace actorgrad::detail
