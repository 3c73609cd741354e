#include "actorgrad/libengine/tensor/cuda/detail/cuda_support.h"

#include <stdexcept>
#include <string>

#include "actorgrad/device/cuda/caching_allocator.h"
#include "actorgrad/device/cuda/cuda_error.h"
#include "actorgrad/libengine/tensor/tensor_impl.h"

namespace actorgrad::kernels::cuda::detail {

Launch launch_on(const char* op, Device d) {
  return {op, d, actorgrad::cuda::native_stream(current_stream(d))};
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
    actorgrad::cuda::check(cudaMemcpyAsync(buffer.get(), index.data(), nbytes,
                                           cudaMemcpyHostToDevice, launch_on("upload", d).stream),
                           "cudaMemcpyAsync (index to device)", d);
  return buffer;
}

void copy_to_host(void* dst, const void* src, std::size_t nbytes, Device d) {
  if (nbytes == 0)
    return;
  const auto stream = launch_on("copy_to_host", d).stream;
  actorgrad::cuda::check(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToHost, stream),
                         "cudaMemcpyAsync (device to host)", d);
  actorgrad::cuda::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize", d);
}

const void* data_of(const Tensor& t) { return t.impl()->raw(); }

void* mutable_data_of(const Tensor& t) { return t.impl()->raw(); }

} // namespace actorgrad::kernels::cuda::detail
