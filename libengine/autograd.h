#pragma once
/// @file autograd.h
/// The public API, in the spirit of `torch.autograd`.

#include <optional>

#include "libengine/engine/executor.h"
#include "libengine/tensor/tensor.h"

namespace actorgrad {

/// `torch.autograd.backward`: accumulates the gradients of `tensors` into
/// the `.grad` of the leaves (only of `inputs` when given). `grad_tensors`
/// may be empty for scalar outputs. retain_graph defaults to create_graph.
void backward(const variable_list& tensors, const variable_list& grad_tensors = {},
              std::optional<bool> retain_graph = {}, bool create_graph = false,
              const variable_list& inputs = {}, Executor& executor = default_executor());

/// `torch.autograd.grad`: returns the gradients of `outputs` with respect to
/// `inputs` without touching `.grad`. An input that the outputs do not
/// depend on is an error unless allow_unused (then its result is undefined).
variable_list grad(const variable_list& outputs, const variable_list& inputs,
                   const variable_list& grad_outputs = {}, std::optional<bool> retain_graph = {},
                   bool create_graph = false, bool allow_unused = false,
                   Executor& executor = default_executor());

} // namespace actorgrad
