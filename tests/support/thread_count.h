#pragma once
/// @file thread_count.h
/// How many threads this process has now (Linux: /proc/self/task).

#include <cstddef>
#include <filesystem>

namespace actorgrad::testing {

/// Threads of this process now, as the kernel lists them (a thread that was
/// joined is gone from the list).
inline std::size_t process_threads() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/task"))
    ++n;
  return n;
}

} // namespace actorgrad::testing
