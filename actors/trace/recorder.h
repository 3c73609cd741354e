#pragma once
/// @file recorder.h
/// The engine's own profiler of message flow (DESIGN.md section 2,
/// "Profiling message flow"): Debian's CAF has no actor profiler.
///
/// How it is used: Engine::start_recording() installs a Recorder as the
/// engine's observer (actors/observer.h); every GraphTask started from then
/// on keeps it in its TaskContext, and each actor that runs part of such a
/// task appends events to its own EventBuffer of that Recorder.
/// Engine::stop_recording() takes a snapshot (Trace). Tasks that were not
/// started while recording carry no observer: the actors then pay one
/// predictable branch per observation site and nothing else.
///
/// Note [Recording]
/// Each actor appends to its own EventBuffer (opened on its first event for
/// that recording, and found again through ObservedActor::cache), so
/// recording takes no lock and no actor writes to another's buffer. A
/// WakeUp is not counted in the task's outstanding work: its coordinator
/// may see the count reach zero and return before the WakeUp arrives, and a
/// WakeUp that arrives after its task left the coordinator's frames is not
/// recorded as received.
///
/// Note [Stream tracks]
/// On an asynchronous device a node's span is only the launch of its
/// kernels: they run later, on the stream's thread (sim) or the GPU. So
/// while an observed node runs, its actor installs a LaunchObserver
/// (device/launch_observer.h) on its thread, and the backend reports to it
/// each kernel, copy, wait and event record the node enqueues. The actor
/// appends a `launch` event to its own buffer; the backend wraps the item
/// so that, when the stream has run it, the stream's thread appends a
/// `device_run` event (start, end, the item's point on the stream) to a
/// buffer of its own, named after the stream: again one writer per buffer
/// and no lock. The two pair by message_id, as a send and its receive do,
/// and the timeline draws them as a span on the stream's track with a flow
/// arrow from the node that launched it. A record has no run of its own:
/// the event completes when the item at its point has run, so the timeline
/// derives its time. A wait that the backend finds already satisfied
/// enqueues nothing and is not reported. Work enqueued outside an observed
/// node (the forward pass, an unrecorded task) is not seen, nor is a
/// synchronous sim's (its kernels run inside the node's span).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "actorgrad/actors/observer.h"
#include "actorgrad/actors/trace/event.h"
#include "actorgrad/actors/trace/event_buffer.h"

namespace actorgrad::trace {

/// One recording. Thread-safe and lock-free: buffers are registered
/// through an atomic push list, message ids come from an atomic counter,
/// and snapshot() may run while actors keep appending.
class Recorder final : public EngineObserver, public std::enable_shared_from_this<Recorder> {
public:
  Recorder();
  /// Frees the buffers. The actors' references (TaskContext) keep a
  /// Recorder alive while they may still write to it.
  ~Recorder() override;
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  /// A new buffer for the actor named `actor`, owned by the Recorder and
  /// valid for its lifetime. An actor opens one per Recorder and appends to
  /// it alone.
  EventBuffer& open_buffer(std::string actor);

  /// A fresh id that pairs a message's send with its receive (never 0).
  std::uint64_t next_message_id() { return next_message_id_.fetch_add(1, std::memory_order_relaxed); }

  /// Nanoseconds since this recording started, on the one monotonic clock
  /// every actor uses.
  std::int64_t now() const { return since_start(std::chrono::steady_clock::now()); }

  /// Everything published so far: one Track per buffer, in the order the
  /// buffers were opened. May run while actors keep appending.
  Trace snapshot() const;

  /// Waits until the device work launched while recording has run and been
  /// recorded, at most `limit` (a stuck kernel must not hang the caller;
  /// work that had not run by then is left out of the snapshot).
  void wait_for_device_work(std::chrono::milliseconds limit) const;

  // -- EngineObserver: one Event each ------------------------------------------
  void node_ready(const ObservedActor& a, const GraphTaskBase& t, const NodeInfo& n) override;
  void node_fed(const ObservedActor& a, const GraphTaskBase& t, const NodeInfo& n,
                std::uint32_t input_nr) override;
  void node_started(const ObservedActor& a, const GraphTaskBase& t, const NodeInfo& n) override;
  void node_finished(const ObservedActor& a, const GraphTaskBase& t, const NodeInfo& n) override;
  std::uint64_t message_sent(const ObservedActor& a, const GraphTaskBase& t, MessageKind kind,
                             const NodeInfo& n, std::uint32_t input_nr) override;
  void message_received(const ObservedActor& a, const GraphTaskBase& t, MessageKind kind,
                        const NodeInfo& n, std::uint64_t id, std::uint32_t input_nr) override;
  /// Also a `launch` event; the returned call appends the `device_run`
  /// (Note [Stream tracks]). Needs the Recorder owned by a shared_ptr.
  DeviceRun work_launched(const ObservedActor& a, const GraphTaskBase& t, const NodeInfo& n,
                          const DeviceLaunch& work) override;

private:
  /// An event of `kind` about `n` (empty name: none) of `t` on `a`, stamped now.
  Event event_of(const ObservedActor& a, EventKind kind, const GraphTaskBase& t,
                 const NodeInfo& n) const;
  /// Appends an event about `n` (empty name: none) of `t` to `a`'s buffer.
  void record(const ObservedActor& a, EventKind kind, const GraphTaskBase& t, const NodeInfo& n,
              MessageKind message = MessageKind::none, std::uint64_t message_id = 0,
              std::uint32_t input_nr = 0);
  /// `a`'s buffer in this recording, opened on first use.
  EventBuffer& buffer_of(const ObservedActor& a);
  /// The calling thread's buffer for `s` in this recording, opened on first use.
  EventBuffer& stream_buffer(Stream s);
  /// Nanoseconds since this recording started of `t`.
  std::int64_t since_start(std::chrono::steady_clock::time_point t) const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t - epoch_).count();
  }

  /// Tells this recording apart from earlier ones in ObservedActor::cache
  /// (an address could be reused).
  const std::uint64_t serial_;
  const std::chrono::steady_clock::time_point epoch_;
  std::atomic<std::uint64_t> next_message_id_{1};
  /// Launched device work whose run is not yet recorded: incremented by the
  /// launching actor, decremented by the stream's thread after it appended
  /// the run (release); read by wait_for_device_work (acquire).
  std::atomic<std::int64_t> runs_pending_{0};
  /// Most recently opened first.
  std::atomic<EventBuffer*> buffers_{nullptr};
};

} // namespace actorgrad::trace
