#pragma once
/// @file foreign_thread.h
/// Creating CAF actors on threads CAF does not own. Internal.

#include <caf/actor_system.hpp>
#include <caf/logger.hpp>

namespace actorgrad::detail {

// Note [CAF's thread-local logger]
// CAF 0.17.6 sets a thread-local reference to the actor system's logger on
// any thread that spawns an actor or creates a scoped_actor
// (CAF_SET_LOGGER_SYS in actor_system::spawn_impl, scoped_actor's
// constructor and the actor_system's own constructor), and ~actor_system waits until every such
// reference is gone. A reference left on an application thread (a thread pool, another engine's
// device worker making a nested call) would make ~Engine wait for that thread to exit: a hang. So
// every spawn or scoped_actor the engine makes on a thread it does not own is wrapped in
// ForeignThreadSpawn, which puts the thread's logger back as it was: none, or (a thread of another
// actor system, whose logger CAF gives no way to reinstate) none as well. CAF logs nothing through
// it unless built with logging, which Debian's libcaf is not.

/// Restores the calling thread's CAF logger reference on scope exit.
class ForeignThreadSpawn {
public:
  ForeignThreadSpawn() : before_(caf::logger::current_logger()) {}
  ~ForeignThreadSpawn() {
    if (caf::logger::current_logger() != before_)
      caf::logger::set_current_actor_system(nullptr);
  }
  /// Drops the calling thread's reference to `sys`'s logger, if it has one.
  static void forget(caf::actor_system& sys) {
    if (caf::logger::current_logger() == &sys.logger())
      caf::logger::set_current_actor_system(nullptr);
  }
  ForeignThreadSpawn(const ForeignThreadSpawn&) = delete;
  ForeignThreadSpawn& operator=(const ForeignThreadSpawn&) = delete;

private:
  caf::logger* before_;
};

} // namespace actorgrad::detail
