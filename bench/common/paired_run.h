#pragma once
/// @file paired_run.h
/// Runs two independent jobs at once, one on the calling thread and one on
/// a partner thread that lives as long as the PairedRun: what two threads of
/// one process get from this machine when they share nothing.

#include <atomic>
#include <functional>
#include <thread>

namespace actorgrad::bench {

/// The partner thread waits (spinning, so that a start costs no wake-up)
/// for run(); run() returns when both jobs are done.
class PairedRun {
public:
  /// `mine` runs on the caller's thread, `partner` on the partner thread.
  PairedRun(std::function<void()> mine, std::function<void()> partner)
    : mine_(std::move(mine)), partner_(std::move(partner)), thread_([this] { serve(); }) {}
  PairedRun(const PairedRun&) = delete;
  PairedRun& operator=(const PairedRun&) = delete;
  ~PairedRun() {
    stop_.store(true, std::memory_order_release);
    thread_.join();
  }

  /// Both jobs once, at the same time.
  void run() {
    const unsigned round = started_.load(std::memory_order_relaxed) + 1;
    started_.store(round, std::memory_order_release);
    mine_();
    while (finished_.load(std::memory_order_acquire) != round)
      std::this_thread::yield();
  }

private:
  void serve() {
    unsigned done = 0;
    while (!stop_.load(std::memory_order_acquire)) {
      if (started_.load(std::memory_order_acquire) == done) {
        std::this_thread::yield();
        continue;
      }
      partner_();
      finished_.store(++done, std::memory_order_release);
    }
  }

  std::function<void()> mine_;
  std::function<void()> partner_;
  std::atomic<unsigned> started_{0};  ///< written by run(), read by the partner
  std::atomic<unsigned> finished_{0}; ///< written by the partner, read by run()
  std::atomic<bool> stop_{false};     ///< written by the destructor, read by the partner
  std::thread thread_;                ///< last: starts once the members above exist
};

} // namespace actorgrad::bench
