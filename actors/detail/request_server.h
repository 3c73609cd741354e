#pragma once
/// @file request_server.h
/// The engine's request actor: answers backward and grad requests sent by
/// message (msg::BackwardRequest, msg::GradRequest). Internal; reached
/// through Engine::request_actor().

#include <memory>

#include <caf/actor.hpp>

#include "actorgrad/libengine/engine/executor.h"

namespace actorgrad::detail {

struct EngineCore;

// Note [Requests across actor systems]
// The application's actors may live in another CAF actor system than the
// engine's (an Engine that owns its system). CAF 0.17.6 lets actors of two
// systems of one process message each other, but schedules a woken
// event-based receiver on the *sender's* execution unit when one is given
// (scheduled_actor::enqueue: `eu->exec_later(this)`), so an answer sent the
// usual way (a handler's return value, a response_promise) from the
// engine's side would make the engine's scheduler run the application's
// actor. Hence:
// - the request actor is a blocking actor (its own thread): a request
//   wakes it there, whoever sent it, and never runs it on the requester's
//   scheduler. Not a detached event-based actor: CAF's private thread of
//   one waits until the actor object is gone, i.e. until the application
//   drops its last handle, and ~actor_system waits for that thread, so an
//   Engine owning its system would hang in its destructor while the
//   application still holds request_actor() (test_requests checks it);
// - it only checks the arguments and hands the call to a pooled
//   coordinator actor (Note [Pooled async coordinators] in
//   actors/detail/async_call.h), so it takes the next request at once and
//   no requester waits on another's pass;
// - the coordinator answers through detail::respond, which enqueues the
//   response with no execution unit: the requester's own system schedules
//   it (tests/actors/test_requests.cpp checks the answer runs on the
//   application's scheduler thread).
// A request is answered once: the response, or a caf::error. One sent with
// `send` instead of `request` is answered like CAF answers any handler's
// result: as an ordinary message to the sender.

/// Spawns the request actor (a blocking actor, see the Note) in `core`'s
/// actor system; calls run on `engine`. It stops on msg::Shutdown.
caf::actor spawn_request_server(Executor* engine, const std::shared_ptr<EngineCore>& core);

} // namespace actorgrad::detail
