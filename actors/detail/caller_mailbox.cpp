#include "actorgrad/actors/detail/caller_mailbox.h"

#include <caf/actor_cast.hpp>
#include <caf/exit_reason.hpp>
#include <caf/make_actor.hpp>

namespace actorgrad::detail {

namespace {

class CallerActor final : public EngineActor {
public:
  using EngineActor::EngineActor;
  const char* name() const override { return "actorgrad.caller"; }
};

} // namespace

CallerMailbox::CallerMailbox(caf::actor_system& sys) : context_(&sys) {
  caf::actor_config cfg{&context_};
  cfg.flags |= caf::abstract_actor::is_hidden_flag;
  self_ = caf::actor_cast<caf::strong_actor_ptr>(
    caf::make_actor<CallerActor, caf::actor>(sys.next_actor_id(), sys.node(), &sys, cfg));
  actor()->initialize();
}

CallerMailbox::~CallerMailbox() {
  EngineActor* a = actor();
  if (!a->getf(caf::abstract_actor::is_terminated_flag))
    a->cleanup(caf::make_error(caf::exit_reason::normal), &context_);
}

EngineActor* CallerMailbox::actor() const {
  return static_cast<EngineActor*>(caf::actor_cast<caf::abstract_actor*>(self_));
}

} // namespace actorgrad::detail
