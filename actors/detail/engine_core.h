#pragma once
/// @file engine_core.h
/// State shared by an Engine and the actors it spawned. Internal.

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include "actorgrad/actors/detail/actor_thread.h"
#include "actorgrad/actors/detail/caller_mailbox.h"
#include "actorgrad/actors/engine_config.h"
#include "actorgrad/actors/observer.h"

namespace actorgrad::detail {

/// The DeviceWorker of one device. The handle is replaced when a worker
/// dies and is respawned, so it is read atomically; every GraphTask takes
/// a snapshot of the handles it needs when it starts (TaskContext).
struct WorkerSlot {
  Device device;
  /// Written by EngineCore::replace_worker (any thread that finds the
  /// worker dead, or the dying worker's supervision functor); read by every
  /// call that starts. A compare-exchange decides which replacement wins.
  std::atomic<std::shared_ptr<const caf::actor>> handle;
};

/// What the actors of one Engine share. Outlives every actor it spawned
/// (actors hold it by shared_ptr).
struct EngineCore : std::enable_shared_from_this<EngineCore> {
  /// Throws std::invalid_argument naming the first bad setting of `cfg`.
  static void validate(const EngineConfig& cfg);
  /// Takes a validated `cfg`.
  EngineCore(caf::actor_system& sys, EngineConfig cfg);

  caf::actor_system& system;
  const EngineConfig config;
  /// One per configured device; fixed size after construction.
  std::unique_ptr<WorkerSlot[]> workers;
  std::size_t num_workers = 0;
  /// Set by ~Engine (its thread); read by worker() and replace_worker: a
  /// worker that stops now is not respawned (Note [Workers replaced during
  /// shutdown] in engine_core.cpp).
  std::atomic<bool> shutting_down{false};
  /// The threads ~Engine joins: the device workers' (replacements
  /// included), the pool's and the request actor's (Note [Engine threads
  /// are joined] in actor_thread.h).
  ThreadList threads;
  /// Starts an engine actor of type `A` (made from `args`) on a thread
  /// that ~Engine joins (`threads`).
  template <class A, class... Ts>
  caf::actor start(const char* thread_name, Ts&&... args) {
    ActorThread t = ActorThread::start<A>(system, thread_name, std::forward<Ts>(args)...);
    caf::actor a = t.actor();
    threads.add(std::move(t));
    return a;
  }
  /// The CPU workers (EngineConfig::cpu_workers - 1 of them), started with
  /// the engine and fixed afterwards: the lanes a spread call shares its
  /// CPU nodes with besides its coordinator (Note [Parallel CPU nodes] in
  /// cpu_lanes.h).
  std::vector<caf::actor> cpu_workers;
  /// The CoordinatorPool (keeps the async coordinators).
  caf::actor pool;
  /// The request actor (Engine::request_actor; actors/detail/request_server.h).
  caf::actor requests;
  /// An async coordinator parked for the next asynchronous call, holding
  /// one strong reference, or null (Note [Idle coordinator slot] in
  /// async_call.h). Set by a coordinator that finished a call
  /// (park_coordinator), taken by a call that starts (take_coordinator) and
  /// by the pool once every coordinator stopped.
  std::atomic<caf::actor_control_block*> idle_coordinator{nullptr};
  /// Parks `coordinator` in idle_coordinator if it is empty; false if not.
  bool park_coordinator(const caf::actor& coordinator);
  /// The parked coordinator (the slot is empty afterwards), or an invalid handle.
  caf::actor take_coordinator();
  /// Empties idle_coordinator if it holds `coordinator`; false if it does
  /// not (a call took it meanwhile).
  bool unpark_coordinator(const caf::actor& coordinator);
  /// Whether calls wait in the pool for a coordinator (Note [Calls that
  /// wait for a coordinator] in coordinator_pool.cpp). Written by the pool;
  /// read by a coordinator that just parked itself.
  std::atomic<bool> calls_waiting{false};
  /// A caller's mailbox kept for the next call that needs one, or null
  /// (Note [Parked caller mailbox] in runner.cpp). Set by a caller's Runner
  /// whose calls ended cleanly (park_caller_mailbox), taken by the next
  /// caller's Runner that needs a mailbox (take_caller_mailbox), emptied by
  /// ~Engine (drop_caller_mailbox) while the actor system still exists.
  std::atomic<CallerMailbox*> idle_caller_mailbox{nullptr};
  /// Parks `mailbox` (then null) if the slot is empty; false if it is not.
  bool park_caller_mailbox(std::unique_ptr<CallerMailbox>& mailbox);
  /// The parked mailbox (the slot is empty afterwards), or null.
  std::unique_ptr<CallerMailbox> take_caller_mailbox();
  /// Destroys the parked mailbox, if any.
  void drop_caller_mailbox() { take_caller_mailbox().reset(); }
  /// The observer GraphTasks started now keep: the installed observer
  /// (EngineConfig::observer, Engine::set_observer), the recorder of
  /// Engine::start_recording, both (ObserverPair), or null. Written by the
  /// Engine's observer calls (one thread at a time), read (acquire) by
  /// every call that starts.
  std::atomic<std::shared_ptr<EngineObserver>> observer;
  /// The parts of `observer`, kept by the Engine's observer calls only.
  std::shared_ptr<EngineObserver> installed_observer;
  std::shared_ptr<EngineObserver> recorder;
  /// Recomputes `observer` from its parts.
  void publish_observer();

  // -- statistics (read by Engine::stats; relaxed: counters only) -----------
  /// Most reentrant frames seen nested on one stack.
  std::atomic<int> max_reentrant_frames{0};
  /// Reentrant calls run on a fresh stack.
  std::atomic<std::int64_t> fresh_stacks{0};
  /// Async coordinators alive now, and the most alive at once (written by
  /// the pool).
  std::atomic<std::size_t> async_coordinators{0};
  std::atomic<std::size_t> peak_async_coordinators{0};
  /// Async calls that waited in the pool for a coordinator (written by the pool).
  std::atomic<std::int64_t> async_calls_waited{0};
  /// Async calls made inside a node that ran on the calling thread (Note
  /// [Async calls made inside a node] in async_call.h; written by any caller).
  std::atomic<std::int64_t> async_calls_run_inline{0};

  /// Ready CPU tasks one lane handed to another (share_ready_work; any lane).
  std::atomic<std::int64_t> cpu_tasks_shared{0};

  /// Raises max_reentrant_frames to `frames`.
  void note_reentrant_frames(int frames);
  /// The slot of `d`, or null when the engine does not serve it.
  WorkerSlot* slot(Device d) const;
  /// Current worker handle of `d`; throws EngineError listing the served devices.
  /// Replaces a dead worker first (see replace_worker).
  caf::actor worker(Device d);
  /// Spawns a worker for `slot` and installs it if the slot still holds
  /// `expected` (null at start, else the dead worker); returns the slot's
  /// worker. The new worker is replaced in turn if it ever dies.
  caf::actor replace_worker(WorkerSlot& slot, std::shared_ptr<const caf::actor> expected);
  /// `cpu, sim:0, sim:1`.
  std::string served_devices() const;
};

/// Whether `worker` terminated. Only a terminated worker is ever replaced
/// (EngineCore::worker, replace_worker), so a live handle is its slot's
/// current one.
bool is_dead(const caf::actor& worker);

} // namespace actorgrad::detail
