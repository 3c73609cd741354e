#include "actorgrad/actors/detail/device_worker.h"

#include "actorgrad/actors/detail/runner.h"
#include "actorgrad/device/guards.h"

namespace actorgrad::detail {

DeviceWorker::DeviceWorker(caf::actor_config& cfg, std::shared_ptr<EngineCore> core, Device device)
  : EngineActor(cfg), core_(std::move(core)), device_(device) {}

void DeviceWorker::act() {
  // The worker's device stays current on its thread (PyTorch's thread_init
  // calls set_device), so the DeviceGuard of each node it runs is a no-op.
  DeviceGuard current(device_);
  Runner runner(*core_, this, ObservedActor::Role::device_worker, ReadyQueue{{}, new_queue_id(), device_});
  runner.serve();
}

} // namespace actorgrad::detail
