#pragma once
/// @file default_engine.h
/// The process-wide actor engine behind the public API.

#include <memory>

namespace actorgrad {

class Engine;

/// The process-wide Engine (created on first use with the CPU only, or
/// with the devices named by ACTORGRAD_DEVICES, e.g. "sim:2"). Linking
/// actorgrad_actors installs it as the default executor, so
/// actorgrad::backward / grad / Tensor::backward run on actors.
Engine& default_engine();

/// Makes default_engine() the default executor again (after a test or tool
/// switched to the reference executor).
void use_actor_engine();

/// Makes the sequential ReferenceExecutor the default executor.
void use_reference_executor();

} // namespace actorgrad
