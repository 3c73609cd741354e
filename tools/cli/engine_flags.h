#pragma once
/// @file engine_flags.h
/// The actor engine's settings that `actorgrad train` and `actorgrad trace`
/// both take from their command line: `--devices` (flags.h device_set) and
/// `--cpu-workers`.

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "actorgrad/actors/engine_config.h"

namespace actorgrad::cli {

/// Adds `--cpu-workers N` to `cmd`, parsing into `n`: the threads that run a
/// backward's CPU nodes, the caller included (EngineConfig::cpu_workers,
/// whose range [1, 256] it checks).
CLI::Option* add_cpu_workers(CLI::App& cmd, std::int64_t& n);

/// The EngineConfig of a `--devices` value and a `--cpu-workers` value.
EngineConfig engine_config(const std::string& devices, std::int64_t cpu_workers);

} // namespace actorgrad::cli
