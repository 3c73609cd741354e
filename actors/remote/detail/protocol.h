#pragma once
/// @file protocol.h
/// The messages that cross processes, with their CAF `inspect` overloads.
/// Internal (actors/remote/detail/, not installed).
///
/// Who sends what (a "caller" is the process that runs remote_call and
/// dist_backward; a "worker" runs `actorgrad worker`; both run an Agent).
/// Every message is sent through actors/remote/detail/send.h (tell,
/// request_from; ask.h's ask waits for the reply on a caller's thread);
/// the reply is the value the Agent's clause returns.
///
/// | message          | sent by (file: function)                        | received by           | handled in (file: function) | reply |
/// |------------------|-------------------------------------------------|-----------------------|-----------------------------|-------|
/// | Hello            | runtime.cpp: Runtime::connect                   | Agent (a worker's)    | agent.cpp: agent            | HelloReply |
/// | CreateParam      | runtime.cpp: RemoteWorker::create_param         | Agent (a worker's)    | agent.cpp: agent            | Ack |
/// | FetchParam       | runtime.cpp: RemoteWorker::fetch_param          | Agent (a worker's)    | agent.cpp: agent            | ParamReply |
/// | ForwardRequest   | dist_context.cpp: remote_call                   | Agent (a worker's)    | agent.cpp: agent            | ForwardReply |
/// | RemoteGrad       | agent.cpp: launch (agent to agent)      | Agent (the send node's) | agent.cpp: agent          | Ack |
/// | GradientsRequest | dist_context.cpp: get_gradients                 | Agent (a worker's)    | agent.cpp: agent            | GradientsReply |
/// | ReleaseContext   | dist_context.cpp: DistContext::release          | Agent (any)           | agent.cpp: agent            | Ack |
/// | StatsRequest     | runtime.cpp: Runtime::stats, RemoteWorker::stats | Agent (any)          | agent.cpp: agent            | StatsReply |
///
/// | actor | is (file: function)                           | handles messages in (file: function) |
/// |-------|-----------------------------------------------|--------------------------------------|
/// | Agent | agent.cpp: agent (one per process, spawn_agent) | agent.cpp: agent                   |
///
/// tools/check_messages.py (ctest check_messages) checks these tables and
/// local_messages.h's against the code, as it does actors/messages.h's.
///
/// Every type here is registered under a fixed name by
/// register_remote_types (CAF 0.17 has no type-id lists: both ends must
/// register the same names). Tensors travel as WireTensor (raw bytes).
///
/// Note [Protocol version]
/// Runtime::connect sends Hello first and refuses a worker whose
/// HelloReply carries another kProtocolVersion; the worker refuses such a
/// caller too. Hello and HelloReply are frozen (name and members never
/// change), so processes of any two versions can tell each other apart.
/// Change kProtocolVersion whenever any other message here changes.

#include <cstdint>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/meta/type_name.hpp>

#include "actorgrad/actors/remote/agent_stats.h"
#include "actorgrad/actors/remote/detail/wire_tensor.h"
#include "actorgrad/actors/remote/protocol_version.h"

namespace caf {
class actor_system_config;
}

