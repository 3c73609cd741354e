#pragma once
/// @file post.h
/// The one way the engine's actors send each other messages. Internal.

#include <utility>

#include <caf/send.hpp>

#include "actors/messages.h"

namespace actorgrad::detail {

/// Sends `m` to `to` without a sender (the engine's actors never reply).
/// Accepts only the messages of actors/messages.h, so the map there stays
/// complete; `high` messages (Shutdown) overtake normal ones.
template <caf::message_priority P = caf::message_priority::normal, class M>
void post(const caf::actor& to, M&& m) {
  static_assert(msg::is_engine_message<std::decay_t<M>>,
                "an engine message must be declared in actors/messages.h");
  caf::anon_send<P>(to, std::forward<M>(m));
}

} // namespace actorgrad::detail
