#include "libengine/engine/reference_executor.h"

#include "libengine/engine/evaluate.h"

namespace actorgrad {

namespace {
thread_local int reference_depth = 0;
} // namespace

variable_list ReferenceExecutor::execute(const edge_list& roots, variable_list root_grads,
                                         const ExecuteOptions& options,
                                         const edge_list& outputs) {
  auto [task, first] =
    GraphTask::create(roots, std::move(root_grads), options, outputs, reference_depth);
  task->executor = this;
  struct DepthGuard {
    DepthGuard() { ++reference_depth; }
    ~DepthGuard() { --reference_depth; }
  } depth_guard;
  ReadyHeap heap;
  heap.push(std::move(first));
  while (!heap.empty()) {
    NodeTask t = heap.pop();
    if (task->has_error())
      continue;
    try {
      variable_list grads = evaluate_function(*task, *t.fn, std::move(t.inputs));
      for (std::size_t i = 0; i < grads.size(); ++i) {
        const Edge& next = t.fn->next_edge(i);
        if (next.is_valid())
          if (auto ready = task->accept(next, std::move(grads[i]), t.fn->stream()))
            heap.push(std::move(*ready));
      }
    } catch (...) {
      task->set_error(std::current_exception());
    }
  }
  return task->finish();
}

} // namespace actorgrad
