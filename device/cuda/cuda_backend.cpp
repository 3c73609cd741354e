#include "actorgrad/device/cuda/cuda_backend.h"

#include "actorgrad/device/cuda/plugin_loader.h"

namespace actorgrad::cuda {

int device_count() {
  static const int count = [] {
    const Plugin* p = find_plugin();
    return p != nullptr ? p->device_count() : 0;
  }();
  return count;
}

bool available() { return device_count() > 0; }

cudaStream_t native_stream(Stream s) { return plugin_for(s.device).native_stream(s); }

} // namespace actorgrad::cuda
