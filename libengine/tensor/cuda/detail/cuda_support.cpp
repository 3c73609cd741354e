#include "actorgrad/libengine/tensor/cuda/detail/cuda_support.h"

#include <stdexcept>
#include <string>

#include "actorgrad/device/cuda/caching_allocator.h"
#include "actorgrad/device/cuda/plugin_loader.h"
#include "actorgrad/libengine/tensor/tensor_impl.h"

namespace actorgrad::kernels::cuda::detail {

OnDevice::OnDevice(const char* op, Device d)
  : plugin(actorgrad::cuda::plugin_for(d)),
    kernels(*plugin.kernels), launch{op, current_stream(d), nullptr} {
  launch.native = plugin.native_stream(launch.stream);
}

Geometry geometry(const char* op, const Shape& shape, std::initializer_list<Shape> strides) {
  Geometry g;
  g.numel = numel_of(shape);
  const auto inputs = static_cast<int>(strides.size());
  // Walk from the innermost dim out, merging a dim into the one inside it
  // when every input steps over the inner one contiguously.
  Shape sizes;
  std::vector<Shape> steps(inputs);
  for (auto d = static_cast<std::int64_t>(shape.size()) - 1; d >= 0; --d) {
    if (shape[d] == 1)
      continue;
    bool merge = !sizes.empty();
    for (int j = 0; merge && j < inputs; ++j)
      merge = strides.begin()[j][d] == steps[j].back() * sizes.back();
    if (merge) {
      sizes.back() *= shape[d];
      continue;
    }
    sizes.push_back(shape[d]);
    for (int j = 0; j < inputs; ++j)
      steps[j].push_back(strides.begin()[j][d]);
  }
  if (sizes.size() > static_cast<std::size_t>(max_dims))
    throw std::invalid_argument(std::string(op) + ": " + std::to_string(sizes.size()) +
                                " dims after merging; CUDA kernels take at most " +
                                std::to_string(max_dims));
  g.rank = static_cast<int>(sizes.size());
  for (int d = 0; d < g.rank; ++d) { // sizes and steps are innermost first
    g.sizes[g.rank - 1 - d] = sizes[d];
    for (int j = 0; j < inputs; ++j)
      g.strides[j][g.rank - 1 - d] = steps[j][d];
  }
  return g;
}

std::shared_ptr<void> upload(const std::vector<std::int64_t>& index, Device d) {
  const std::size_t nbytes = index.size() * sizeof(std::int64_t);
  auto buffer = actorgrad::cuda::allocate(nbytes, d);
  if (nbytes > 0)
    actorgrad::cuda::plugin_for(d).copy_async(current_stream(d), buffer.get(), index.data(), nbytes,
                                              actorgrad::cuda::CopyKind::host_to_device);
  return buffer;
}

void copy_to_host(void* dst, const void* src, std::size_t nbytes, Device d) {
  if (nbytes == 0)
    return;
  const Stream stream = current_stream(d);
  actorgrad::cuda::plugin_for(d).copy_async(stream, dst, src, nbytes,
                                            actorgrad::cuda::CopyKind::device_to_host);
  synchronize(stream);
}

const void* data_of(const Tensor& t) { return t.impl()->raw(); }

void* mutable_data_of(const Tensor& t) { return t.impl()->raw(); }

} // namespace actorgrad::kernels::cuda::detail
