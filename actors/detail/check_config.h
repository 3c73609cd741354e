#pragma once
/// @file check_config.h
/// The checks an EngineConfig passes before an Engine starts. Internal.

#include "actorgrad/actors/engine_config.h"

namespace actorgrad::detail {

/// Throws std::invalid_argument naming the first bad setting of `cfg`
/// (Engine's constructors, before anything is started).
void check_config(const EngineConfig& cfg);

} // namespace actorgrad::detail
