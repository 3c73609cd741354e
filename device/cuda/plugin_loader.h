#pragma once
/// @file plugin_loader.h
/// Loading the CUDA plugin (plugin.h) on the first use of a CUDA device.
///
/// The first call of either function below loads it, once per process
/// (thread-safe; never unloaded), from the first of these that exists:
///   1. $ACTORGRAD_CUDA_PLUGIN, a path to the file (only it is tried);
///   2. the folder of the binary or shared library that holds the core
///      (found with dladdr), then `../<libdir>` from it, as after
///      `cmake --install` (bin/actorgrad finds lib/libactorgrad_cuda.so);
///   3. the dynamic linker's search path, by name (LD_LIBRARY_PATH, the
///      binary's RUNPATH, which in the build tree names the plugin's folder,
///      ld.so.cache, /usr/lib);
///   4. the configured install libdir.
/// A file that exists but does not load (a missing libcudart, an ABI
/// mismatch) ends the search with its error. The build tree's RUNPATH comes
/// before the install libdir so that a build never loads an older
/// installed plugin.

#include <string>

#include "actorgrad/device/cuda/plugin.h"
#include "actorgrad/device/device.h"

namespace actorgrad::cuda {

/// The plugin, or null when it cannot be loaded (absent, or failing to
/// load: plugin_error() says why).
const Plugin* find_plugin();

/// The plugin, to serve `d`. Throws std::runtime_error naming `d`, the
/// files tried and the loader's error when the plugin cannot be loaded, and
/// std::invalid_argument naming `d` and the number of GPUs when `d` is not
/// a visible CUDA device.
const Plugin& plugin_for(Device d);

/// Why the plugin could not be loaded, in words (the files tried and
/// dlerror()); empty once it is loaded.
std::string plugin_error();

/// "this machine has N usable CUDA devices", with the runtime's reason when
/// N is 0 ("... (cudaGetDeviceCount: no CUDA-capable device is detected)").
/// Needs the plugin loaded (find_plugin() not null).
std::string usable_devices();

} // namespace actorgrad::cuda
