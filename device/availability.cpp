#include "actorgrad/device/availability.h"

#ifdef ACTORGRAD_WITH_CUDA
#include "actorgrad/device/cuda/cuda_backend.h"
#endif

namespace actorgrad {

std::string device_unavailable(Device d) {
  if (d.index < 0)
    return "a negative device index";
  if (d.type != DeviceType::cuda)
    return {};
#ifdef ACTORGRAD_WITH_CUDA
  const int count = cuda::device_count();
  if (d.index >= count)
    return "this machine has " + std::to_string(count) + " usable CUDA device" +
           (count == 1 ? "" : "s");
  return {};
#else
  return "this build of actorgrad has no CUDA backend (configure with the CUDA toolkit and "
         "-DACTORGRAD_CUDA=ON)";
#endif
}

} // namespace actorgrad
