#pragma once
/// @file requests.h
/// What an application's actor sends the actor engine: a backward or grad
/// call as a request, and the answers.
///
/// | message   | sent by (file: function)                              | received by  | handled in (file: function)                 |
/// |-----------|-------------------------------------------------------|--------------|---------------------------------------------|
/// | BackwardRequest | the application: any actor, `request(engine.request_actor(), timeout, msg::BackwardRequest{...})` | request actor | request_server.cpp: request_server |
/// | GradRequest | the application, as BackwardRequest                     | request actor | request_server.cpp: request_server |
/// | BackwardResponse | request_server.cpp: request_server (through serve and Requester::answer, on the call's coordinator) | requester | the requester's response handler (`.then`, `.receive`) |
/// | GradResponse | request_server.cpp: request_server (as BackwardResponse) | requester | the requester's response handler |
///
/// (The receivers are in the actor table of actors/messages.h, the map of
/// the engine's own messages; tools/check_messages.py checks both.)
///
/// Requests (the application's actors ask the engine): a BackwardRequest or
/// GradRequest sent with CAF's `request` to Engine::request_actor() is
/// answered by a BackwardResponse or GradResponse, or by a `caf::error`
/// (category `sec`; `sec::invalid_argument`: the request's arguments are
/// wrong; `sec::runtime_error`: the pass failed) whose context holds the
/// engine's message (msg::error_text). The requester is never blocked: the
/// call runs on a pooled async coordinator (Note [Requests across actor
/// systems] in actors/detail/request_server.h).
///
/// They stay inside one process and carry tensors, so they are declared
/// with CAF_ALLOW_UNSAFE_MESSAGE_TYPE (CAF 0.17's way to send a type
/// without serialization).

#include <cstddef>
#include <string>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/error.hpp>
#include <caf/message.hpp>

#include "actorgrad/libengine/autograd.h"

namespace actorgrad::msg {

/// Asks the engine for `actorgrad::backward(tensors, options)`: sent by any
/// actor (event-based included) with `request` to Engine::request_actor().
/// Answered by a BackwardResponse once the pass is over, or a caf::error.
struct BackwardRequest {
  variable_list tensors{};
  BackwardOptions options{};
};

/// Asks the engine for `actorgrad::grad(outputs, inputs, options)`.
/// Answered by a GradResponse, or a caf::error.
struct GradRequest {
  variable_list outputs{};
  variable_list inputs{};
  GradOptions options{};
};

/// The answer to a BackwardRequest: the gradients are in the leaves'
/// `.grad`; `grads` holds the `.grad` of each of the request's
/// `options.inputs`, in order, read when the pass ended (empty when the
/// request named no inputs).
struct BackwardResponse {
  variable_list grads{};
};

/// The answer to a GradRequest: one gradient per input (undefined for an
/// unused input when `options.allow_unused`).
struct GradResponse {
  variable_list grads{};
};

/// The engine's message in an error answer to a request (empty when `error`
/// carries none, e.g. a request timeout, or is no error).
inline std::string error_text(const caf::error& error) {
  if (!error)
    return {};
  const caf::message& context = error.context();
  for (std::size_t i = 0; i < context.size(); ++i)
    if (context.match_element<std::string>(i))
      return context.get_as<std::string>(i);
  return {};
}

} // namespace actorgrad::msg

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorgrad::msg::BackwardRequest)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorgrad::msg::GradRequest)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorgrad::msg::BackwardResponse)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorgrad::msg::GradResponse)
