#pragma once
/// @file engine_stats.h
/// What an Engine counts while it runs (Engine::stats).

#include <cstddef>
#include <cstdint>

namespace actorgrad {

/// Counters of reentrant execution.
struct EngineStats {
  /// Most reentrant backward calls seen nested on one stack (never above
  /// EngineConfig::max_recursion_depth).
  int max_reentrant_frames_per_stack = 0;
  /// Reentrant calls run on a fresh stack at the depth limit (or when their
  /// stack ran short).
  std::int64_t fresh_stacks = 0;
  /// Pooled async coordinator threads alive now, and the most alive at once
  /// (EngineConfig::max_async_coordinators bounds both).
  std::size_t async_coordinators = 0;
  std::size_t peak_async_coordinators = 0;
  /// Asynchronous calls that waited for a coordinator (all were busy and
  /// the pool full).
  std::int64_t async_calls_waited = 0;
  /// Asynchronous calls made inside a node that ran on its thread (Note
  /// [Async calls made inside a node] in actors/detail/async_call.h).
  std::int64_t async_calls_run_inline = 0;
  /// Ready CPU nodes of spread calls that one thread handed to another
  /// (EngineConfig::cpu_workers; Note [Parallel CPU nodes] in
  /// actors/detail/cpu_lanes.h).
  std::int64_t cpu_tasks_shared = 0;
  /// Nodes of spread calls that ran on another thread than the one that ran
  /// them in the previous spread call over them (Note [Lanes that stay] in
  /// actors/detail/cpu_lanes.h): a repeated call over the same graph (with
  /// retain_graph) that keeps its placement moves none. libtorch's nodes
  /// keep theirs in a table that two nodes may share, which counts as a move.
  std::int64_t cpu_nodes_moved = 0;
};

} // namespace actorgrad
