#include "actorgrad/actors/detail/check_config.h"

#include <stdexcept>
#include <string>

#include "actorgrad/device/availability.h"

namespace actorgrad::detail {

void check_config(const EngineConfig& cfg) {
  if (cfg.scheduler_threads < 1)
    throw std::invalid_argument("EngineConfig.scheduler_threads is 0: the actor system needs at "
                                "least 1 scheduler thread");
  if (cfg.spin_before_block.count() < 0)
    throw std::invalid_argument("EngineConfig.spin_before_block is " +
                                std::to_string(cfg.spin_before_block.count()) +
                                " ns: it must be 0 (block at once) or more");
  if (cfg.cpu_worker_spin.count() < 0)
    throw std::invalid_argument("EngineConfig.cpu_worker_spin is " +
                                std::to_string(cfg.cpu_worker_spin.count()) +
                                " ns: it must be 0 (block at once) or more");
  if (cfg.max_async_coordinators < 1)
    throw std::invalid_argument("EngineConfig.max_async_coordinators is 0: asynchronous calls "
                                "need at least 1 coordinator");
  if (cfg.min_async_coordinators > cfg.max_async_coordinators)
    throw std::invalid_argument(
      "EngineConfig.min_async_coordinators is " + std::to_string(cfg.min_async_coordinators) +
      ", more than max_async_coordinators (" + std::to_string(cfg.max_async_coordinators) + ")");
  if (cfg.async_coordinator_idle_time.count() <= 0)
    throw std::invalid_argument("EngineConfig.async_coordinator_idle_time is " +
                                std::to_string(cfg.async_coordinator_idle_time.count()) +
                                " ms: it must be more than 0");
  if (cfg.cpu_workers < 1 || cfg.cpu_workers > 256)
    throw std::invalid_argument("EngineConfig.cpu_workers is " + std::to_string(cfg.cpu_workers) +
                                ": it must be 1 (the caller alone) to 256");
  if (cfg.cpu_spread_branch < 1)
    throw std::invalid_argument("EngineConfig.cpu_spread_branch is 0: it must be 1 or more");
  if (cfg.max_recursion_depth < 1)
    throw std::invalid_argument("EngineConfig.max_recursion_depth is " +
                                std::to_string(cfg.max_recursion_depth) +
                                ": it must be at least 1 (reentrant calls nested on one thread)");
  for (std::size_t i = 0; i < cfg.devices.size(); ++i) {
    const Device d = cfg.devices[i];
    if (d.is_cpu())
      throw std::invalid_argument(
        "EngineConfig.devices lists cpu: the caller's thread runs CPU nodes");
    for (std::size_t j = 0; j < i; ++j)
      if (cfg.devices[j] == d)
        throw std::invalid_argument("EngineConfig.devices lists " + d.str() + " twice");
    if (std::string why = device_unavailable(d); !why.empty())
      throw std::invalid_argument("EngineConfig.devices lists " + d.str() +
                                  ", which cannot be served: " + why);
  }
}

} // namespace actorgrad::detail
