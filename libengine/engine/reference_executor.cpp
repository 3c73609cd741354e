#include "actorgrad/libengine/engine/reference_executor.h"

#include "actorgrad/libengine/engine/detail/graph_task.h"

namespace actorgrad {

namespace {

thread_local int reference_depth = 0;

} // namespace

void ReferenceExecutor::run(GraphTaskBase& task, detail::ReadyTask&& first) {
  task.executor = this;
  struct DepthGuard {
    DepthGuard() { ++reference_depth; }
    ~DepthGuard() { --reference_depth; }
  } depth_guard;
  task.run_all_here(std::move(first));
}

variable_list ReferenceExecutor::execute(const edge_list& roots, variable_list root_grads,
                                         const ExecuteOptions& options, const edge_list& outputs) {
  auto [task, first] =
    detail::GraphTask::create(roots, std::move(root_grads), options, outputs, reference_depth);
  run(*task, std::move(first));
  return task->finish();
}

} // namespace actorgrad
