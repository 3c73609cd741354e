#pragma once
/// @file caller_mailbox.h
/// The mailbox a caller thread's Runner uses, kept between calls. Internal.

#include <memory>
#include <vector>

#include <caf/actor_addr.hpp>
#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include "actorgrad/actors/detail/task_context.h"

namespace actorgrad::detail {

/// A hidden CAF blocking actor that coordinates a caller's calls once they
/// cross devices, and the workers it monitors (Note [Monitors per actor]).
/// Parked in the EngineCore between calls (Note [Parked caller mailbox]).
struct CallerMailbox {
  explicit CallerMailbox(caf::actor_system& sys) : actor(sys, true) {}

  caf::scoped_actor actor;
  /// The workers `actor` monitors, while it is parked.
  std::vector<caf::actor_addr> monitored;
  /// The last context `actor` coordinated a task with, while it is parked
  /// (Note [Reused task contexts]). Declared after `actor`, so destroyed
  /// first: it holds a handle to `actor`.
  std::shared_ptr<TaskContext> last_context;
};

} // namespace actorgrad::detail
