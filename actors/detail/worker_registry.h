#pragma once
/// @file worker_registry.h
/// The device workers of one engine, by device, replaced when they die. Internal.

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor.hpp>

#include "actorgrad/device/device.h"

namespace actorgrad::detail {

/// The DeviceWorker of one device. The handle is replaced when a worker
/// dies and is respawned, so it is read atomically; every GraphTask takes
/// a snapshot of the handles it needs when it starts (TaskContext).
struct WorkerSlot {
  Device device;
  /// Written by WorkerRegistry::replace (any thread that finds the worker
  /// dead, or the dying worker's supervision functor) and by ~Engine; read
  /// by every call that starts. A compare-exchange decides which
  /// replacement wins.
  std::atomic<std::shared_ptr<const caf::actor>> handle;
};

/// One WorkerSlot per configured device (fixed after construction), and the
/// supervision that replaces a worker that dies while the engine runs, so
/// the engine stays usable (the GraphTasks it was serving fail: their
/// coordinators monitor it).
class WorkerRegistry {
public:
  /// Makes and starts the worker of a device (EngineCore: a DeviceWorker on
  /// a thread that ~Engine joins).
  using Start = std::function<caf::actor(Device)>;

  explicit WorkerRegistry(const std::vector<Device>& devices);

  /// Starts every device's worker. `self` is this registry, owned with
  /// whatever owns it: a dying worker's supervision reaches the registry
  /// through it only while it exists.
  void start_all(Start start, std::weak_ptr<WorkerRegistry> self);

  /// The slot of `d`, or null when the engine does not serve it.
  WorkerSlot* slot(Device d) const;
  /// Current worker handle of `d`; throws EngineError listing the served
  /// devices. Replaces a dead worker first (see replace).
  caf::actor worker(Device d);
  /// Spawns a worker for `slot` and installs it if the slot still holds
  /// `expected` (null at start, else the dead worker); returns the slot's
  /// worker. The new worker is replaced in turn if it ever dies.
  caf::actor replace(WorkerSlot& slot, std::shared_ptr<const caf::actor> expected);
  /// `cpu, sim:0, sim:1`.
  std::string served_devices() const;

  /// From now on a worker that stops is not replaced (~Engine; Note
  /// [Workers replaced during shutdown] in worker_registry.cpp).
  void begin_shutdown() { shutting_down_.store(true); }
  /// The current worker of every slot (~Engine stops each).
  std::vector<caf::actor> current() const;
  /// Drops every handle (~Engine, while the actor system still exists).
  void clear();

private:
  bool shutting_down() const { return shutting_down_.load(); }

  std::unique_ptr<WorkerSlot[]> slots_;
  std::size_t size_ = 0;
  Start start_;
  std::weak_ptr<WorkerRegistry> self_;
  /// Set by ~Engine (its thread, begin_shutdown); read by worker() and
  /// replace (any thread), sequentially consistent (Note [Workers replaced
  /// during shutdown]).
  std::atomic<bool> shutting_down_{false};
};

/// Whether `worker` terminated. Only a terminated worker is ever replaced
/// (WorkerRegistry::worker, replace), so a live handle is its slot's
/// current one.
bool is_dead(const caf::actor& worker);

} // namespace actorgrad::detail
