#pragma once
/// @file thread_count.h
/// How many threads this process has now (Linux: /proc/self/task).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <thread>

namespace actorgrad::testing {

/// Threads of this process now, as the kernel lists them (a thread that was
/// joined is gone from the list).
inline std::size_t process_threads() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/task"))
    ++n;
  return n;
}

/// How much slower threads start and end in this build: 10 under
/// ThreadSanitizer (which also runs a thread of its own), else 1. Scales the
/// idle times of the tests that wait for idle threads to end.
inline constexpr int kThreadTimeScale =
#ifdef __SANITIZE_THREAD__
  10;
#else
  1;
#endif

/// Starts and joins a thread, so that a sanitizer's own threads (started
/// with a process's first thread) exist before a test counts threads.
inline void start_runtime_threads() {
  std::thread([] {}).join();
}

/// Whether process_threads() is `n` within `limit` (polled every
/// millisecond). A joined thread leaves the kernel's list a moment after
/// pthread_join returned: the kernel wakes the joiner when it clears the
/// thread's id, just before it unlists the thread. So a count taken right
/// after threads were joined allows that moment; a thread still running
/// (as before Note [Engine threads are joined]) stays far longer.
inline bool threads_become(std::size_t n,
                           std::chrono::milliseconds limit = std::chrono::milliseconds(100)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (process_threads() != n) {
    if (std::chrono::steady_clock::now() > end)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

/// process_threads() once the count has held still for `quiet` (polled
/// every millisecond, for at most a second). A baseline taken right after
/// an earlier test case joined its threads may still count them (see
/// threads_become); this waits for them to leave the list.
inline std::size_t
settled_threads(std::chrono::milliseconds quiet = std::chrono::milliseconds(50)) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  std::size_t n = process_threads();
  auto since = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - since < quiet &&
         std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (const std::size_t now = process_threads(); now != n) {
      n = now;
      since = std::chrono::steady_clock::now();
    }
  }
  return n;
}

/// The most threads this process had while it lived: samples
/// process_threads() every millisecond on a thread of its own (counted
/// too) from construction until peak().
class PeakThreads {
public:
  PeakThreads() = default;
  PeakThreads(const PeakThreads&) = delete;
  PeakThreads& operator=(const PeakThreads&) = delete;
  ~PeakThreads() { peak(); }

  /// Stops sampling; the highest count seen.
  std::size_t peak() {
    if (sampler_.joinable()) {
      sampling_.store(false);
      sampler_.join();
    }
    return most_.load();
  }

private:
  std::atomic<bool> sampling_{true}; ///< written by peak(), read by the sampler
  std::atomic<std::size_t> most_{0}; ///< written by the sampler, read after it ended
  std::thread sampler_{[this] {
    while (sampling_.load()) {
      most_.store(std::max(most_.load(), process_threads()));
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }};
};

} // namespace actorgrad::testing
