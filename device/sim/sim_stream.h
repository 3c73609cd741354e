#pragma once
/// @file sim_stream.h
/// One simulated stream: an in-order executor thread. Internal to the sim backend.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <random>
#include <thread>

#include "actorgrad/device/stream.h"

namespace actorgrad::sim::detail {

/// Runs the work enqueued on one sim stream, in order, on its own thread,
/// each item after a random delay. Work is numbered from 1 in enqueue order
/// (its "point"); `completed()` is the point of the last item that ran.
///
/// The lock and condition variable here are the simulated hardware's queue,
/// not the engine's scheduling: engine actors only enqueue and never wait on
/// them (a host synchronize does, as on a GPU).
class SimStream {
public:
  SimStream(Stream id, int slot);
  ~SimStream();
  SimStream(const SimStream&) = delete;
  SimStream& operator=(const SimStream&) = delete;

  const Stream id;
  /// This stream's timeline slot in the race detector.
  const int slot;

  /// Enqueues `work`; returns its point.
  std::uint64_t enqueue(std::function<void()> work);
  /// The point of the last item enqueued.
  std::uint64_t enqueued() const;
  std::uint64_t completed() const { return completed_.load(std::memory_order_acquire); }
  /// Blocks the caller until the item at `point` has run.
  void wait_for(std::uint64_t point) const;
  /// Waits for everything enqueued so far; rethrows the first error a work
  /// item raised (then forgets it, like a CUDA error that was reported).
  void synchronize();
  /// Restarts the delay generator from `seed` with delays in [0, max_delay_us].
  void reseed(std::uint64_t seed, std::uint32_t max_delay_us);

private:
  struct Item {
    std::function<void()> work;
    std::chrono::microseconds delay;
  };
  void run();

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Item> queue_;
  std::uint64_t enqueued_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
  std::mt19937_64 rng_;
  std::uint32_t max_delay_us_ = 0;
  std::atomic<std::uint64_t> completed_{0};
  std::thread thread_;
};

/// True on a sim stream's executor thread (a kernel body is running).
bool on_stream_thread();

} // namespace actorgrad::sim::detail
