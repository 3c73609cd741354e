#pragma once
/// @file availability.h
/// Whether this process can run work on a device.

#include <string>

#include "actorgrad/device/device.h"

namespace actorgrad {

/// Empty when `d` can be served here; else why not, in words ("the CUDA
/// plugin libactorgrad_cuda.so was not found (tried ...)", "this machine has
/// 0 usable CUDA devices"). For a CUDA device, loads the CUDA plugin.
std::string device_unavailable(Device d);

} // namespace actorgrad
