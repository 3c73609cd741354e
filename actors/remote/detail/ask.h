#pragma once
/// @file ask.h
/// ask: one request from a non-actor thread of a Runtime, with a timeout.
/// Internal (actors/remote/detail/, not installed).

#include <chrono>
#include <optional>
#include <string>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include "actorgrad/actors/remote/detail/errors.h"
#include "actorgrad/actors/remote/detail/send.h"
#include "actorgrad/actors/remote/runtime.h"

namespace actorgrad::remote::detail {

/// Sends `msg` to `dest` from a scoped actor of `rt`'s actor system and
/// waits (at most `timeout`) for a reply of type Reply; throws DistError
/// starting with `what` on an error reply, a timeout or a dead destination.
template <class Reply, class Msg>
Reply ask(Runtime& rt, const caf::actor& dest, Msg msg, std::chrono::milliseconds timeout,
          const std::string& what) {
  if (!dest)
    throw DistError(what + ": no actor to send to");
  caf::scoped_actor self{rt.system()};
  std::optional<Reply> reply;
  std::string error;
  request_from(self, dest, timeout, std::move(msg))
    .receive([&](Reply& r) { reply = std::move(r); },
             [&](caf::error& e) { error = describe(e, timeout); });
  if (!reply)
    throw DistError(what + ": " + error);
  return std::move(*reply);
}

} // namespace actorgrad::remote::detail
