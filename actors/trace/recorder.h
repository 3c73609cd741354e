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
/// that recording, and found again through ObservedActor::cache; a caller,
/// whose Runner lives for one call, finds its thread's buffer again through
/// a thread-local), so recording takes no lock and no actor writes to
/// another's buffer. A
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
///
/// Note [Keeping the last passes]
/// With RecordingOptions::keep_passes N, memory must stay flat however many
/// passes a program runs, without a lock on any actor. Events are kept or
/// dropped by GraphTask id: Retention::drop_below W says that every event
/// of a task below W is dropped (a reentrant call has a larger id than its
/// caller, so it goes with it or outlives it, never the other way round).
/// Whoever finishes a top-level pass writes its id into a ring of the last
/// N finished, then raises W (never lowers it) to the smallest id in that
/// ring and of the top-level passes still running (each registers its id
/// in one of kRunningSlots slots while it runs; when all are taken, W
/// stays where it is until one is free). Each producer, when it opens a
/// chunk, unlinks the chunks at its head whose events are all below W
/// (Note [Freeing chunks under readers] in event_buffer.cpp), and a
/// snapshot leaves out every event below the W it reads after its walk,
/// which is at least any W a producer used, so a pass is in a snapshot
/// whole or not at all. So what is kept is every pass from the oldest of
/// the last N to finish, or the oldest still running, on: with one call at
/// a time exactly the last N passes, plus at most a chunk per buffer; with
/// calls on several threads a few more, and a pass that runs long keeps
/// every pass started after it until it ends (tests/actors/
/// test_recording_window.cpp). A pass whose id was taken but which had not
/// yet registered when N passes created after it had finished is dropped:
/// that needs N other threads' calls to start and finish within its first
/// microseconds.

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "actorgrad/actors/observer.h"
#include "actorgrad/actors/trace/event.h"
#include "actorgrad/actors/trace/event_buffer.h"
#include "actorgrad/actors/trace/recording_options.h"

namespace actorgrad::trace {

/// One recording. Thread-safe and lock-free: buffers are registered
/// through an atomic push list, message ids come from an atomic counter,
/// and snapshot() may run while actors keep appending.
class Recorder final : public EngineObserver, public std::enable_shared_from_this<Recorder> {
public:
  explicit Recorder(RecordingOptions options = {});
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
  std::uint64_t next_message_id() {
    return next_message_id_.fetch_add(1, std::memory_order_relaxed);
  }

  /// Nanoseconds since this recording started, on the one monotonic clock
  /// every actor uses.
  std::int64_t now() const { return since_start(std::chrono::steady_clock::now()); }

  /// Everything published so far: one Track per buffer, in the order the
  /// buffers were opened, less the passes dropped (Note [Keeping the last
  /// passes]). May run while actors keep appending.
  Trace snapshot() const;

  /// Events held in memory now (dropped passes' chunks are not), and the
  /// bytes of their chunks. Any thread.
  std::size_t events_held() const;
  std::size_t bytes_held() const;
  /// Top-level passes finished while recording.
  std::uint64_t passes_finished() const { return finished_count_.load(std::memory_order_relaxed); }

  /// The id of the last top-level pass this thread started while some
  /// recording watched it (0: none): a caller that runs a pass through an
  /// Executor learns its id from it (actors/remote/detail/local_step.cpp).
  static std::uint64_t last_pass_started_here();

  /// Waits until the device work launched while recording has run and been
  /// recorded, at most `limit` (a stuck kernel must not hang the caller;
  /// work that had not run by then is left out of the snapshot).
  void wait_for_device_work(std::chrono::milliseconds limit) const;

  // -- EngineObserver: one Event each ------------------------------------------
  /// task_started and task_finished record nothing; they keep the pass
  /// window of keep_passes (Note [Keeping the last passes]).
  void task_started(const ObservedActor& a, const GraphTaskBase& t) override;
  void task_finished(const ObservedActor& a, const GraphTaskBase& t) override;
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
  /// A send or receive event with MessageKind remote_grad or remote_ack.
  void remote_message(const ObservedActor& a, const RemoteMessage& m) override;

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

  /// Raises Retention::drop_below after a top-level pass finished.
  void advance_window();

  static constexpr std::size_t kRunningSlots = 64;

  /// Tells this recording apart from earlier ones in ObservedActor::cache
  /// (an address could be reused).
  const std::uint64_t serial_;
  const std::chrono::steady_clock::time_point epoch_;
  const std::int64_t epoch_unix_ns_;
  const RecordingOptions options_;
  /// Mutable: a snapshot (const) counts itself among the readers.
  mutable Retention retention_;
  /// Ids of the top-level passes running now (0: a free slot): claimed
  /// (compare-exchange) by the thread that starts a pass, cleared by the
  /// one that finishes it, read by advance_window.
  std::array<std::atomic<std::uint64_t>, kRunningSlots> running_{};
  /// Top-level passes running without a slot: raised and lowered by their
  /// threads, read by advance_window (which does nothing while it is not 0).
  std::atomic<int> unslotted_{0};
  /// Ring of the ids of the last keep_passes finished passes: written by
  /// the thread that finishes a pass, read by advance_window.
  std::unique_ptr<std::atomic<std::uint64_t>[]> finished_;
  /// Top-level passes finished: raised by the finishing threads (its value
  /// picks the ring slot), read by passes_finished and on_large.
  std::atomic<std::uint64_t> finished_count_{0};
  std::atomic<std::uint64_t> next_message_id_{1};
  /// Launched device work whose run is not yet recorded: incremented by the
  /// launching actor, decremented by the stream's thread after it appended
  /// the run (release); read by wait_for_device_work (acquire).
  std::atomic<std::int64_t> runs_pending_{0};
  /// Most recently opened first.
  std::atomic<EventBuffer*> buffers_{nullptr};
};

} // namespace actorgrad::trace
