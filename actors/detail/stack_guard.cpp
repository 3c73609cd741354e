#include "actorgrad/actors/detail/stack_guard.h"

#include <pthread.h>

#include <cstdint>
#include <utility>

namespace actorgrad::detail {

namespace {

/// The lowest address of the fresh stack the thread runs on, or 0 on its
/// own stack. Written and read by its own thread only.
thread_local std::uintptr_t fresh_stack_low = 0;

/// The lowest address of the calling thread's own stack (0: unknown), found once per thread.
std::uintptr_t thread_stack_low() {
  thread_local const std::uintptr_t low = [] {
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0)
      return std::uintptr_t{0};
    void* addr = nullptr;
    std::size_t size = 0;
    const bool ok = pthread_attr_getstack(&attr, &addr, &size) == 0;
    pthread_attr_destroy(&attr);
    return ok ? reinterpret_cast<std::uintptr_t>(addr) : std::uintptr_t{0};
  }();
  return low;
}

} // namespace

bool stack_is_short() {
  const std::uintptr_t low = fresh_stack_low != 0 ? fresh_stack_low : thread_stack_low();
  if (low == 0)
    return false;
  char here;
  const auto sp = reinterpret_cast<std::uintptr_t>(&here);
  return sp < low + reentrant_stack_reserve;
}

std::uintptr_t enter_stack(std::uintptr_t low) { return std::exchange(fresh_stack_low, low); }

} // namespace actorgrad::detail
