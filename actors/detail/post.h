#pragma once
/// @file post.h
/// The one way the engine's actors send each other messages. Internal.

#include <type_traits>
#include <utility>

#include <caf/actor_control_block.hpp>
#include <caf/error.hpp>
#include <caf/make_message.hpp>
#include <caf/message_id.hpp>
#include <caf/send.hpp>

#include "actorgrad/actors/detail/recycled_element.h"
#include "actorgrad/actors/messages.h"

namespace actorgrad::detail {

/// Sends `m` to `to` without a sender (the engine's own actors never reply).
/// Accepts only the messages of actors/messages.h, so the map there stays
/// complete; `high` messages (Shutdown) overtake normal ones. A per-node
/// message goes in a RecycledElement (Note [Mailbox elements kept by the thread
/// that frees them] in recycled_element.h).
template <caf::message_priority P = caf::message_priority::normal, class M>
void post(const caf::actor& to, M&& m) {
  using message = std::decay_t<M>;
  static_assert(msg::is_engine_message<message>,
                "an engine message must be declared in actors/messages.h");
  if constexpr (msg::is_per_node_message<message>) {
    if (to)
      to->enqueue(caf::mailbox_element_ptr{new RecycledElement<message>(caf::make_message_id(P),
                                                                        std::forward<M>(m))},
                  nullptr);
  } else {
    caf::anon_send<P>(to, std::forward<M>(m));
  }
}

/// Passes the engine message that `element` holds on to `to` as it is
/// (its sender, priority and id unchanged): how the CoordinatorPool gives a
/// call it received to a coordinator.
inline void forward(const caf::actor& to, caf::mailbox_element_ptr element) {
  to->enqueue(std::move(element), nullptr);
}

/// Answers the request `mid` of `to` with `m` (a response of
/// actors/messages.h, or a caf::error), sent as from `from`. Sent with no
/// execution unit, so the requester is scheduled by its own actor system,
/// which may not be the engine's (Note [Requests across actor systems] in
/// actors/detail/request_server.h). A requester that is gone drops it.
template <class M>
void respond(const caf::strong_actor_ptr& to, caf::message_id mid,
             const caf::strong_actor_ptr& from, M&& m) {
  static_assert(msg::is_engine_message<std::decay_t<M>> ||
                  std::is_same_v<std::decay_t<M>, caf::error>,
                "a response must be declared in actors/messages.h");
  if (to)
    to->enqueue(from, mid.response_id(), caf::make_message(std::forward<M>(m)), nullptr);
}

} // namespace actorgrad::detail
