#pragma once
/// @file execute_options.h
/// How a backward call runs: what an Executor is asked for.

namespace actorgrad {

/// How a backward call runs (from the public API's arguments).
struct ExecuteOptions {
  /// retain_graph: keep saved tensors so the graph can run again.
  bool keep_graph = false;
  /// create_graph: run nodes in grad mode so gradients have graphs.
  bool create_graph = false;
  /// backward() (true: leaves accumulate into .grad) or grad() (false: the
  /// gradients of `outputs` are captured and returned).
  bool accumulate_grad = true;
};

} // namespace actorgrad
