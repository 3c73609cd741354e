#pragma once
/// @file agent_stats.h
/// What a process's agent holds (Runtime::stats, RemoteWorker::stats).

#include <cstdint>

namespace actorgrad::remote {

/// What an agent holds: tests and operators check that a released context
/// leaves nothing behind.
struct AgentStats {
  /// Contexts with any state on this agent.
  std::uint64_t contexts = 0;
  /// Gradient requests being handled or waited on.
  std::uint64_t pending = 0;
  /// Worker-held parameters.
  std::uint64_t params = 0;
};

} // namespace actorgrad::remote
