#pragma once
/// @file stream_sync.h
/// How the engine orders one stream after another, and the test-only switch that stops it.
/// Internal (libengine/engine/detail/, not installed).

#include "actorgrad/device/event.h"

namespace actorgrad::detail {

/// Makes work enqueued on `waiter` from now on wait for the work enqueued
/// on `producer` so far: through `ready` when it was recorded on `producer`
/// (a gradient that crossed actors carries one), else through an event
/// recorded now. Nothing when the two are the same stream, or when
/// synchronization is switched off for a test.
void wait_for_stream(Stream waiter, Stream producer, const Event* ready = nullptr);

/// Whether the engine inserts its stream waits (InputBuffer accumulation,
/// root gradients, post-processing). Always true except in the test that
/// shows the race detector catches their absence.
bool stream_sync_enabled();

/// Test-only: switches the engine's stream waits off (false) or on.
void set_stream_sync_for_testing(bool enabled);

} // namespace actorgrad::detail
