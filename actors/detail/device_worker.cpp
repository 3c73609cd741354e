#include "actorgrad/actors/detail/device_worker.h"

#include "actorgrad/actors/detail/runner.h"
#include "actorgrad/device/guards.h"

namespace actorgrad::detail {

DeviceWorker::DeviceWorker(caf::actor_config& cfg, std::shared_ptr<EngineCore> core, Device device,
                           ObservedActor::Role role)
  : EngineActor(cfg), core_(std::move(core)), device_(device), role_(role) {}

void DeviceWorker::act() {
  // The worker's device stays current on its thread (PyTorch's thread_init
  // calls set_device), so the DeviceGuard of each node it runs is a no-op.
  DeviceGuard current(device_);
  Runner runner(*core_, this, role_, ReadyQueue{{}, new_queue_id(), device_});
  runner.serve();
}

} // namespace actorgrad::detail
