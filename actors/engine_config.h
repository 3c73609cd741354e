#pragma once
/// @file engine_config.h
/// How an Engine is set up.

#include <cstddef>
#include <functional>
#include <vector>

#include "device/device.h"

namespace actorgrad {

class GraphTask;
class Node;

/// Settings of an Engine.
struct EngineConfig {
  /// The non-CPU devices to serve: one DeviceWorker actor each.
  std::vector<Device> devices;
  /// Scheduler threads of an actor system the Engine creates itself (CAF's
  /// default of 4 is too many for a 2-core machine; the engine's own actors
  /// are detached and do not use them).
  std::size_t scheduler_threads = 2;
  /// Nested backward calls on one thread before a reentrant call is handed
  /// to a pool actor (PyTorch's max_recursion_depth).
  int max_recursion_depth = 60;
  /// Test and profiling hook: called by the actor that runs a node, just
  /// before it runs it, with the device whose actor that is (cpu for a
  /// coordinator). Must be cheap and thread-safe.
  std::function<void(Device actor, const GraphTask&, const Node&)> on_node_start = {};
};

} // namespace actorgrad
