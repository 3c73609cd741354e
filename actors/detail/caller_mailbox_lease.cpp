#include "actorgrad/actors/detail/caller_mailbox_lease.h"

#include <utility>

namespace actorgrad::detail {

// Note [Parked caller mailbox]
// A caller thread has no mailbox until a call of it crosses devices (Note
// [CPU calls on a caller]); then its Runner needs one, and a fresh CAF
// blocking actor costs about 2,000 instructions to create and destroy, and
// 1,000 more to monitor its workers: a fifth of a 2-node call rooted on
// another device. So the Runner of calls that ended cleanly parks its
// mailbox, with its monitors, in EngineCore::idle_caller_mailbox (a
// ParkingSlot), and the next caller Runner that needs one takes it: one
// owner at a time, whatever its thread.
// Clean means nothing of the calls it coordinated can still arrive: every
// task's outstanding count reached zero, so no Grad or Task message is in
// flight to it (Note [Completion without a lock]). A WakeUp may still come
// late, and a down message of a worker that died meanwhile; a later Runner
// ignores the first (it names a task id none of its frames has) and
// handles the second as its own (a frame that uses the dead worker fails).
// After an aborted frame (a dead worker: that task's messages may still be
// in flight) or a call that threw, the mailbox is destroyed with its Runner
// instead, as it is when the slot is taken (another thread's mailbox is
// parked). ~Engine destroys the parked one while the actor system still
// exists.

EngineActor& CallerMailboxLease::take(TaskContexts& contexts) {
  mailbox_ = slot_.take();
  if (mailbox_)
    contexts = std::move(mailbox_->contexts);
  else
    mailbox_ = std::make_unique<CallerMailbox>(system_);
  return *mailbox_->actor();
}

void CallerMailboxLease::release(TaskContexts&& contexts) {
  mailbox_->contexts = std::move(contexts);
  if (reusable_ && slot_.park(mailbox_))
    return;
  mailbox_->contexts.demonitor_all(*mailbox_->actor()); // Note [Monitors per actor]
  mailbox_.reset();
}

} // namespace actorgrad::detail
