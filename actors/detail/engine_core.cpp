#include "actors/detail/engine_core.h"

#include <caf/send.hpp>

#include "actors/detail/device_worker.h"
#include "actors/messages.h"
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

namespace {

bool is_dead(const caf::actor& a) {
  return caf::actor_cast<caf::abstract_actor*>(a)->getf(caf::abstract_actor::is_terminated_flag);
}

} // namespace

caf::actor EngineCore::worker(Device d) {
  WorkerSlot* s = slot(d);
  if (!s)
    throw EngineError("a node runs on " + d.str() + ", but this engine serves only " +
                      served_devices() + " (add it to EngineConfig.devices)");
  auto current = s->handle.load(std::memory_order_acquire);
  // A worker that died is replaced by its supervision functor, but that runs
  // in the dying actor's cleanup, possibly after the down messages that end
  // the calls it served: a call starting right then replaces it itself.
  if (is_dead(*current))
    return replace_worker(*s, std::move(current));
  return *current;
}

caf::actor EngineCore::replace_worker(WorkerSlot& s, std::shared_ptr<const caf::actor> expected) {
  auto fresh = std::make_shared<const caf::actor>(
    system.spawn<DeviceWorker>(shared_from_this(), s.device));
  // Supervision: a worker that dies while the engine runs is replaced, so
  // the engine stays usable (the GraphTasks it was serving fail: their
  // coordinators monitor it).
  std::weak_ptr<EngineCore> weak = shared_from_this();
  WorkerSlot* slot_ptr = &s;
  (*fresh)->attach_functor([weak, slot_ptr, addr = fresh->address()](const caf::error&) {
    auto core = weak.lock();
    if (!core || core->shutting_down.load())
      return;
    auto current = slot_ptr->handle.load(std::memory_order_acquire);
    if (current && current->address() == addr)
      core->replace_worker(*slot_ptr, std::move(current));
  });
  // Whoever swaps the slot first wins; a loser stops its spare worker.
  if (s.handle.compare_exchange_strong(expected, fresh, std::memory_order_acq_rel))
    return *fresh;
  caf::anon_send<caf::message_priority::high>(*fresh, msg::Shutdown{});
  return *expected;
}

std::string EngineCore::served_devices() const {
  std::string out = "cpu";
  for (std::size_t i = 0; i < num_workers; ++i)
    out += ", " + workers[i].device.str();
  return out;
}

} // namespace actorgrad::detail
