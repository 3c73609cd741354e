#pragma once
/// @file scratch_vector.h
/// Vectors for the passes that build a backward call, whose storage stays
/// with the thread between calls.
/// Internal (libengine/engine/detail/, not installed).

#include <cstddef>
#include <utility>
#include <vector>

namespace actorgrad::detail {

/// The thread's spare storage for scratch vectors of T. Written and read
/// only by its own thread.
template <class T>
std::vector<T>& spare_vector() {
  static thread_local std::vector<T> items;
  return items;
}

/// An empty vector with the thread's spare storage for vectors of T, if it
/// has one: the stacks of compute_dependencies' walks would otherwise
/// allocate (and free) their storage on every backward call.
/// Hand it back with give_back_scratch. A call nested in another finds no
/// spare and allocates. A plain local vector, not a wrapper: the compiler
/// keeps its pointers in registers through the pass.
template <class T>
std::vector<T> take_scratch() {
  return std::move(spare_vector<T>());
}

/// Keeps `items`' storage for the thread's next take_scratch, unless it
/// grew past `max_kept` elements or the thread keeps a larger one.
template <class T>
void give_back_scratch(std::vector<T>&& items, std::size_t max_kept = 4096) {
  std::vector<T>& spare = spare_vector<T>();
  if (items.capacity() <= max_kept && items.capacity() > spare.capacity()) {
    items.clear();
    spare = std::move(items);
  }
}

} // namespace actorgrad::detail