namespace actorgrad::remote::detail {

/// The first message of a caller to a worker it connects to. Frozen.
struct Hello {
  /// The caller's kProtocolVersion.
  std::uint32_t protocol_version = 0;
  /// The caller's actorgrad version (ACTORGRAD_VERSION).
  std::string software_version;
  /// The caller's name in errors and logs (`caller pid N`).
  std::string name;
  /// The caller's host name.
  std::string host;
  /// The caller's agent: the worker watches it to log the disconnection.
  caf::actor agent;
};

/// A worker's answer to Hello. Frozen.
struct HelloReply {
  /// Empty when the worker accepts the caller.
  std::string error;
  /// The worker's kProtocolVersion.
  std::uint32_t protocol_version = 0;
  /// The worker's actorgrad version.
  std::string software_version;
  /// The worker's name (`host:port`).
  std::string name;
};

/// Runs a named forward op on a worker within a context (remote_call).
struct ForwardRequest {
  /// The distributed context (DistContext::id).
  std::uint64_t context_id = 0;
  /// Op name (see remote_ops.h).
  std::string op;
  /// Names of worker-held parameters the op uses (linear: weight, bias).
  std::vector<std::string> params;
  /// Numeric attributes of the op.
  std::vector<double> numbers;
  /// Text attribute of the op.
  std::string text;
  /// The tensor arguments.
  std::vector<WireTensor> args;
  /// Per argument: the id of the caller's send node (0: needs no gradient).
  std::vector<std::uint64_t> arg_send_ids;
  /// Anomaly mode of the caller (checks the forward outputs for NaN too).
  bool anomaly = false;
  /// The caller's Agent: where gradients of the arguments go.
  caf::actor origin;
  /// The caller's name in errors.
  std::string origin_name;
};

/// Outputs of a ForwardRequest, or an error naming the worker and the op.
struct ForwardReply {
  /// Empty on success.
  std::string error;
  std::vector<WireTensor> outputs;
  /// Per output: the worker's send node id (0: does not require grad).
  std::vector<std::uint64_t> output_send_ids;
};

/// A gradient for send node `send_id` of `context_id` on the receiving
/// agent, which runs its part of the backward pass and replies Ack once
/// that part and all remote work it caused are done.
struct RemoteGrad {
  std::uint64_t context_id = 0;
  std::uint64_t send_id = 0;
  WireTensor grad;
  /// Anomaly mode of the caller of dist_backward.
  bool anomaly = false;
  /// Names this gradient in both processes' traces (Note [Flows between
  /// processes] in agent.cpp; protocol 2).
  std::uint64_t flow = 0;
  /// The sending agent's name.
  std::string sender;
};

/// A reply carrying only success or an error (which names a worker).
struct Ack {
  /// Empty on success.
  std::string error;
};

/// Creates (or replaces) a parameter held by the worker: a leaf that
/// requires grad.
struct CreateParam {
  std::string name;
  WireTensor value;
};

/// Reads a worker-held parameter.
struct FetchParam {
  std::string name;
};

/// The value of a parameter, or an error.
struct ParamReply {
  std::string error;
  WireTensor value;
};

/// Asks a worker for the gradients of its leaves in a context.
struct GradientsRequest {
  std::uint64_t context_id = 0;
};

/// Parameter names and their accumulated gradients in one context.
struct GradientsReply {
  std::string error;
  std::vector<std::string> names;
  std::vector<WireTensor> grads;
};

/// Drops everything an agent holds for a context (its graph part, send
/// nodes, gradients, requests in flight). Replied with Ack.
struct ReleaseContext {
  std::uint64_t context_id = 0;
};

/// Asks an agent what it holds (for tests and operators).
struct StatsRequest {
  /// Unused; CAF needs a member to inspect.
  std::uint8_t unused = 0;
};

/// What an agent holds.
struct StatsReply {
  AgentStats stats;
};

/// @relates Hello
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Hello& x) {
  return f(caf::meta::type_name("actorgrad.hello"), x.protocol_version, x.software_version, x.name,
           x.host, x.agent);
}

/// @relates HelloReply
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, HelloReply& x) {
  return f(caf::meta::type_name("actorgrad.hello_reply"), x.error, x.protocol_version,
           x.software_version, x.name);
}

/// @relates ForwardRequest
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ForwardRequest& x) {
  return f(caf::meta::type_name("actorgrad.forward_request"), x.context_id, x.op, x.params,
           x.numbers, x.text, x.args, x.arg_send_ids, x.anomaly, x.origin, x.origin_name);
}

/// @relates ForwardReply
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ForwardReply& x) {
  return f(caf::meta::type_name("actorgrad.forward_reply"), x.error, x.outputs, x.output_send_ids);
}

/// @relates RemoteGrad
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RemoteGrad& x) {
  return f(caf::meta::type_name("actorgrad.grad_request"), x.context_id, x.send_id, x.grad,
           x.anomaly, x.flow, x.sender);
}

/// @relates Ack
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Ack& x) {
  return f(caf::meta::type_name("actorgrad.ack"), x.error);
}

/// @relates CreateParam
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, CreateParam& x) {
  return f(caf::meta::type_name("actorgrad.create_param"), x.name, x.value);
}

/// @relates FetchParam
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, FetchParam& x) {
  return f(caf::meta::type_name("actorgrad.fetch_param"), x.name);
}

/// @relates ParamReply
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ParamReply& x) {
  return f(caf::meta::type_name("actorgrad.param_reply"), x.error, x.value);
}

/// @relates GradientsRequest
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, GradientsRequest& x) {
  return f(caf::meta::type_name("actorgrad.gradients_request"), x.context_id);
}

/// @relates GradientsReply
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, GradientsReply& x) {
  return f(caf::meta::type_name("actorgrad.gradients_reply"), x.error, x.names, x.grads);
}

/// @relates ReleaseContext
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ReleaseContext& x) {
  return f(caf::meta::type_name("actorgrad.release_context"), x.context_id);
}

/// @relates StatsRequest
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, StatsRequest& x) {
  return f(caf::meta::type_name("actorgrad.stats_request"), x.unused);
}

/// @relates StatsReply
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, StatsReply& x) {
  return f(caf::meta::type_name("actorgrad.stats_reply"), x.stats.contexts, x.stats.pending,
           x.stats.params);
}

/// Registers every type above (and WireTensor) with `cfg` under the names
/// both ends use, loads CAF's middleman and sets its application identifier
/// to `actorgrad` (CAF refuses a connection to a program with another one).
/// Call before creating the actor system.
void register_remote_types(caf::actor_system_config& cfg);

} // namespace actorgrad::remote::detail
