#pragma once
/// @file autograd.h
/// The public API, in the spirit of `torch.autograd`.

#include <optional>

#include "actorgrad/libengine/engine/executor.h"
#include "actorgrad/libengine/tensor/tensor.h"

namespace actorgrad {

/// The keyword arguments of `torch.autograd.backward`, defaulted as there:
/// `backward({loss}, {.retain_graph = true, .inputs = {w}})`.
struct BackwardOptions {
  /// One gradient per tensor; may be empty (or hold undefined entries) for
  /// one-element tensors, whose gradient is then 1.
  variable_list grad_tensors{};
  /// Keep the graph for another backward; defaults to create_graph.
  std::optional<bool> retain_graph{};
  /// Record the backward pass, for higher-order gradients.
  bool create_graph = false;
  /// Accumulate only into these tensors' `.grad` (every leaf when empty).
  variable_list inputs{};
};

/// The keyword arguments of `torch.autograd.grad`, defaulted as there:
/// `grad({y}, {x}, {.create_graph = true})`.
struct GradOptions {
  /// One gradient per output; may be empty (or hold undefined entries) for
  /// one-element outputs, whose gradient is then 1.
  variable_list grad_outputs{};
  /// Keep the graph for another backward; defaults to create_graph.
  std::optional<bool> retain_graph{};
  /// Record the backward pass, for higher-order gradients.
  bool create_graph = false;
  /// An input that the outputs do not depend on gets an undefined result
  /// instead of an error.
  bool allow_unused = false;
};

/// `torch.autograd.backward`: accumulates the gradients of `tensors` into
/// the `.grad` of the leaves (only of `options.inputs` when given), on
/// `executor` (an Engine, a ReferenceExecutor).
void backward(const variable_list& tensors, const BackwardOptions& options = {},
              Executor& executor = default_executor());

/// `torch.autograd.grad`: returns the gradients of `outputs` with respect to
/// `inputs` without touching `.grad`, computed on `executor`. An input that
/// the outputs do not depend on is an error unless `options.allow_unused`.
variable_list grad(const variable_list& outputs, const variable_list& inputs,
                   const GradOptions& options = {}, Executor& executor = default_executor());

} // namespace actorgrad
