#pragma once
/// @file runtime_ask.h
/// Runtime::ask: one request from a non-actor thread, with a timeout.

#include <optional>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include "actorgrad/actors/remote/detail/send.h"
#include "actorgrad/actors/remote/errors.h"
#include "actorgrad/actors/remote/runtime.h"

namespace actorgrad::remote {

template <class Reply, class Msg>
Reply Runtime::ask(const caf::actor& dest, Msg msg, std::chrono::milliseconds timeout,
                   const std::string& what) {
  if (!dest)
    throw DistError(what + ": no actor to send to");
  caf::scoped_actor self{*system_};
  std::optional<Reply> reply;
  std::string error;
  detail::request_from(self, dest, timeout, std::move(msg))
    .receive([&](Reply& r) { reply = std::move(r); },
             [&](caf::error& e) { error = describe(e, timeout); });
  if (!reply)
    throw DistError(what + ": " + error);
  return std::move(*reply);
}

} // namespace actorgrad::remote
