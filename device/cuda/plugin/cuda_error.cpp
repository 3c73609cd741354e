#include "actorgrad/device/cuda/plugin/cuda_error.h"

#include <stdexcept>
#include <string>

namespace actorgrad::cuda::plugin {

void check(cudaError_t err, const char* call, Device device) {
  if (err == cudaSuccess)
    return;
  (void)cudaGetLastError();
  throw std::runtime_error(std::string(call) + " on " + device.str() + ": " +
                           cudaGetErrorString(err));
}

} // namespace actorgrad::cuda::plugin
