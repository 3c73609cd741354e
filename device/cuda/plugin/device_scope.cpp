#include "actorgrad/device/cuda/plugin/device_scope.h"

#include "actorgrad/device/cuda/plugin/cuda_error.h"

namespace actorgrad::cuda::plugin {

DeviceScope::DeviceScope(Device d) {
  int current = 0;
  check(cudaGetDevice(&current), "cudaGetDevice", d);
  if (current == d.index)
    return;
  check(cudaSetDevice(d.index), "cudaSetDevice", d);
  previous_ = current;
}

DeviceScope::~DeviceScope() {
  if (previous_ >= 0)
    (void)cudaSetDevice(previous_); // it was current a moment ago: cannot fail but at exit
}

} // namespace actorgrad::cuda::plugin
