#pragma once
/// @file engine_core.h
/// State shared by an Engine and the actors it spawned. Internal.

#include <atomic>
#include <memory>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include "actorgrad/actors/detail/actor_thread.h"
#include "actorgrad/actors/detail/caller_mailbox.h"
#include "actorgrad/actors/detail/engine_counters.h"
#include "actorgrad/actors/detail/engine_observers.h"
#include "actorgrad/actors/detail/parking_slot.h"
#include "actorgrad/actors/detail/worker_registry.h"
#include "actorgrad/actors/engine_config.h"

namespace actorgrad::detail {

/// What the actors of one Engine share: the handles of its actors (the
/// device workers in their registry), the two parking slots, its observers
/// and its counters. Outlives every actor it spawned (actors hold it by
/// shared_ptr).
struct EngineCore : std::enable_shared_from_this<EngineCore> {
  /// Takes a checked `cfg` (check_config).
  EngineCore(caf::actor_system& sys, EngineConfig cfg);

  caf::actor_system& system;
  const EngineConfig config;
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
  /// One DeviceWorker per configured device (EngineConfig::devices).
  WorkerRegistry workers;
  /// Starts every device's worker (Engine, once).
  void start_workers();
  /// Current worker handle of `d` (WorkerRegistry::worker).
  caf::actor worker(Device d) { return workers.worker(d); }
  /// The CPU workers (EngineConfig::cpu_workers - 1 of them), started with
  /// the engine and fixed afterwards: the lanes a spread call shares its
  /// CPU nodes with besides its coordinator (Note [Parallel CPU nodes] in
  /// cpu_lanes.h).
  std::vector<caf::actor> cpu_workers;
  /// The CoordinatorPool (keeps the async coordinators).
  caf::actor pool;
  /// The request actor (Engine::request_actor; actors/detail/request_server.h).
  caf::actor requests;
  /// An async coordinator parked for the next asynchronous call (Note [Idle
  /// coordinator slot] in async_call.h): parked by a coordinator that
  /// finished a call, taken by a call that starts and by the pool once
  /// every coordinator stopped.
  ParkingSlot<caf::actor> idle_coordinator;
  /// Whether calls wait in the pool for a coordinator (Note [Calls that
  /// wait for a coordinator] in coordinator_pool.cpp). Written by the pool;
  /// read by a coordinator that just parked itself.
  std::atomic<bool> calls_waiting{false};
  /// A caller's mailbox kept for the next call that needs one (Note
  /// [Parked caller mailbox] in caller_mailbox_lease.cpp): parked by a
  /// caller's Runner whose calls ended cleanly, taken by the next caller's
  /// Runner that needs a mailbox, emptied by ~Engine while the actor system
  /// still exists.
  ParkingSlot<std::unique_ptr<CallerMailbox>> idle_caller_mailbox;
  /// The observers; GraphTasks keep what observers.current() was when they
  /// started.
  EngineObservers observers;
  /// What Engine::stats reports.
  EngineCounters counters;
};

} // namespace actorgrad::detail
