#include "actorgrad/libengine/autograd/hook_handle.h"

#include <atomic>

namespace actorgrad {

void HookHandle::remove() {
  if (auto list = list_.lock())
    remove_(list.get(), id_);
  list_.reset();
}

std::uint64_t next_hook_id() {
  // Written by every registration, read by nobody else: only uniqueness matters.
  static std::atomic<std::uint64_t> counter{1};
  return counter.fetch_add(1, std::memory_order_relaxed);
}

} // namespace actorgrad
