#pragma once
/// @file coordinator_pool.h
/// The actors that coordinate asynchronous calls, and the pool that keeps
/// them. Internal.

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <unordered_map>

#include "actorgrad/actors/detail/actor_thread.h"
#include "actorgrad/actors/detail/engine_actor.h"
#include "actorgrad/actors/detail/engine_core.h"
#include "actorgrad/actors/messages.h"

namespace actorgrad::detail {

class Runner;

/// Receives msg::AsyncCall (Note [Pooled async coordinators] in
/// async_call.h) and forwards it to an idle AsyncCoordinator, starting one
/// when none is idle, up to EngineConfig::max_async_coordinators; beyond
/// that the call waits here for the next coordinator that reports Idle.
/// Ends the threads of coordinators idle for longer than
/// EngineConfig::async_coordinator_idle_time, down to
/// EngineConfig::min_async_coordinators, and all of them (joined) on
/// msg::Shutdown (Note [Coordinator threads come and go] in
/// coordinator_pool.cpp).
class CoordinatorPool final : public EngineActor {
public:
  CoordinatorPool(caf::actor_config& cfg, std::shared_ptr<EngineCore> core);
  void act() override;
  const char* name() const override { return "actorgrad.coordinator_pool"; }

private:
  using Clock = std::chrono::steady_clock;
  struct IdleCoordinator {
    caf::actor coordinator;
    Clock::time_point since;
  };

  /// Forwards the AsyncCall in `call` to an idle coordinator, a new one, or
  /// keeps it waiting.
  void take_call(caf::mailbox_element_ptr call);
  /// `coordinator` has nothing to do: gives it the oldest waiting call, or
  /// keeps it idle.
  void became_idle(caf::actor coordinator);
  /// Starts a coordinator; invalid when its thread could not be started.
  caf::actor start_coordinator();
  /// Ends the coordinators idle for longer than the idle time, as long as
  /// more than the minimum remain.
  void retire_idle(Clock::time_point now);
  /// Tells `leaving` to stop and joins their threads.
  void stop(const std::vector<caf::actor>& leaving);
  /// Fails every waiting call, then stops every coordinator (msg::Shutdown).
  void stop_all();
  /// Whether some coordinator could be retired later (the pool then wakes
  /// up periodically).
  bool can_shrink() const { return threads_.size() > core_->config.min_async_coordinators; }
  void publish_count();

  std::shared_ptr<EngineCore> core_;
  /// Every coordinator's thread, by its actor's id.
  std::unordered_map<caf::actor_id, ActorThread> threads_;
  /// The idle coordinators this pool holds (not the parked one), the
  /// longest idle first.
  std::deque<IdleCoordinator> idle_;
  /// Calls waiting for a coordinator, the oldest first.
  std::deque<caf::mailbox_element_ptr> waiting_;
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
