#pragma once
/// @file coordinator_pool.h
/// The actors that coordinate asynchronous calls, and the pool that keeps
/// them. Internal.

#include <atomic>
#include <memory>
#include <optional>

#include "actorgrad/actors/detail/engine_actor.h"
#include "actorgrad/actors/detail/engine_core.h"
#include "actorgrad/actors/messages.h"

namespace actorgrad::detail {

class Runner;

/// Receives msg::AsyncCall (Note [Pooled async coordinators] in
/// async_call.h) and forwards it to an idle AsyncCoordinator, spawning one
/// when none is idle (the pool grows on demand and reuses them). Stops
/// them all on msg::Shutdown.
class CoordinatorPool final : public EngineActor {
public:
  CoordinatorPool(caf::actor_config& cfg, std::shared_ptr<EngineCore> core);
  void act() override;
  const char* name() const override { return "actorgrad.coordinator_pool"; }

private:
  std::shared_ptr<EngineCore> core_;
};

/// An actor of the pool, on its own thread: runs one asynchronous call at
/// a time (run_call in async_call.h).
class AsyncCoordinator final : public EngineActor {
public:
  AsyncCoordinator(caf::actor_config& cfg, std::shared_ptr<EngineCore> core);
  void act() override;
  const char* name() const override { return "actorgrad.async_coordinator"; }

  /// Gives this coordinator `call` without a message. Called by the caller
  /// that took it from EngineCore::idle_coordinator (Note [A call handed
  /// to a parked coordinator] in async_call.h).
  void hand(msg::AsyncCall&& call);

private:
  /// Waits for a handed call or a message; runs the call if one was handed.
  bool run_handed_call(Runner& runner, const caf::actor& self);

  std::shared_ptr<EngineCore> core_;
  /// The handed call. Written by hand() while this actor is not running a
  /// call, moved out by this actor once call_handed_ is set.
  std::optional<msg::AsyncCall> handed_;
  /// Whether handed_ holds a call. Set by hand() after writing it, cleared
  /// by this actor after moving it out; read by this actor's wait.
  std::atomic<bool> call_handed_{false};
};

} // namespace actorgrad::detail
