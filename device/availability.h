#pragma once
/// @file availability.h
/// Whether this process can run work on a device.

#include <string>

#include "actorgrad/device/device.h"

namespace actorgrad {

/// Empty when `d` can be served here; else why not, in words
/// ("the CUDA backend was not built", "this machine has 0 CUDA devices").
std::string device_unavailable(Device d);

} // namespace actorgrad
