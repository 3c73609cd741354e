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
  if (d.index >= cuda::device_count())
    return cuda::usable_devices();
  return {};
}

} // namespace actorgrad
