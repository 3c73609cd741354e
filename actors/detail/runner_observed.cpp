// The Runner's paths that only an observed task takes (Runner::run picks
// run_observed; fed is called only while a node runs observed), kept apart
// from the dispatch loop in runner.cpp.
#include <utility>

#include "actorgrad/actors/detail/observation.h"
#include "actorgrad/actors/detail/runner.h"
#include "actorgrad/libengine/engine/detail/current_exception_or_unwind.h"

namespace actorgrad::detail {

void Runner::run_observed(ReadyTask& t, EngineObserver& observer) {
  GraphTaskBase& task = *t.graph_task;
  // The node's span covers its run and the delivery of its outputs, so the
  // messages it sends start inside it.
  const NodeInfo info = task.describe(t.node.get());
  observer.node_started(actor_, task, info);
  // Note [Feeds of nested calls]
  // wants_feeds_ belongs to the Runner, not to a task, and a node may make
  // a nested call that this Runner coordinates while the node runs. So the
  // flag is put back as it was, not cleared (a nested observed node must
  // not silence its caller's deliveries), and fed() asks the task for its
  // observer (a nested call started without one sees the flag set too).
  const bool outer_wants_feeds = std::exchange(wants_feeds_, true);
  NodeLaunches launches(observer, actor_, task, info);
  ScopedLaunchObserver launches_here(&launches);
  try {
    task.run(t, *this);
  } catch (...) {
    const std::exception_ptr error =
      current_exception_or_unwind(); // Note [A thread that exits inside a node]
    task.set_error(error);
    observer.error(actor_, task, error);
  }
  wants_feeds_ = outer_wants_feeds;
  observer.node_finished(actor_, task, info);
}

void Runner::fed(const GraphTaskBase& task, const void* node, std::uint32_t input_nr) {
  if (EngineObserver* observer = observer_of(task)) // Note [Feeds of nested calls]
    observer->node_fed(actor_, task, task.describe(node), input_nr);
}

} // namespace actorgrad::detail
