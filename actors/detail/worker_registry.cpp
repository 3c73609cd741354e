#include "actorgrad/actors/detail/worker_registry.h"

#include <caf/abstract_actor.hpp>
#include <caf/actor_cast.hpp>

#include "actorgrad/actors/detail/post.h"
#include "actorgrad/libengine/engine/errors.h"

namespace actorgrad::detail {

WorkerRegistry::WorkerRegistry(const std::vector<Device>& devices)
  : slots_(std::make_unique<WorkerSlot[]>(devices.size())) {
  for (Device d : devices)
    slots_[size_++].device = d;
}

void WorkerRegistry::start_all(Start start, std::weak_ptr<WorkerRegistry> self) {
  start_ = std::move(start);
  self_ = std::move(self);
  for (std::size_t i = 0; i < size_; ++i)
    replace(slots_[i], nullptr);
}

WorkerSlot* WorkerRegistry::slot(Device d) const {
  for (std::size_t i = 0; i < size_; ++i)
    if (slots_[i].device == d)
      return &slots_[i];
  return nullptr;
}

bool is_dead(const caf::actor& a) {
  return caf::actor_cast<caf::abstract_actor*>(a)->getf(caf::abstract_actor::is_terminated_flag);
}

caf::actor WorkerRegistry::worker(Device d) {
  WorkerSlot* s = slot(d);
  if (!s)
    throw EngineError("a node runs on " + d.str() + ", but this engine serves only " +
                      served_devices() + " (add it to EngineConfig.devices)");
  auto current = s->handle.load(std::memory_order_acquire);
  // A worker that died is replaced by its supervision functor, but that runs
  // in the dying actor's cleanup, possibly after the down messages that end
  // the calls it served: a call starting right then replaces it itself.
  if (is_dead(*current)) {
    if (shutting_down()) // Note [Workers replaced during shutdown]
      throw EngineError("a node runs on " + d.str() +
                        ", whose worker has stopped: the engine is being destroyed");
    return replace(*s, std::move(current));
  }
  return *current;
}

caf::actor WorkerRegistry::replace(WorkerSlot& s, std::shared_ptr<const caf::actor> expected) {
  auto fresh = std::make_shared<const caf::actor>(start_(s.device));
  // Supervision: a worker that dies while the engine runs is replaced.
  WorkerSlot* slot_ptr = &s;
  (*fresh)->attach_functor([weak = self_, slot_ptr, addr = fresh->address()](const caf::error&) {
    auto registry = weak.lock();
    if (!registry || registry->shutting_down())
      return;
    auto current = slot_ptr->handle.load(std::memory_order_acquire);
    if (current && current->address() == addr)
      registry->replace(*slot_ptr, std::move(current));
  });
  // Note [Workers replaced during shutdown]
  // ~Engine sets shutting_down, then stops the worker each slot holds. A
  // replacement that began before the flag was set may swap its worker in
  // after ~Engine read that slot: no Shutdown would reach it, and the actor
  // system's teardown would wait for it forever. So after its swap a
  // replacement reads the flag and stops its own worker when it is set.
  // Both sides' store-then-load are sequentially consistent, so at least
  // one of them sees the other's store. worker() refuses to replace a dead
  // worker once the flag is set, so no call starts one then.
  // Whoever swaps the slot first wins; a loser stops its spare worker.
  if (s.handle.compare_exchange_strong(expected, fresh, std::memory_order_seq_cst)) {
    if (shutting_down())
      post<caf::message_priority::high>(*fresh, msg::Shutdown{});
    return *fresh;
  }
  post<caf::message_priority::high>(*fresh, msg::Shutdown{});
  return *expected;
}

std::string WorkerRegistry::served_devices() const {
  std::string out = "cpu";
  for (std::size_t i = 0; i < size_; ++i)
    out += ", " + slots_[i].device.str();
  return out;
}

std::vector<caf::actor> WorkerRegistry::current() const {
  std::vector<caf::actor> out;
  out.reserve(size_);
  for (std::size_t i = 0; i < size_; ++i)
    out.push_back(*slots_[i].handle.load());
  return out;
}

void WorkerRegistry::clear() {
  for (std::size_t i = 0; i < size_; ++i)
    slots_[i].handle.store(nullptr);
}

} // namespace actorgrad::detail
