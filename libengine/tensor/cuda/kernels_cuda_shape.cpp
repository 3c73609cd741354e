/// @file kernels_cuda_shape.cpp
/// CUDA shape changes and data movement: expand, transpose, row selection
/// and scatter, cat, copies, casts and device moves.

#include "actorgrad/libengine/tensor/cuda/kernels_cuda.h"

#include <optional>
#include <utility>

#include "actorgrad/device/event.h"
#include "actorgrad/libengine/tensor/cuda/detail/cuda_support.h"
#include "actorgrad/libengine/tensor/detail/kernel_checks.h"
#include "actorgrad/libengine/tensor/pending_reads.h"

namespace actorgrad::kernels::cuda {

using namespace kernels::detail;
using namespace cuda::detail;

namespace {

std::size_t nbytes_of(const Tensor& t) {
  return static_cast<std::size_t>(t.numel()) * element_size(t.dtype());
}

/// A contiguous copy of `src` read through `strides` (in the rank of
/// `shape`), starting `base` elements into it.
Tensor gather(const char* op, const Tensor& src, const Shape& shape, const Shape& strides,
              std::int64_t base = 0) {
  const OnDevice on(op, src.device());
  auto out = empty_like(src, shape);
  const auto* first = static_cast<const char*>(data_of(src)) + base * element_size(src.dtype());
  on.kernels.unary(on.launch, UnaryOp::copy, src.dtype(), 0.0, geometry(op, shape, {strides}),
                   first, mutable_data_of(out));
  return out;
}

/// Zeros of `shape`; row j of `src` is added to row index[j] along `dim`.
/// Arguments are already checked.
Tensor scatter_add(const char* op, const Shape& shape, std::int64_t dim,
                   const std::vector<std::int64_t>& index, const Tensor& src) {
  const OnDevice on(op, src.device());
  auto out = empty_like(src, shape);
  on.plugin.memset_async(on.launch.stream, mutable_data_of(out), 0, nbytes_of(out));
  const auto split = split_at(shape, dim);
  const auto rows = upload(index, src.device());
  on.kernels.scatter_add_rows(on.launch, src.dtype(), split.outer, split.size, split.inner,
                              static_cast<const std::int64_t*>(rows.get()),
                              static_cast<std::int64_t>(index.size()), data_of(src),
                              mutable_data_of(out));
  return out;
}

/// A copy of `a` on CUDA device `to`, from CUDA device a.device(). Across
/// devices the copy runs on the source's current stream between two event
/// barriers with the destination's current stream, as in PyTorch.
Tensor copy_between_devices(const Tensor& a, Device to) {
  const Device from = a.device();
  const OnDevice on("to_device", from);
  auto out = Tensor::empty(a.shape(), a.dtype(), to);
  if (from == to) {
    on.plugin.copy_async(on.launch.stream, mutable_data_of(out), data_of(a), nbytes_of(a),
                         actorgrad::cuda::CopyKind::device_to_device);
    return out;
  }
  const Stream src = current_stream(from);
  const Stream dst = current_stream(to);
  Event::recorded_on(dst).block(src); // earlier work on `to` is done with the memory
  on.plugin.copy_peer_async(on.launch.stream, mutable_data_of(out), to, data_of(a), nbytes_of(a));
  record_async_read(a, src);          // Note [Pending reads]
  Event::recorded_on(src).block(dst); // later work on `to` sees the copy
  return out;
}

} // namespace

Tensor expand(const Tensor& a, const Shape& shape) {
  check_expand(a, shape);
  return gather("expand", a, shape, broadcast_strides(a.shape(), shape));
}

Tensor transpose(const Tensor& a, std::int64_t d0, std::int64_t d1) {
  check_defined("transpose", a);
  const auto i = wrap_dim(d0, a.dim());
  const auto j = wrap_dim(d1, a.dim());
  Shape shape = a.shape();
  Shape strides = a.strides();
  std::swap(shape[i], shape[j]);
  std::swap(strides[i], strides[j]);
  return gather("transpose", a, shape, strides);
}

Tensor index_select(const Tensor& a, std::int64_t dim, const std::vector<std::int64_t>& index) {
  check_defined("index_select", a);
  const auto d = wrap_dim(dim, a.dim());
  check_indices("index_select", index, a.size(d), dim);
  Shape shape = a.shape();
  shape[d] = static_cast<std::int64_t>(index.size());
  const OnDevice on("index_select", a.device());
  auto out = empty_like(a, shape);
  if (out.numel() == 0)
    return out;
  const auto split = split_at(a.shape(), d);
  const auto rows = upload(index, a.device());
  on.kernels.gather_rows(on.launch, a.dtype(), split.outer, split.size, split.inner,
                         static_cast<const std::int64_t*>(rows.get()), shape[d], data_of(a),
                         mutable_data_of(out));
  return out;
}

Tensor index_add_into_zeros(const Shape& shape, std::int64_t dim,
                            const std::vector<std::int64_t>& index, const Tensor& src) {
  const auto d = check_scatter_source("index_add_into_zeros", shape, dim, src,
                                      static_cast<std::int64_t>(index.size()));
  check_indices("index_add_into_zeros", index, shape[d], dim);
  return scatter_add("index_add_into_zeros", shape, d, index, src);
}

Tensor narrow(const Tensor& a, std::int64_t dim, std::int64_t start, std::int64_t length) {
  check_defined("narrow", a);
  const auto d = wrap_dim(dim, a.dim());
  check_range("narrow", dim, start, length, a.size(d));
  Shape shape = a.shape();
  shape[d] = length;
  return gather("narrow", a, shape, a.strides(), start * a.strides()[d]);
}

Tensor narrow_into_zeros(const Shape& shape, std::int64_t dim, std::int64_t start,
                         const Tensor& src) {
  const auto d = check_scatter_source("narrow_into_zeros", shape, dim, src, std::nullopt);
  const auto length = src.size(d);
  check_range("narrow_into_zeros", dim, start, length, shape[d]);
  return scatter_add("narrow_into_zeros", shape, d, iota(start, length), src);
}

Tensor cat(const std::vector<Tensor>& tensors, std::int64_t dim) {
  const auto c = cat_dims(tensors, dim);
  const Tensor& first = tensors[0];
  const OnDevice on("cat", first.device());
  auto out = empty_like(first, c.out);
  const auto split = split_at(c.out, c.dim);
  const auto row_bytes = static_cast<std::size_t>(split.inner) * element_size(first.dtype());
  std::int64_t start = 0; // where the next input's rows go along dim
  for (const auto& t : tensors) {
    const auto rows = t.size(c.dim);
    if (t.numel() > 0) // `outer` blocks of `rows` rows, pitched in the output
      on.plugin.copy_2d_async(
        on.launch.stream, static_cast<char*>(mutable_data_of(out)) + start * row_bytes,
        split.size * row_bytes, data_of(t), rows * row_bytes, rows * row_bytes, split.outer);
    start += rows;
  }
  return out;
}

Tensor clone(const Tensor& a) {
  check_defined("clone", a);
  return copy_between_devices(a, a.device());
}

Tensor cast(const Tensor& a, DType dtype) {
  check_defined("cast", a);
  const OnDevice on("cast", a.device());
  auto out = Tensor::empty(a.shape(), dtype, a.device());
  on.kernels.cast(on.launch, a.dtype(), dtype, a.numel(), data_of(a), mutable_data_of(out));
  return out;
}

Tensor to_device(const Tensor& a, Device device) {
  check_defined("to_device", a);
  const Device from = a.device();
  const bool from_cuda = from.type == DeviceType::cuda;
  const bool to_cuda = device.type == DeviceType::cuda;
  if (from_cuda && to_cuda)
    return copy_between_devices(a, device);
  if (!from_cuda && !to_cuda)
    return kernels::to_device(a, device);
  if (to_cuda) { // host memory to CUDA; a sim tensor goes through the CPU
    if (!from.is_cpu())
      return to_device(kernels::to_device(a, Device::cpu()), device);
    const OnDevice on("to_device", device);
    auto out = Tensor::empty(a.shape(), a.dtype(), device);
    on.plugin.copy_async(on.launch.stream, mutable_data_of(out), data_of(a), nbytes_of(a),
                         actorgrad::cuda::CopyKind::host_to_device);
    return out;
  }
  // CUDA to host memory.
  auto out = Tensor::empty(a.shape(), a.dtype(), Device::cpu());
  copy_to_host(mutable_data_of(out), data_of(a), nbytes_of(a), from);
  return device.is_cpu() ? out : kernels::to_device(out, device);
}

} // namespace actorgrad::kernels::cuda
