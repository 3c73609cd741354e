#pragma once
/// @file call_args.h
/// Turning the public API's tensors into an executor's edges and gradients.
/// Internal (libengine/engine/detail/, not installed).

#include <cstddef>
#include <optional>

#include "actorgrad/libengine/engine/detail/graph_task.h"
#include "actorgrad/libengine/engine/detail/spare_stack.h"

namespace actorgrad::detail {

/// The arguments of Executor::execute for one backward()/grad() call.
struct BackwardCall {
  edge_list roots;
  variable_list root_grads;
  ExecuteOptions options;
  edge_list outputs;

  /// Keeps the storage of `roots` and `outputs` (emptied) for this thread's
  /// next calls, once the executor returned (Note [The API's edge lists] in
  /// autograd.cpp); make_backward_call and make_grad_call take it.
  void keep_edge_lists();
};

/// This thread's kept edge lists (Note [The API's edge lists] in
/// autograd.cpp): two a call, for nested_calls_with_spares calls nested on one
/// thread, of at most 8 edges.
using SpareEdgeLists = SpareVectors<edge_list, 2 * nested_calls_with_spares, 8>;

/// Checks the arguments of backward() (clear errors naming the bad tensor)
/// and builds the call.
BackwardCall make_backward_call(const variable_list& tensors, const variable_list& grad_tensors,
                                std::optional<bool> retain_graph, bool create_graph,
                                const variable_list& inputs);

/// Checks the arguments of grad() and builds the call.
BackwardCall make_grad_call(const variable_list& outputs, const variable_list& inputs,
                            const variable_list& grad_outputs, std::optional<bool> retain_graph,
                            bool create_graph);

/// The results of grad(): one per input; an undefined one is an error
/// naming the input unless allow_unused.
variable_list check_grad_results(variable_list results, const variable_list& inputs,
                                 bool allow_unused);

} // namespace actorgrad::detail
