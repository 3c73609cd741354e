#include "actors/detail/device_worker.h"

#include "actors/detail/task_runner.h"

namespace actorgrad::detail {

DeviceWorker::DeviceWorker(caf::actor_config& cfg, std::shared_ptr<EngineCore> core, Device device)
  : caf::blocking_actor(cfg), core_(std::move(core)), device_(device) {}

void DeviceWorker::act() {
  TaskRunner runner(*core_, this, device_);
  runner.serve();
}

} // namespace actorgrad::detail
