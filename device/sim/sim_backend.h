#pragma once
/// @file sim_backend.h
/// The sim backend: streams, events and kernel launches of simulated devices.

#include <functional>
#include <string>
#include <vector>

#include "actorgrad/device/launch_observer.h"
#include "actorgrad/device/sim/race_detector.h"
#include "actorgrad/device/sim/sim_config.h"
#include "actorgrad/device/stream_backend.h"

namespace actorgrad::sim {

/// The sim device type's stream backend (process-wide, never destroyed).
StreamBackend& backend();

/// True when kernels are asynchronous (SimConfig::async).
bool is_async();
/// True when accesses are checked (SimConfig::async and detect_races).
bool detecting_races();

/// Enqueues `kernel` (named `op`, a string literal; `kind` a kernel or a
/// copy) on `s`; with the sim synchronous, runs it now. `accesses` are the
/// buffers it reads and writes, reads first, for the race detector (empty
/// when not detecting_races()). The kernel must own (hold handles to)
/// everything it touches: it runs after launch returns. The calling
/// thread's launch_observer(), if any, sees it launched and run.
void launch(Stream s, const char* op, DeviceWork kind, const std::vector<Access>& accesses,
            std::function<void()> kernel);

/// The host is about to touch a buffer of device `d` (`op` names why):
/// synchronizes this thread's current stream of `d`, as a device-to-host
/// copy does, then checks the access. Nothing to do on a stream thread (a
/// kernel body) or with the sim synchronous.
void host_access(Device d, const Access& access, const char* op);

/// True on a sim stream's executor thread, i.e. inside a kernel body.
bool on_stream_thread();

} // namespace actorgrad::sim
