#pragma once
/// @file reentrant_pool.h
/// The actors that serve reentrant calls past max_recursion_depth. Internal.

#include <memory>

#include <caf/blocking_actor.hpp>

#include "actorgrad/actors/detail/engine_core.h"

namespace actorgrad::detail {

/// Receives msg::Handoff from an actor at its depth limit and forwards it
/// to an idle PoolWorker, spawning one when none is idle (the pool grows
/// on demand and reuses workers). Stops its workers on msg::Shutdown.
class ReentrantPool final : public caf::blocking_actor {
public:
  ReentrantPool(caf::actor_config& cfg, std::shared_ptr<EngineCore> core);
  void act() override;
  const char* name() const override { return "actorgrad.reentrant_pool"; }

private:
  std::shared_ptr<EngineCore> core_;
};

/// Serves one handed-off queue at a time (serve_handoff in handoff.h), on
/// its own thread, so the stack of the thread that reached the depth limit
/// grows no further.
class PoolWorker final : public caf::blocking_actor {
public:
  PoolWorker(caf::actor_config& cfg, std::shared_ptr<EngineCore> core);
  void act() override;
  const char* name() const override { return "actorgrad.pool_worker"; }

private:
  std::shared_ptr<EngineCore> core_;
};

} // namespace actorgrad::detail
