#pragma once
/// @file caller_mailbox.h
/// The mailbox a caller thread's Runner uses, kept between calls. Internal.

#include <caf/actor_control_block.hpp>
#include <caf/actor_system.hpp>
#include <caf/scoped_execution_unit.hpp>

#include "actorgrad/actors/detail/engine_actor.h"
#include "actorgrad/actors/detail/task_contexts.h"

namespace actorgrad::detail {

/// A hidden actor without a thread of its own, which coordinates a caller's
/// calls once they cross devices, and the workers it monitors (Note
/// [Monitors per actor]). Made as caf::scoped_actor makes its actor, but an
/// EngineActor, so a caller waiting for its workers sleeps on a doorbell
/// as they do (Note [Waking an actor without a lock]). Parked in the
/// EngineCore between calls (Note [Parked caller mailbox] in
/// caller_mailbox_lease.cpp).
class CallerMailbox {
public:
  /// Unlike caf::scoped_actor's constructor, sets no thread-local logger
  /// reference (Note [CAF's thread-local logger]): any thread may make one.
  explicit CallerMailbox(caf::actor_system& sys);
  /// Terminates the actor, as ~scoped_actor does.
  ~CallerMailbox();
  CallerMailbox(const CallerMailbox&) = delete;
  CallerMailbox& operator=(const CallerMailbox&) = delete;

  EngineActor* actor() const;

private:
  caf::scoped_execution_unit context_;
  caf::strong_actor_ptr self_;

public:
  /// The contexts the actor made and the workers it monitors, while it is
  /// parked (Note [Reused task contexts]). Declared after `self_`, so
  /// destroyed first: a kept context holds a handle to the actor.
  TaskContexts contexts;
};

} // namespace actorgrad::detail
