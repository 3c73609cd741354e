#pragma once
/// @file validate_outputs.h
/// libtorch's validate_outputs (not exported by libtorch, so written again
/// from its public headers, with libtorch's error texts).

#include <ATen/core/Tensor.h>
#include <torch/csrc/autograd/edge.h>

#include <string>
#include <vector>

namespace actorgrad::torch::detail {

/// Checks `grads` against the input metadata of the nodes `edges` lead to,
/// as libtorch's engine does for every node's outputs and for the root
/// gradients: one gradient per edge; a gradient whose shape is expandable
/// to the expected one is summed to it, its dtype converted and a 0-dim
/// gradient moved to the expected device; anything else is a c10::Error whose
/// text is libtorch's, prefixed with "Function <name of fn> returned an "
/// for the outputs of node `fn` (nothing for the roots: null).
void validate_outputs(const std::vector<::torch::autograd::Edge>& edges,
                      std::vector<at::Tensor>& grads, const ::torch::autograd::Node* fn);

} // namespace actorgrad::torch::detail
