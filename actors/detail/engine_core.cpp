#include "actorgrad/actors/detail/engine_core.h"

#include "actorgrad/actors/detail/device_worker.h"

namespace actorgrad::detail {

EngineCore::EngineCore(caf::actor_system& sys, EngineConfig cfg)
  : system(sys), config(std::move(cfg)), workers(config.devices), observers(config.observer) {}

void EngineCore::start_workers() {
  // The registry shares the core's lifetime: a dying worker's supervision
  // reaches it only while the core exists.
  workers.start_all(
    [this](Device d) { return start<DeviceWorker>("actorgrad.dev", shared_from_this(), d); },
    std::shared_ptr<WorkerRegistry>(shared_from_this(), &workers));
}

} // namespace actorgrad::detail
