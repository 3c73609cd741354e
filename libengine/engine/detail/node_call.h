#pragma once
/// @file node_call.h
/// The call protocol of one of actorgrad's nodes (PyTorch's call_function).
/// Internal (libengine/engine/detail/, not installed).

#include "actorgrad/libengine/autograd/node.h"

namespace actorgrad::detail {

/// Runs `fn` on `inputs` in PyTorch's order: tensor pre-hooks -> pre-hooks
/// -> apply -> validate_outputs -> post-hooks. Returns one gradient per next
/// edge of `fn`.
variable_list call_node(Node& fn, variable_list&& inputs);

/// Checks the gradients `fn` returned against the metadata of the inputs
/// they flow to (its next edges): count, dtype (cast), shape (reduced when
/// it broadcasts) and device. Errors name `fn`.
void validate_outputs(const Node& fn, variable_list& grads);

} // namespace actorgrad::detail
