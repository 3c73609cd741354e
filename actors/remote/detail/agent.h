#pragma once
/// @file agent.h
/// The actor every process of a distributed backward runs: it owns the
/// process's part of each distributed context.
/// Internal (actors/remote/detail/, not installed).

#include <chrono>
#include <string>

#include <caf/actor.hpp>

#include "actorgrad/actors/remote/log.h"

namespace caf {
class actor_system;
}

namespace actorgrad {
class Engine;
class Executor;
} // namespace actorgrad

namespace actorgrad::remote::detail {

/// How an Agent is set up.
struct AgentConfig {
  /// Runs the local passes (the process's Engine); must outlive the agent.
  Executor* executor = nullptr;
  /// Told of each gradient sent to or received from another process and
  /// of each reply, when it has an observer (a recording): null for none.
  /// Must outlive the agent.
  Engine* engine = nullptr;
  /// How long a gradient request may wait for its reply.
  std::chrono::milliseconds timeout{10000};
  /// Serve the test ops of remote_ops.h.
  bool test_ops = false;
  /// Name in errors: `host:port` for a worker.
  std::string name;
  /// Where connections, disconnections, refused handshakes and requests
  /// are reported (from the agent's thread); empty: nowhere.
  LogFunction log;
};

/// Spawns an Agent (a detached actor: its local passes block its thread,
/// never a scheduler thread). It handles every message of protocol.h and
/// local_messages.h; see Note [Distributed backward] in agent.cpp.
caf::actor spawn_agent(caf::actor_system& system, AgentConfig config);

} // namespace actorgrad::remote::detail
