#include "actorgrad/libengine/autograd/input_metadata.h"

#include "actorgrad/libengine/tensor/tensor.h"

namespace actorgrad {

InputMetadata::InputMetadata(const Tensor& t) : defined(t.defined()) {
  if (defined) {
    shape.assign(t.shape().begin(), t.shape().end());
    dtype = t.dtype();
    device = t.device();
    if (has_streams(device))
      stream = current_stream(device);
  }
}

std::string InputMetadata::describe() const {
  if (!defined)
    return "undefined";
  return dtype_name(dtype) + shape_str(sizes()) + " on " + device.str();
}

} // namespace actorgrad
