#pragma once
/// @file local_messages.h
/// Messages between the caller's threads and its own Agent. They never
/// leave the process and hold engine objects, so they are declared with
/// CAF_ALLOW_UNSAFE_MESSAGE_TYPE (as actors/messages.h does). Sent through
/// actors/remote/detail/send.h; the Agent is in protocol.h's actor table.
/// Internal (actors/remote/detail/, not installed).
///
/// | message           | sent by (file: function)         | received by          | handled in (file: function) | reply |
/// |-------------------|----------------------------------|----------------------|-----------------------------|-------|
/// | LocalRegisterSend | dist_context.cpp: remote_call    | Agent (the caller's) | agent.cpp: agent            | - |
/// | LocalRoot         | dist_context.cpp: dist_backward  | Agent (the caller's) | agent.cpp: agent            | Ack |
/// | LocalGradients    | dist_context.cpp: get_gradients  | Agent (the caller's) | agent.cpp: agent            | LocalGradientsReply |
/// | Watch             | runtime.cpp: Runtime::connect    | Agent (the caller's) | agent.cpp: agent            | - |
/// | SetName           | runtime.cpp: Runtime::publish    | Agent (a worker's)   | agent.cpp: agent            | - |

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/allowed_unsafe_message_type.hpp>

#include "actorgrad/actors/remote/detail/dist_nodes.h"
#include "actorgrad/actors/remote/detail/local_step.h"

namespace actorgrad::remote::detail {

/// remote_call recorded a send node on the caller: the agent keeps it (the
/// root of the local pass that runs when its gradient comes back).
struct LocalRegisterSend {
  std::uint64_t context_id;
  std::shared_ptr<SendBackward> node;
};

/// dist_backward ran the caller's local pass: the agent records its leaf
/// gradients, sends its outgoing gradients and replies Ack when all the
/// remote work they cause is done.
struct LocalRoot {
  std::uint64_t context_id;
  LocalStep step;
  bool anomaly;
};

/// Asks the agent for the caller's leaf gradients of a context.
struct LocalGradients {
  std::uint64_t context_id;
};

/// The caller's leaf gradients of a context.
struct LocalGradientsReply {
  std::vector<LocalStep::Leaf> leaves;
};

/// Runtime::connect asks the agent to monitor a worker and clear `alive`
/// when it goes down (Note [Watching workers] in runtime.cpp).
struct Watch {
  caf::actor worker;
  std::shared_ptr<std::atomic<bool>> alive;
};

/// Sets the name the agent uses in errors (a worker learns its port after
/// publishing).
struct SetName {
  std::string name;
};

} // namespace actorgrad::remote::detail

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorgrad::remote::detail::LocalRegisterSend)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorgrad::remote::detail::LocalRoot)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorgrad::remote::detail::LocalGradients)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorgrad::remote::detail::LocalGradientsReply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorgrad::remote::detail::SetName)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorgrad::remote::detail::Watch)
