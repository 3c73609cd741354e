#pragma once
/// @file device_work_timer.h
/// Stream tracks on CUDA: the device work a recorded node enqueues, timed
/// by CUDA events and reported to the launching thread's LaunchObserver.
///
/// Note [Device work timing on CUDA]
/// The plugin links none of the core, so it reaches the launching thread's
/// observer (device/launch_observer.h) through the function the core
/// connects at load time. When a thread has an observer, an item of work
/// (a kernel, a copy, a memset, a stream wait) is enqueued between two
/// timing events, and the pair goes to one timer thread of the plugin. It
/// waits for the end event, converts both events to host time against an
/// anchor event per device (recorded and waited for once, then stamped with
/// the host clock: elapsed times are exact between events of one device,
/// the anchor's host time is off by the wake-up of one
/// cudaEventSynchronize), and calls the observer's DeviceRun there. The
/// timer may call the CUDA runtime, which a cudaLaunchHostFunc callback
/// must not. Without an observer nothing of this runs: one call through a
/// function pointer and a branch per launch. An item's point counts the
/// observed items of its stream (unobserved work is not numbered), which is
/// what records and waits refer to.

#include <cstdint>
#include <utility>

#include "actorgrad/device/cuda/cuda_backend.h"
#include "actorgrad/device/launch_observer.h"
#include "actorgrad/device/stream.h"

namespace actorgrad::cuda::plugin {

/// Called once by the core when it loads the plugin: where to find the
/// calling thread's launch observer.
void connect_launch_observer(LaunchObserver* (*launch_observer)());

/// The calling thread's launch observer (null when none or not connected).
LaunchObserver* current_launch_observer();

/// An item being timed: its start event is recorded.
struct TimedItem {
  void* start = nullptr; ///< cudaEvent_t
  Stream stream;
  std::uint64_t point = 0;
  DeviceRun done;
};

/// Records the start event of an item about to be enqueued on `s` (runtime
/// handle `native`, s.device current), numbering it on `s`.
TimedItem start_timing(Stream s, cudaStream_t native, DeviceRun done);
/// Records its end event (after the item was enqueued) and hands it to the
/// timer thread.
void finish_timing(TimedItem item, cudaStream_t native);

/// The number of observed items enqueued on `s` so far (a record's point).
std::uint64_t observed_items(Stream s);

/// Runs `enqueue`, which puts the one item `work` on work.stream (`native`,
/// its device current), timed when the calling thread has an observer that
/// wants it.
template <class F>
void observed(const DeviceLaunch& work, cudaStream_t native, F&& enqueue) {
  LaunchObserver* o = current_launch_observer();
  if (o == nullptr) {
    enqueue();
    return;
  }
  DeviceRun done = o->launched(work);
  if (!done) {
    enqueue();
    return;
  }
  TimedItem item = start_timing(work.stream, native, std::move(done));
  try {
    enqueue();
  } catch (...) { // still reported, so that the recorder does not wait for it
    finish_timing(std::move(item), native);
    throw;
  }
  finish_timing(std::move(item), native);
}

} // namespace actorgrad::cuda::plugin
