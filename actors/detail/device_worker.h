#pragma once
/// @file device_worker.h
/// The actor that runs the nodes of one device. Internal.

#include <memory>

#include "actorgrad/actors/detail/engine_actor.h"
#include "actorgrad/actors/detail/engine_core.h"
#include "actorgrad/actors/observer.h"

namespace actorgrad::detail {

/// One per non-CPU device, shared by every GraphTask: a blocking actor (its
/// own thread) whose heap holds the ready nodes of that device for all
/// tasks. Runs Runner::serve until it gets msg::Shutdown. A CPU worker is
/// one of the CPU (`role` cpu_worker): the lanes of spread calls hand it
/// ready CPU nodes (Note [Parallel CPU nodes] in cpu_lanes.h).
class DeviceWorker final : public EngineActor {
public:
  DeviceWorker(caf::actor_config& cfg, std::shared_ptr<EngineCore> core, Device device,
               ObservedActor::Role role = ObservedActor::Role::device_worker);
  void act() override;
  const char* name() const override { return "actorgrad.device_worker"; }

private:
  std::shared_ptr<EngineCore> core_;
  Device device_;
  ObservedActor::Role role_;
};

} // namespace actorgrad::detail
