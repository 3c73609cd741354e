#include "actorgrad/libengine/engine/executor.h"

#include <atomic>
#include <mutex>
#include <vector>

#include "actorgrad/libengine/engine/detail/current_graph_task.h"
#include "actorgrad/libengine/engine/reference_executor.h"

namespace actorgrad {

namespace {

std::atomic<Executor*> current{nullptr};

// Executors once installed stay alive for the process: default_executor()
// hands out references that a concurrent set_default_executor must not
// invalidate. They are never destroyed (an actor engine cannot be torn down
// during static destruction: see Note [The default engine is never
// destroyed] in actors/default_engine.cpp). Guarded by a mutex: this is
// start-up configuration, not the scheduling path.
Executor* keep_alive(std::shared_ptr<Executor> e) {
  static auto* mutex = new std::mutex;
  static auto* installed = new std::vector<std::shared_ptr<Executor>>;
  std::lock_guard<std::mutex> lock(*mutex);
  installed->push_back(std::move(e));
  return installed->back().get();
}

Executor* reference() {
  static Executor* ref = keep_alive(std::make_shared<ReferenceExecutor>());
  return ref;
}

} // namespace

Executor& default_executor() {
  if (GraphTaskBase* running = detail::current_graph_task(); running && running->executor)
    return *running->executor; // a reentrant call stays on the engine running its node
  Executor* e = current.load(std::memory_order_acquire);
  return e ? *e : *reference();
}

void set_default_executor(std::shared_ptr<Executor> e) {
  current.store(e ? keep_alive(std::move(e)) : reference(), std::memory_order_release);
}

} // namespace actorgrad
