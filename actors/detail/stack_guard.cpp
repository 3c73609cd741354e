#include "actorgrad/actors/detail/stack_guard.h"

#include <pthread.h>

#include <cstdint>

namespace actorgrad::detail {

namespace {

/// The lowest address of the calling thread's stack (0: unknown), found once per thread.
std::uintptr_t stack_low() {
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
  const std::uintptr_t low = stack_low();
  if (low == 0)
    return false;
  char here;
  const auto sp = reinterpret_cast<std::uintptr_t>(&here);
  return sp < low + reentrant_stack_reserve;
}

} // namespace actorgrad::detail
