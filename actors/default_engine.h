#pragma once
/// @file default_engine.h
/// The process-wide actor engine behind the public API.

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "actorgrad/actors/engine_config.h"
#include "actorgrad/device/device.h"

namespace actorgrad {

class Engine;

/// The devices an ACTORGRAD_DEVICES value names: "sim:2" is sim:0 and sim:1;
/// a comma-separated list names each ("sim:0,cuda:0"; "cpu" is skipped).
/// Throws std::invalid_argument naming an item that is not a device.
std::vector<Device> parse_devices(const std::string& text);

/// The EngineConfig::cpu_workers an environment variable `name` sets
/// (ACTORGRAD_CPU_WORKERS): 1 when it is unset or empty. Throws
/// std::invalid_argument naming the variable and its value when that is not
/// a whole number from 1 to 256.
std::size_t cpu_workers_from_env(const char* name = "ACTORGRAD_CPU_WORKERS");

/// `config` with the CPU lanes' settings of the environment: cpu_workers
/// from ACTORGRAD_CPU_WORKERS (cpu_workers_from_env) and cpu_spread_branch
/// from ACTORGRAD_CPU_SPREAD_BRANCH (1 to 999; unset keeps `config`'s).
/// Throws std::invalid_argument naming a variable whose value is not that.
EngineConfig cpu_lanes_from_env(EngineConfig config);

/// The process-wide Engine, created on first use. It serves the devices
/// named by ACTORGRAD_DEVICES ("sim:2" serves sim:0 and sim:1; "sim:0,cuda:0"
/// those two), or sim:0 to sim:3 when it is unset, and runs CPU nodes on
/// ACTORGRAD_CPU_WORKERS threads (cpu_lanes_from_env). A value that cannot be
/// parsed, or names a device this process cannot serve, throws
/// std::invalid_argument naming it (each first use tries again). Linking
/// actorgrad_actors installs it as the default executor, so
/// actorgrad::backward / grad / Tensor::backward run on actors.
Engine& default_engine();

/// Makes default_engine() the default executor again (after a test or tool
/// switched to the reference executor).
void use_actor_engine();

/// Makes the sequential ReferenceExecutor the default executor.
void use_reference_executor();

} // namespace actorgrad
