#pragma once
/// @file reference_executor.h
/// The sequential reference: one thread, one ready heap.

#include "actorgrad/libengine/engine/executor.h"
#include "actorgrad/libengine/engine/graph_task_base.h"

namespace actorgrad {

namespace detail {
struct ReadyTask; // internal (libengine/engine/detail/ready_task.h)
} // namespace detail

/// Runs every node of a backward call on the calling thread, in the ready
/// order, with the same GraphTask algorithms as the actor engine: the
/// reference the engines are compared with in tests.
class ReferenceExecutor final : public Executor {
public:
  variable_list execute(const edge_list& roots, variable_list root_grads,
                        const ExecuteOptions& options, const edge_list& outputs) override;

  /// Runs `task` (of any graph type) from `first` to completion here; the
  /// caller then reads its results (BasicGraphTask::finish).
  void run(GraphTaskBase& task, detail::ReadyTask&& first);
};

} // namespace actorgrad
