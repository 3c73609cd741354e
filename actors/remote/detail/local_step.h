#pragma once
/// @file local_step.h
/// One process's part of a distributed backward: a local pass from some
/// roots that captures the gradients of the leaves and of the receive
/// nodes it reaches.
/// Internal (actors/remote/detail/, not installed).

#include <memory>
#include <vector>

#include "actorgrad/actors/remote/detail/dist_nodes.h"
#include "actorgrad/libengine/engine/executor.h"

namespace actorgrad::remote::detail {

/// What a local pass produced.
struct LocalStep {
  /// The gradient of one leaf reached by the pass.
  struct Leaf {
    /// The leaf's AccumulateGrad (identifies the leaf in a context).
    std::shared_ptr<Node> accumulator;
    Tensor leaf;
    Tensor grad;
  };
  /// A gradient to send to the process that owns the matching send node.
  struct Outgoing {
    std::shared_ptr<RecvBackward> recv;
    Tensor grad;
  };
  std::vector<Leaf> leaves;
  std::vector<Outgoing> outgoing;
  /// The pass's GraphTask id when a recording watched it (0: none, or no
  /// pass ran): the traces name it with the gradients it sent.
  std::uint64_t graph_task = 0;
};

/// Runs the backward pass from `roots` with `root_grads` on `executor`
/// (retaining the graph: a context may run one graph part several times),
/// with anomaly mode set to `anomaly` on this thread. Leaves are not
/// accumulated into `.grad`: their gradients, and those reaching each
/// RecvBackward, are captured and returned (undefined ones dropped).
/// Throws what the pass throws.
LocalStep run_local_step(Executor& executor, const edge_list& roots, variable_list root_grads,
                         bool anomaly);

} // namespace actorgrad::remote::detail
