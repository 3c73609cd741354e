#pragma once
/// @file scratch_vector.h
/// A vector for the passes that build a backward call, whose storage stays
/// with the thread between calls.

#include <cstddef>
#include <utility>
#include <vector>

namespace actorgrad {

/// A vector that takes its storage from its thread's spare one and gives
/// it back when it goes out of scope, unless it grew past `max_kept`
/// elements: the stacks of compute_dependencies and init_to_execute would
/// otherwise allocate (and free) their storage on every backward call. A
/// call nested in another takes an empty spare and allocates; the larger
/// storage is the one kept.
template <class T, std::size_t max_kept = 4096>
class ScratchVector {
public:
  ScratchVector() : items_(std::move(spare())) {}
  ~ScratchVector() {
    if (items_.capacity() <= max_kept && items_.capacity() > spare().capacity()) {
      items_.clear();
      spare() = std::move(items_);
    }
  }
  ScratchVector(const ScratchVector&) = delete;
  ScratchVector& operator=(const ScratchVector&) = delete;

  std::vector<T>& operator*() { return items_; }
  std::vector<T>* operator->() { return &items_; }

private:
  /// Written and read only by its own thread.
  static std::vector<T>& spare() {
    static thread_local std::vector<T> items;
    return items;
  }
  std::vector<T> items_;
};

} // namespace actorgrad
