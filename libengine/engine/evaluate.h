#pragma once
/// @file evaluate.h
/// Running one node for a GraphTask (PyTorch's evaluate_function / call_function).

#include "libengine/engine/graph_task.h"

namespace actorgrad {

/// Runs `fn` on `inputs` for `task`: exec-info captures, tensor pre-hooks,
/// pre-hooks, apply, output validation, post-hooks, release of saved
/// variables unless keep_graph, and the anomaly-mode NaN check, all on
/// `fn.stream()` (a stream guard) when it has one. Returns one
/// gradient per next edge of `fn` for the caller to dispatch, or an empty
/// list when there is nothing to dispatch (node not needed, no outputs).
/// Errors are rethrown as EngineError naming the node. Sets grad mode and
/// current_graph_task() for the duration.
variable_list evaluate_function(GraphTask& task, Node& fn, InputBuffer&& inputs);

/// Checks the gradients `fn` returned against the metadata of the inputs
/// they flow to (its next edges): count, dtype (cast), shape (reduced when
/// it broadcasts) and device. Errors name `fn`.
void validate_outputs(const Node& fn, variable_list& grads);

} // namespace actorgrad
