#pragma once
/// @file engine_config.h
/// How an Engine is set up.

#include <chrono>
#include <cstddef>
#include <memory>
#include <vector>

#include "actorgrad/device/device.h"

namespace actorgrad {

class EngineObserver;

/// Settings of an Engine. Checked when the Engine is created: a bad value is
/// a std::invalid_argument naming the setting.
struct EngineConfig {
  /// The non-CPU devices to serve: one DeviceWorker actor each. Each device
  /// once; a device this process cannot serve (`cuda:N` without the CUDA
  /// backend or without that GPU) is refused.
  std::vector<Device> devices;
  /// Scheduler threads (at least 1) of an actor system the Engine creates
  /// itself (CAF's default of 4 is too many for a 2-core machine; the
  /// engine's own actors are detached and do not use them).
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
  /// How long an engine thread with nothing to do (a device worker, or a
  /// caller waiting for its call's workers) polls its mailbox before it
  /// blocks (zero or more; 0, the default, blocks at once). Spinning spends
  /// that much CPU per wait; it pays where waking a blocked thread is slow
  /// (Note [Spinning before blocking] in actors/detail/runner.cpp).
  std::chrono::nanoseconds spin_before_block{0};
  /// Observer installed from the start (see Engine::set_observer); null: none.
  std::shared_ptr<EngineObserver> observer = nullptr;
};

} // namespace actorgrad
