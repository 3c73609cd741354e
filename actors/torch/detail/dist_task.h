#pragma once
/// @file dist_task.h
/// A distributed backward pass's task in this process: built from the
/// context's send functions (and the call's roots), run on the actor
/// engine, its leaf gradients added into the context (Note [Distributed
/// autograd on actors] in dist_engine.cpp). Internal.

#include <torch/csrc/autograd/function.h>

#include <memory>

#include "actorgrad/actors/torch/detail/dist_autograd_abi.h"
#include "actorgrad/libengine/engine/detail/ready_task.h"

namespace actorgrad::torch::detail {

class Pass;

/// A pass's task, built and not run yet (open_task).
struct OpenTask {
  actorgrad::detail::ReadyTask first;
  /// Every send function of the context, then the root (if any).
  ::torch::autograd::edge_list reach;
  /// Each AccumulateGrad the task reaches: the gradients it captures.
  ::torch::autograd::edge_list accumulate;
  bool keep_graph = false;
};

/// Builds `pass`'s task for `ctx`: from `root` (null: none) with `grads`
/// and from every send function of the context, `arrived` (null: none) the
/// send function whose gradient starts it, keeping the graph as
/// `keep_graph` says; gives `ctx` the libtorch GraphTask its
/// RecvRpcBackward nodes read and report to (a failing gradient RPC or the
/// context's release fails the pass). Null when the task has a device: the
/// pass goes to libtorch's DistEngine.
std::unique_ptr<OpenTask> open_task(::torch::distributed::autograd::DistAutogradContext& ctx,
                                    const std::shared_ptr<Pass>& pass,
                                    const ::torch::autograd::Edge* root,
                                    ::torch::autograd::variable_list&& grads,
                                    const ::torch::autograd::Node* arrived, bool keep_graph);

/// Runs `pass`'s task (`open`) on this thread's coordinator (the caller, or
/// a pooled one) until it ended; then adds the leaves' gradients into the
/// context, unless it was released meanwhile.
void run_task(const std::weak_ptr<::torch::distributed::autograd::DistAutogradContext>& ctx,
              Pass& pass, OpenTask& open);

} // namespace actorgrad::torch::detail
