#include "actorgrad/device/availability.h"

#include "actorgrad/device/cuda/cuda_backend.h"
#include "actorgrad/device/cuda/plugin_loader.h"

namespace actorgrad {

std::string device_unavailable(Device d) {
  if (d.index < 0)
    return "a negative device index";
  if (d.type != DeviceType::cuda)
    return {};
  if (cuda::find_plugin() == nullptr)
    return cuda::plugin_error();
  const int count = cuda::device_count();
  if (d.index >= count)
    return "this machine has " + std::to_string(count) + " usable CUDA device" +
           (count == 1 ? "" : "s");
  return {};
}

} // namespace actorgrad
