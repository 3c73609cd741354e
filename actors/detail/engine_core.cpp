#include "actors/detail/engine_core.h"

#include "actors/detail/device_worker.h"
#include "libengine/engine/errors.h"

namespace actorgrad::detail {

EngineCore::EngineCore(caf::actor_system& sys, EngineConfig cfg)
  : system(sys), config(std::move(cfg)) {
  workers = std::make_unique<WorkerSlot[]>(config.devices.size());
  for (Device d : config.devices) {
    if (d.is_cpu())
      throw std::invalid_argument("EngineConfig.devices lists cpu: the caller's thread runs CPU nodes");
    if (slot(d))
      throw std::invalid_argument("EngineConfig.devices lists " + d.str() + " twice");
    workers[num_workers++].device = d;
  }
}

WorkerSlot* EngineCore::slot(Device d) const {
  for (std::size_t i = 0; i < num_workers; ++i)
    if (workers[i].device == d)
      return &workers[i];
  return nullptr;
}

caf::actor EngineCore::worker(Device d) const {
  WorkerSlot* s = slot(d);
  if (!s)
    throw EngineError("a node runs on " + d.str() + ", but this engine serves only " +
                      served_devices() + " (add it to EngineConfig.devices)");
  return *s->handle.load(std::memory_order_acquire);
}

void EngineCore::spawn_worker(WorkerSlot& s) {
  caf::actor w = system.spawn<DeviceWorker>(shared_from_this(), s.device);
  // Supervision: a worker that dies while the engine runs is replaced, so
  // the engine stays usable (the GraphTasks it was serving fail: their
  // coordinators monitor it).
  std::weak_ptr<EngineCore> weak = shared_from_this();
  WorkerSlot* slot_ptr = &s;
  w->attach_functor([weak, slot_ptr](const caf::error&) {
    if (auto core = weak.lock(); core && !core->shutting_down.load())
      core->spawn_worker(*slot_ptr);
  });
  s.handle.store(std::make_shared<const caf::actor>(std::move(w)), std::memory_order_release);
}

std::string EngineCore::served_devices() const {
  std::string out = "cpu";
  for (std::size_t i = 0; i < num_workers; ++i)
    out += ", " + workers[i].device.str();
  return out;
}

} // namespace actorgrad::detail
