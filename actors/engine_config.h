#pragma once
/// @file engine_config.h
/// How an Engine is set up.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <memory>
#include <thread>
#include <vector>

#include "actorgrad/device/device.h"

namespace actorgrad {

class EngineObserver;

/// std::thread::hardware_concurrency(), or 1 when unknown.
inline std::size_t default_hardware_threads() {
  return std::max(1u, std::thread::hardware_concurrency());
}

/// Settings of an Engine. Checked when the Engine is created: a bad value is
/// a std::invalid_argument naming the setting.
struct EngineConfig {
  /// The non-CPU devices to serve: one DeviceWorker actor each. Each device
  /// once; a device this process cannot serve (`cuda:N` without the CUDA
  /// backend or without that GPU) is refused.
  std::vector<Device> devices{};
  /// Scheduler threads (at least 1) of an actor system the Engine creates
  /// itself (CAF's default of 4 is too many for a 2-core machine; the
  /// engine's own actors run on threads of their own and do not use them).
  std::size_t scheduler_threads = 2;
  /// Nested backward calls on one stack (at least 1) before a reentrant
  /// call moves to a fresh stack of its thread (PyTorch's
  /// max_recursion_depth, where it moves to a pool thread; Note [A fresh
  /// stack past the depth limit] in actors/detail/fresh_stack.h). Any value
  /// is safe for the stack: a call that finds less than 256 KiB of its
  /// stack left moves to a fresh one as well (one nested call costs a few
  /// KiB of stack; see actors/detail/stack_guard.h), so a large value is
  /// effectively clamped to what a stack holds.
  int max_recursion_depth = 60;
  /// Threads that run the CPU nodes of one call (at least 1): the caller
  /// and `cpu_workers - 1` CPU worker actors the engine shares among its
  /// calls. 1, the default, runs every CPU node on the caller, as PyTorch
  /// does. With more, the ready CPU nodes of a CPU-only call spread over the
  /// workers, and a gradient's bits do not depend on which worker ran what
  /// (Note [Parallel CPU nodes] in actors/detail/cpu_lanes.h).
  std::size_t cpu_workers = 1;
  /// With cpu_workers > 1: how long a thread of a spread call with nothing
  /// to run (a CPU worker, or a coordinator waiting for the workers) polls
  /// its mailbox before it sleeps, when spin_before_block is shorter (zero
  /// or more). Handing a node to a polling thread costs no wake-up, which
  /// on a VM takes 10-60 µs, as long as several nodes (Note [Parallel CPU
  /// nodes] in actors/detail/cpu_lanes.h).
  std::chrono::nanoseconds cpu_worker_spin{std::chrono::microseconds(50)};
  /// With cpu_workers > 1: a call that starts on a caller's thread spreads
  /// over the workers once two of its ready nodes each head this many nodes
  /// of their own (1 or more; 1 spreads at the first fork). Fewer make a
  /// branch too short to pay for a hand-over (Note [Spreading a call where
  /// it branches] in actors/detail/cpu_lanes.h).
  std::size_t cpu_spread_branch = 8;
  /// With cpu_workers > 1: a spread call over nodes that a spread call ran
  /// before (retain_graph) sends the branches of each fork to the threads
  /// that ran them then, so their memory stays in that core's cache (Note
  /// [Lanes that stay] in actors/detail/cpu_lanes.h). false places every
  /// node by timing alone (for comparison). Results do not depend on it.
  bool cpu_keep_lanes = true;
  /// How long an engine thread with nothing to do (a device worker, or a
  /// caller waiting for its call's workers) polls its mailbox before it
  /// blocks (zero or more; 0, the default, blocks at once). Spinning spends
  /// that much CPU per wait; it pays where waking a blocked thread is slow
  /// (Note [Spinning before blocking] in actors/detail/runner.cpp).
  std::chrono::nanoseconds spin_before_block{0};
  /// Asynchronous calls (backward_async, grad_async, execute_async, the
  /// request actor's) run on pooled coordinator threads (Note [Pooled async
  /// coordinators] in actors/detail/async_call.h). At most this many exist
  /// at once (at least 1); a call that finds them all busy waits in the
  /// pool, its future not ready, until one is free. A call made inside a
  /// node never waits for one (Note [Async calls made inside a node]).
  std::size_t max_async_coordinators = 4 * default_hardware_threads();
  /// Coordinators kept when idle (at most max_async_coordinators): one, the
  /// default, keeps the next call from starting a thread.
  std::size_t min_async_coordinators = 1;
  /// How long a coordinator beyond min_async_coordinators stays idle before
  /// its thread ends (more than 0). After a burst of calls the pool shrinks
  /// back to min_async_coordinators within 1.5 times this.
  std::chrono::milliseconds async_coordinator_idle_time{1000};
  /// Observer installed from the start (see Engine::set_observer); null: none.
  std::shared_ptr<EngineObserver> observer = nullptr;
};

} // namespace actorgrad
