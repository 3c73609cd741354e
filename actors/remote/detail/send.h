#pragma once
/// @file send.h
/// The one way the distributed runtime sends its messages (those of
/// actors/remote/detail/protocol.h and local_messages.h), as actors/detail/post.h
/// is the engine's. Internal. tools/check_messages.py (ctest
/// check_messages) fails on a send in actors/ made with CAF directly.

#include <type_traits>
#include <utility>

#include <caf/actor.hpp>
#include <caf/atom.hpp>
#include <caf/exit_reason.hpp>
#include <caf/send.hpp>

#include "actorgrad/actors/remote/detail/local_messages.h"
#include "actorgrad/actors/remote/detail/protocol.h"

namespace actorgrad::remote::detail {

/// Whether `M` is one of the distributed runtime's messages: the tables of
/// protocol.h and local_messages.h.
template <class M>
inline constexpr bool is_remote_message =
  std::is_same_v<M, Hello> || std::is_same_v<M, HelloReply> || std::is_same_v<M, ForwardRequest> ||
  std::is_same_v<M, ForwardReply> || std::is_same_v<M, RemoteGrad> || std::is_same_v<M, Ack> ||
  std::is_same_v<M, CreateParam> || std::is_same_v<M, FetchParam> ||
  std::is_same_v<M, ParamReply> || std::is_same_v<M, GradientsRequest> ||
  std::is_same_v<M, GradientsReply> || std::is_same_v<M, ReleaseContext> ||
  std::is_same_v<M, StatsRequest> || std::is_same_v<M, StatsReply> ||
  std::is_same_v<M, LocalRegisterSend> || std::is_same_v<M, LocalRoot> ||
  std::is_same_v<M, LocalGradients> || std::is_same_v<M, LocalGradientsReply> ||
  std::is_same_v<M, Watch> || std::is_same_v<M, SetName>;

/// Sends `m` to `to` without a sender (no reply expected).
template <class M>
void tell(const caf::actor& to, M&& m) {
  static_assert(
    is_remote_message<std::decay_t<M>>,
    "a remote message must be declared in actors/remote/detail/protocol.h or local_messages.h");
  caf::anon_send(to, std::forward<M>(m));
}

/// Sends the request `m` from `self` (an actor pointer or a scoped_actor)
/// to `to`; returns CAF's response handle (`.then`, `.receive`). `m` is a
/// message of the tables, or `caf::connect_atom` followed by the host and
/// port (the request CAF's middleman, a typed actor, answers with a
/// worker's handle).
template <class Self, class To, class Timeout, class M, class... Ts>
auto request_from(Self&& self, const To& to, Timeout timeout, M&& m, Ts&&... xs) {
  static_assert(
    is_remote_message<std::decay_t<M>> || std::is_same_v<std::decay_t<M>, caf::connect_atom>,
    "a remote message must be declared in actors/remote/detail/protocol.h or local_messages.h");
  return self->request(to, timeout, std::forward<M>(m), std::forward<Ts>(xs)...);
}

/// Asks `to` to stop, with `reason` (CAF's exit message).
inline void tell_exit(const caf::actor& to, caf::exit_reason reason) {
  caf::anon_send_exit(to, reason);
}

} // namespace actorgrad::remote::detail
