#pragma once
/// @file engine_core.h
/// State shared by an Engine and the actors it spawned. Internal.

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include "actors/engine_config.h"
#include "actors/trace/recorder.h"

namespace actorgrad::detail {

/// The DeviceWorker of one device. The handle is replaced when a worker
/// dies and is respawned, so it is read atomically; every GraphTask takes
/// a snapshot of the handles it needs when it starts (TaskContext).
struct WorkerSlot {
  Device device;
  std::atomic<std::shared_ptr<const caf::actor>> handle;
};

/// What the actors of one Engine share. Outlives every actor it spawned
/// (actors hold it by shared_ptr).
struct EngineCore : std::enable_shared_from_this<EngineCore> {
  EngineCore(caf::actor_system& sys, EngineConfig cfg);

  caf::actor_system& system;
  const EngineConfig config;
  /// One per configured device; fixed size after construction.
  std::unique_ptr<WorkerSlot[]> workers;
  std::size_t num_workers = 0;
  /// Set by ~Engine: a worker that stops now is not respawned.
  std::atomic<bool> shutting_down{false};
  /// The ReentrantPool (serves reentrant calls past max_recursion_depth).
  caf::actor pool;
  /// The recording GraphTasks started now join (Engine::start_recording);
  /// null when not recording.
  std::atomic<std::shared_ptr<trace::Recorder>> recording;

  // -- statistics (read by Engine::stats) ---------------------------------
  /// Most reentrant frames seen nested on one thread.
  std::atomic<int> max_reentrant_frames{0};
  /// Reentrant calls handed to the pool.
  std::atomic<std::int64_t> handoffs{0};
  /// Pool workers spawned so far.
  std::atomic<int> pool_workers{0};

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

} // namespace actorgrad::detail
