#pragma once
/// @file reentrant_pool.h
/// The actors that serve reentrant calls past max_recursion_depth and
/// asynchronous calls. Internal.

#include <atomic>
#include <memory>
#include <optional>

#include "actorgrad/actors/detail/engine_actor.h"
#include "actorgrad/actors/detail/engine_core.h"
#include "actorgrad/actors/messages.h"

namespace actorgrad::detail {

class Runner;

/// Receives msg::Handoff from an actor at its depth limit and forwards it
/// to an idle pool worker, and msg::AsyncCall (Note [Pooled async
/// coordinators] in async_call.h) to an idle async coordinator, spawning a
/// PoolWorker of that role when none is idle (each kind grows on demand
/// and is reused). Stops them all on msg::Shutdown.
class ReentrantPool final : public EngineActor {
public:
  ReentrantPool(caf::actor_config& cfg, std::shared_ptr<EngineCore> core);
  void act() override;
  const char* name() const override { return "actorgrad.reentrant_pool"; }

private:
  std::shared_ptr<EngineCore> core_;
};

/// An actor of the pool, on its own thread. As a pool worker it serves one
/// handed-off queue at a time (serve_handoff in handoff.h), so the stack of
/// the thread that reached the depth limit grows no further; as an async
/// coordinator it runs one asynchronous call at a time (run_call in
/// async_call.h).
class PoolWorker final : public EngineActor {
public:
  /// `role`: ObservedActor::Role::pool_worker or async_coordinator.
  PoolWorker(caf::actor_config& cfg, std::shared_ptr<EngineCore> core, ObservedActor::Role role);
  void act() override;
  const char* name() const override { return "actorgrad.pool_worker"; }

  /// Gives this async coordinator `call` without a message. Called by the
  /// caller that took it from EngineCore::idle_coordinator (Note [A call
  /// handed to a parked coordinator] in async_call.h).
  void hand(msg::AsyncCall&& call);

private:
  /// Waits for a handed call or a message; runs the call if one was handed.
  bool run_handed_call(Runner& runner, const caf::actor& self);

  std::shared_ptr<EngineCore> core_;
  const ObservedActor::Role role_;
  /// The handed call. Written by hand() while this actor is not running a
  /// call, moved out by this actor once call_handed_ is set.
  std::optional<msg::AsyncCall> handed_;
  /// Whether handed_ holds a call. Set by hand() after writing it, cleared
  /// by this actor after moving it out; read by this actor's wait.
  std::atomic<bool> call_handed_{false};
};

} // namespace actorgrad::detail
