#pragma once
/// @file reentrant_pool.h
/// The actors that serve reentrant calls past max_recursion_depth and
/// asynchronous calls. Internal.

#include <memory>

#include "actorgrad/actors/detail/engine_actor.h"
#include "actorgrad/actors/detail/engine_core.h"

namespace actorgrad::detail {

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

private:
  std::shared_ptr<EngineCore> core_;
  const ObservedActor::Role role_;
};

} // namespace actorgrad::detail
