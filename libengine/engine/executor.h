#pragma once
/// @file executor.h
/// What runs a GraphTask: the reference executor here, the actor engine in actors/.

#include <memory>

#include "actorgrad/libengine/autograd/edge.h"
#include "actorgrad/libengine/engine/execute_options.h"
#include "actorgrad/libengine/tensor/tensor.h"

namespace actorgrad {

/// Runs backward calls. Implementations: ReferenceExecutor (one thread,
/// one ready heap) and the actor engine (actors/engine.h).
class Executor {
public:
  virtual ~Executor() = default;

  /// Runs the backward pass from `roots` with `root_grads` to completion and
  /// returns the captured gradients of `outputs` (grad(): accumulate_grad is
  /// false) or an empty list. Rethrows the first error of any node.
  virtual variable_list execute(const edge_list& roots, variable_list root_grads,
                                const ExecuteOptions& options, const edge_list& outputs) = 0;
};

/// The executor the public API and Tensor::backward use: inside a node, the
/// executor running that node (so a reentrant call stays on its engine);
/// elsewhere the one last set by set_default_executor, else a
/// ReferenceExecutor.
Executor& default_executor();

/// Installs `e` as the default executor (null restores the reference one).
void set_default_executor(std::shared_ptr<Executor> e);

} // namespace actorgrad
