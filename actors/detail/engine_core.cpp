#include "actorgrad/actors/detail/engine_core.h"

#include <stdexcept>

#include "actorgrad/actors/detail/device_worker.h"
#include "actorgrad/actors/detail/observer_pair.h"
#include "actorgrad/actors/detail/post.h"
#include "actorgrad/device/availability.h"
#include "actorgrad/libengine/engine/errors.h"

namespace actorgrad::detail {

void EngineCore::validate(const EngineConfig& cfg) {
  if (cfg.scheduler_threads < 1)
    throw std::invalid_argument("EngineConfig.scheduler_threads is 0: the actor system needs at "
                                "least 1 scheduler thread");
  if (cfg.spin_before_block.count() < 0)
    throw std::invalid_argument("EngineConfig.spin_before_block is " +
                                std::to_string(cfg.spin_before_block.count()) +
                                " ns: it must be 0 (block at once) or more");
  if (cfg.cpu_worker_spin.count() < 0)
    throw std::invalid_argument("EngineConfig.cpu_worker_spin is " +
                                std::to_string(cfg.cpu_worker_spin.count()) +
                                " ns: it must be 0 (block at once) or more");
  if (cfg.max_async_coordinators < 1)
    throw std::invalid_argument("EngineConfig.max_async_coordinators is 0: asynchronous calls "
                                "need at least 1 coordinator");
  if (cfg.min_async_coordinators > cfg.max_async_coordinators)
    throw std::invalid_argument(
      "EngineConfig.min_async_coordinators is " + std::to_string(cfg.min_async_coordinators) +
      ", more than max_async_coordinators (" + std::to_string(cfg.max_async_coordinators) + ")");
  if (cfg.async_coordinator_idle_time.count() <= 0)
    throw std::invalid_argument("EngineConfig.async_coordinator_idle_time is " +
                                std::to_string(cfg.async_coordinator_idle_time.count()) +
                                " ms: it must be more than 0");
  if (cfg.cpu_workers < 1 || cfg.cpu_workers > 256)
    throw std::invalid_argument("EngineConfig.cpu_workers is " + std::to_string(cfg.cpu_workers) +
                                ": it must be 1 (the caller alone) to 256");
  if (cfg.cpu_spread_branch < 1)
    throw std::invalid_argument("EngineConfig.cpu_spread_branch is 0: it must be 1 or more");
  if (cfg.max_recursion_depth < 1)
    throw std::invalid_argument("EngineConfig.max_recursion_depth is " +
                                std::to_string(cfg.max_recursion_depth) +
                                ": it must be at least 1 (reentrant calls nested on one thread)");
  for (std::size_t i = 0; i < cfg.devices.size(); ++i) {
    const Device d = cfg.devices[i];
    if (d.is_cpu())
      throw std::invalid_argument(
        "EngineConfig.devices lists cpu: the caller's thread runs CPU nodes");
    for (std::size_t j = 0; j < i; ++j)
      if (cfg.devices[j] == d)
        throw std::invalid_argument("EngineConfig.devices lists " + d.str() + " twice");
    if (std::string why = device_unavailable(d); !why.empty())
      throw std::invalid_argument("EngineConfig.devices lists " + d.str() +
                                  ", which cannot be served: " + why);
  }
}

EngineCore::EngineCore(caf::actor_system& sys, EngineConfig cfg)
  : system(sys), config(std::move(cfg)) {
  workers = std::make_unique<WorkerSlot[]>(config.devices.size());
  for (Device d : config.devices)
    workers[num_workers++].device = d;
  installed_observer = config.observer;
  publish_observer();
}

void EngineCore::publish_observer() {
  std::shared_ptr<EngineObserver> o = installed_observer && recorder
                                        ? std::make_shared<ObserverPair>(installed_observer, recorder)
                                        : installed_observer ? installed_observer : recorder;
  observer.store(std::move(o), std::memory_order_release);
}

bool EngineCore::park_coordinator(const caf::actor& coordinator) {
  caf::actor_control_block* parked =
    caf::actor_cast<caf::strong_actor_ptr>(coordinator).release(); // the slot's reference
  caf::actor_control_block* empty = nullptr;
  // seq_cst: Note [Calls that wait for a coordinator] in coordinator_pool.cpp.
  if (idle_coordinator.compare_exchange_strong(empty, parked))
    return true;
  caf::intrusive_ptr_release(parked);
  return false;
}

bool EngineCore::unpark_coordinator(const caf::actor& coordinator) {
  caf::actor_control_block* parked = caf::actor_cast<caf::abstract_actor*>(coordinator)->ctrl();
  if (!idle_coordinator.compare_exchange_strong(parked, nullptr))
    return false;
  caf::intrusive_ptr_release(parked); // the slot's reference
  return true;
}

caf::actor EngineCore::take_coordinator() {
  caf::actor_control_block* parked = idle_coordinator.exchange(nullptr); // seq_cst, as above
  if (!parked)
    return {};
  return caf::actor_cast<caf::actor>(caf::strong_actor_ptr{parked, false});
}

bool EngineCore::park_caller_mailbox(std::unique_ptr<CallerMailbox>& mailbox) {
  CallerMailbox* empty = nullptr;
  if (!idle_caller_mailbox.compare_exchange_strong(empty, mailbox.get(), std::memory_order_acq_rel))
    return false;
  mailbox.release(); // the slot owns it now
  return true;
}

std::unique_ptr<CallerMailbox> EngineCore::take_caller_mailbox() {
  return std::unique_ptr<CallerMailbox>(
    idle_caller_mailbox.exchange(nullptr, std::memory_order_acq_rel));
}

void EngineCore::note_reentrant_frames(int frames) {
  int seen = max_reentrant_frames.load(std::memory_order_relaxed);
  while (frames > seen &&
         !max_reentrant_frames.compare_exchange_weak(seen, frames, std::memory_order_relaxed)) {
  }
}

WorkerSlot* EngineCore::slot(Device d) const {
  for (std::size_t i = 0; i < num_workers; ++i)
    if (workers[i].device == d)
      return &workers[i];
  return nullptr;
}

bool is_dead(const caf::actor& a) {
  return caf::actor_cast<caf::abstract_actor*>(a)->getf(caf::abstract_actor::is_terminated_flag);
}

caf::actor EngineCore::worker(Device d) {
  WorkerSlot* s = slot(d);
  if (!s)
    throw EngineError("a node runs on " + d.str() + ", but this engine serves only " +
                      served_devices() + " (add it to EngineConfig.devices)");
  auto current = s->handle.load(std::memory_order_acquire);
  // A worker that died is replaced by its supervision functor, but that runs
  // in the dying actor's cleanup, possibly after the down messages that end
  // the calls it served: a call starting right then replaces it itself.
  if (is_dead(*current)) {
    if (shutting_down.load()) // Note [Workers replaced during shutdown]
      throw EngineError("a node runs on " + d.str() +
                        ", whose worker has stopped: the engine is being destroyed");
    return replace_worker(*s, std::move(current));
  }
  return *current;
}

caf::actor EngineCore::replace_worker(WorkerSlot& s, std::shared_ptr<const caf::actor> expected) {
  auto fresh = std::make_shared<const caf::actor>(
    start<DeviceWorker>("actorgrad.dev", shared_from_this(), s.device));
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
    if (shutting_down.load())
      post<caf::message_priority::high>(*fresh, msg::Shutdown{});
    return *fresh;
  }
  post<caf::message_priority::high>(*fresh, msg::Shutdown{});
  return *expected;
}

std::string EngineCore::served_devices() const {
  std::string out = "cpu";
  for (std::size_t i = 0; i < num_workers; ++i)
    out += ", " + workers[i].device.str();
  return out;
}

} // namespace actorgrad::detail
