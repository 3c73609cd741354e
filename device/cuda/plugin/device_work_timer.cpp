#include "actorgrad/device/cuda/plugin/device_work_timer.h"

#include <array>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>

#include <cuda_runtime.h>

#include "actorgrad/device/cuda/plugin/cuda_error.h"
#include "actorgrad/device/cuda/plugin/device_scope.h"

namespace actorgrad::cuda::plugin {

namespace {

using Clock = std::chrono::steady_clock;

/// Set once, by the core, before the first launch; read by every launch.
LaunchObserver* (*observer_source)() = nullptr;

/// An event of a device and the host time at which it completed.
struct Anchor {
  std::once_flag made;
  cudaEvent_t event = nullptr;
  Clock::time_point host;
};

/// A timed item whose end event is recorded, waiting for the timer.
struct Pending {
  TimedItem item;
  cudaEvent_t end = nullptr;
};

/// The timer thread and what it shares with the launching threads (the
/// plugin's own work queue, not the engine's scheduling).
class Timer {
public:
  Timer() {
    std::thread([this] { run(); }).detach();
  }

  void push(Pending p) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(p));
    }
    wake_.notify_one();
  }

  /// The anchor of `d`, made on first use (by a launching thread, before
  /// its first timed item, so every item comes after it).
  Anchor& anchor(Device d) {
    Anchor& a = anchors_.at(static_cast<std::size_t>(d.index));
    std::call_once(a.made, [&] {
      const DeviceScope scope(d);
      cudaStream_t s = nullptr;
      check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags", d);
      check(cudaEventCreate(&a.event), "cudaEventCreate", d);
      check(cudaEventRecord(a.event, s), "cudaEventRecord", d);
      check(cudaEventSynchronize(a.event), "cudaEventSynchronize", d);
      a.host = Clock::now();
      (void)cudaStreamDestroy(s);
    });
    return a;
  }

  /// The next observed point of `s`.
  std::uint64_t next_point(Stream s) {
    std::lock_guard lock(points_mutex_);
    return ++points_[s];
  }

  std::uint64_t points(Stream s) {
    std::lock_guard lock(points_mutex_);
    auto it = points_.find(s);
    return it == points_.end() ? 0 : it->second;
  }

private:
  void run() {
    for (;;) {
      Pending p;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return !queue_.empty(); });
        p = std::move(queue_.front());
        queue_.pop_front();
      }
      report(p);
    }
  }

  /// Waits for the item and reports it; an item whose times cannot be read
  /// is still reported (the recorder waits for every run), at the host's now.
  void report(Pending& p) {
    const Device d = p.item.stream.device;
    auto start = Clock::now(), end = start;
    auto start_event = static_cast<cudaEvent_t>(p.item.start);
    try {
      const DeviceScope scope(d);
      check(cudaEventSynchronize(p.end), "cudaEventSynchronize", d);
      Anchor& a = anchor(d);
      auto since_anchor = [&](cudaEvent_t e) {
        float ms = 0;
        check(cudaEventElapsedTime(&ms, a.event, e), "cudaEventElapsedTime", d);
        return a.host + std::chrono::duration_cast<Clock::duration>(
                          std::chrono::duration<double, std::milli>(ms));
      };
      start = since_anchor(start_event);
      end = since_anchor(p.end);
    } catch (...) { // the error reaches whoever synchronizes the stream
      start = end = Clock::now();
    }
    p.item.done(p.item.point, start, end);
    (void)cudaEventDestroy(start_event);
    (void)cudaEventDestroy(p.end);
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Pending> queue_;
  std::array<Anchor, 64> anchors_;
  std::mutex points_mutex_;
  std::unordered_map<Stream, std::uint64_t> points_;
};

Timer& timer() {
  static auto* t = new Timer; // leaked with its detached thread, like the backend
  return *t;
}

cudaEvent_t timing_event(Device d) {
  cudaEvent_t e = nullptr;
  check(cudaEventCreate(&e), "cudaEventCreate", d);
  return e;
}

} // namespace

void connect_launch_observer(LaunchObserver* (*launch_observer)()) {
  observer_source = launch_observer;
}

LaunchObserver* current_launch_observer() {
  return observer_source != nullptr ? observer_source() : nullptr;
}

TimedItem start_timing(Stream s, cudaStream_t native, DeviceRun done) {
  timer().anchor(s.device);
  TimedItem item{timing_event(s.device), s, timer().next_point(s), std::move(done)};
  check(cudaEventRecord(static_cast<cudaEvent_t>(item.start), native), "cudaEventRecord", s.device);
  return item;
}

void finish_timing(TimedItem item, cudaStream_t native) {
  cudaEvent_t end = timing_event(item.stream.device);
  check(cudaEventRecord(end, native), "cudaEventRecord", item.stream.device);
  timer().push({std::move(item), end});
}

std::uint64_t observed_items(Stream s) { return timer().points(s); }

} // namespace actorgrad::cuda::plugin
