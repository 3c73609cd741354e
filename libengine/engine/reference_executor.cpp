#include "libengine/engine/reference_executor.h"

#include "libengine/engine/errors.h"
#include "libengine/engine/ready_heap.h"

namespace actorgrad {

namespace {

thread_local int reference_depth = 0;

/// Owns every node: a gradient never leaves this thread.
class LocalDispatch final : public Dispatch {
public:
  explicit LocalDispatch(ReadyHeap& heap) : heap_(heap) { owns_all_ = true; }
  void ready(ReadyTask&& t) override { heap_.push(std::move(t)); }
  void send(GraphTaskBase&, SentGrad&&) override {
    throw EngineError("internal: the reference executor owns every node, nothing is sent");
  }

private:
  ReadyHeap& heap_;
};

} // namespace

void ReferenceExecutor::run(GraphTaskBase& task, ReadyTask&& first) {
  task.executor = this;
  struct DepthGuard {
    DepthGuard() { ++reference_depth; }
    ~DepthGuard() { --reference_depth; }
  } depth_guard;
  ReadyHeap heap;
  LocalDispatch dispatch(heap);
  heap.push(std::move(first));
  while (!heap.empty()) {
    ReadyTask t = heap.pop();
    if (task.has_error())
      continue;
    try {
      t.graph_task->run(t, dispatch);
    } catch (...) {
      task.set_error(std::current_exception());
    }
  }
}

variable_list ReferenceExecutor::execute(const edge_list& roots, variable_list root_grads,
                                         const ExecuteOptions& options,
                                         const edge_list& outputs) {
  auto [task, first] =
    GraphTask::create(roots, std::move(root_grads), options, outputs, reference_depth);
  run(*task, std::move(first));
  return task->finish();
}

} // namespace actorgrad
