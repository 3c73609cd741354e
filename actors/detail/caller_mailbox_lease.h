#pragma once
/// @file caller_mailbox_lease.h
/// A caller Runner's hold on a caller mailbox, parked between calls. Internal.

#include <memory>

#include <caf/actor_system.hpp>

#include "actorgrad/actors/detail/caller_mailbox.h"
#include "actorgrad/actors/detail/engine_actor.h"
#include "actorgrad/actors/detail/parking_slot.h"
#include "actorgrad/actors/detail/task_contexts.h"

namespace actorgrad::detail {

/// The mailbox of a caller thread's Runner: none until a call needs one,
/// then the one parked in the engine or a new one; given back when the
/// Runner ends, parked again if its calls ended cleanly (Note [Parked
/// caller mailbox] in caller_mailbox_lease.cpp).
class CallerMailboxLease {
public:
  using Slot = ParkingSlot<std::unique_ptr<CallerMailbox>>;

  CallerMailboxLease(Slot& slot, caf::actor_system& system) : slot_(slot), system_(system) {}
  CallerMailboxLease(const CallerMailboxLease&) = delete;
  CallerMailboxLease& operator=(const CallerMailboxLease&) = delete;

  bool held() const { return mailbox_ != nullptr; }
  /// Takes the parked mailbox, or makes one when none is; `contexts` gets
  /// what the parked one kept (its monitors, its last context).
  EngineActor& take(TaskContexts& contexts);
  /// Something of the calls may still reach the mailbox (an aborted frame,
  /// a call that threw): release destroys it rather than park it.
  void spoil() { reusable_ = false; }
  /// Gives the held mailbox back with `contexts`: parks it if it is
  /// reusable and the slot empty, else drops its monitors and destroys it.
  void release(TaskContexts&& contexts);

private:
  Slot& slot_;
  caf::actor_system& system_;
  std::unique_ptr<CallerMailbox> mailbox_;
  bool reusable_ = true;
};

} // namespace actorgrad::detail
