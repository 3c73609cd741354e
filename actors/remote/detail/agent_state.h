#pragma once
/// @file agent_state.h
/// The state of an Agent (agent.cpp) and the helpers its handlers share;
/// the request handlers live in agent_requests.cpp.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include <caf/actor.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/response_promise.hpp>
#include <caf/result.hpp>
#include <caf/stateful_actor.hpp>

#include "actorgrad/actors/observer.h"
#include "actorgrad/actors/remote/detail/agent.h"
#include "actorgrad/actors/remote/detail/dist_nodes.h"
#include "actorgrad/actors/remote/detail/local_step.h"
#include "actorgrad/actors/remote/detail/protocol.h"

namespace actorgrad::remote::detail {

/// One process's part of a distributed context.
struct ContextState {
  /// The caller that created the context here (null on the caller itself).
  caf::actor_addr creator;
  /// Send nodes by id: the roots of this process's graph parts.
  std::unordered_map<std::uint64_t, std::shared_ptr<SendBackward>> sends;
  /// Gradients of this process's leaves, by AccumulateGrad node.
  std::unordered_map<const Node*, LocalStep::Leaf> grads;
  /// Next id for a send node recorded by this agent.
  std::uint64_t next_send_id = 1;
};

/// The gradient a reply answers, for the traces (Note [Flows between
/// processes] in agent.cpp): its flow (0: a local caller's, not traced),
/// the pass it started here, and its sender.
struct Answering {
  std::uint64_t flow = 0;
  std::uint64_t graph_task = 0;
  std::string peer;
};

/// A request being handled: answered when `remaining` requests it sent are done.
struct Parent {
  std::uint64_t context_id;
  caf::response_promise promise;
  std::size_t remaining;
  Answering answering;
};

/// A request this agent sent on behalf of a Parent.
struct Nested {
  std::uint64_t parent;
  caf::actor_addr peer;
  std::string peer_name;
  std::uint64_t context_id;
  /// Its flow, and the local pass that made its gradient.
  std::uint64_t flow;
  std::uint64_t graph_task;
};

struct AgentState {
  AgentConfig config;
  std::unordered_map<std::uint64_t, ContextState> contexts;
  std::unordered_map<std::string, Tensor> params;
  std::unordered_map<std::uint64_t, Parent> parents;
  std::unordered_map<std::uint64_t, Nested> nested;
  std::unordered_set<caf::actor_addr> monitored;
  /// Liveness flags of connected workers (Note [Watching workers]).
  std::unordered_multimap<caf::actor_addr, std::shared_ptr<std::atomic<bool>>> watches;
  /// Callers that said Hello, by agent: their names, for the log.
  std::unordered_map<caf::actor_addr, std::string> callers;
  std::uint64_t next_id = 1;
  /// The next flow id of a gradient sent (a random start, 0 skipped: Note
  /// [Flows between processes] in agent.cpp).
  std::uint64_t next_flow = 0;
  /// The agent as the recorder sees it (its track, "distributed agent").
  ObservedActor observed{ObservedActor::Role::agent, Device::cpu(), 0};
  static inline const char* name = "actorgrad.agent";
};

using Self = caf::stateful_actor<AgentState>*;

/// `distributed context N`.
std::string ctx_str(std::uint64_t id);
/// Reports an event through AgentConfig::log.
void log(Self self, LogLevel level, const std::string& text);
/// Monitors `peer` unless already monitored.
void monitor_once(Self self, const caf::actor& peer);
/// Completes a parent request (first error wins; the parent is forgotten).
void deliver(Self self, std::uint64_t parent_id, std::string error);
/// Tells the Engine's observer (a recording) of a message to or from
/// another process, if it has one.
void report(Self self, bool sent, trace::MessageKind kind, std::uint64_t flow,
            std::uint64_t graph_task, const std::string& peer,
            std::chrono::steady_clock::time_point at = std::chrono::steady_clock::now());
/// Records `step` in the context and sends its outgoing gradients; `promise`
/// is answered when all of them are (Note [Distributed backward]), and the
/// reply traced as `answering` says.
void launch(Self self, std::uint64_t context_id, LocalStep step, caf::response_promise promise,
            bool anomaly, Answering answering = {});

/// ForwardRequest: runs a remote op within a context (agent_requests.cpp).
ForwardReply forward(Self self, ForwardRequest& req);
/// RemoteGrad: runs this process's part of a backward from a send node.
caf::result<Ack> backward(Self self, RemoteGrad& req);
/// GradientsRequest: the gradients of this process's leaves in a context.
GradientsReply gradients(Self self, std::uint64_t context_id);

} // namespace actorgrad::remote::detail
