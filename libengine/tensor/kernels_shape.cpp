/// @file kernels_shape.cpp
/// Shape changes and data movement: expand, transpose, view, row selection
/// and scatter, cat and stack, copies, casts and device moves.

#include <cstring>
#include <optional>
#include <stdexcept>
#include <utility>

#include "actorgrad/device/event.h"
#include "actorgrad/libengine/tensor/detail/cuda_dispatch.h"
#include "actorgrad/libengine/tensor/detail/kernel_checks.h"
#include "actorgrad/libengine/tensor/detail/kernel_support.h"
#include "actorgrad/libengine/tensor/kernels.h"
#include "actorgrad/libengine/tensor/pending_reads.h"
#include "actorgrad/libengine/tensor/tensor_impl.h"

namespace actorgrad::kernels {

using namespace detail;

namespace {

/// Copies `src` read through `strides` (in the rank of `out`) into `out`.
Tensor gather_strided(const char* op, const Tensor& src, const Shape& out_shape,
                      const Shape& strides) {
  auto out = empty_like(src, out_shape);
  launch(op, {&src}, {&out}, [src, out, strides] {
    dispatch_dtype(src.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* ps = src.data<T>();
      T* po = out.data<T>();
      for_each_strided<1>(out.shape(), {&strides}, [&](const auto& off) { *po++ = ps[off[0]]; });
    });
  });
  return out;
}

/// Copies the elements of `src` into `dst` (same size, both contiguous).
void copy_bytes(const Tensor& dst, const Tensor& src) {
  std::memcpy(dst.impl()->raw(), src.impl()->raw(),
              static_cast<std::size_t>(src.numel()) * element_size(src.dtype()));
}

/// Zeros of `shape`; row index[j] along `dim` gets row j of `src` added.
/// Arguments are already checked.
Tensor scatter_add_rows(const Shape& shape, std::int64_t dim,
                        const std::vector<std::int64_t>& index, const Tensor& src) {
  auto out = empty_like(src, shape);
  const auto split = split_at(shape, dim);
  launch("scatter_add_rows", {&src}, {&out}, [src, out, split, index] {
    const auto k = static_cast<std::int64_t>(index.size());
    dispatch_dtype(src.dtype(), [&](auto zero) {
      using T = decltype(zero);
      array_of<T>(out).setZero();
      const T* ps = src.data<T>();
      T* po = out.data<T>();
      for (std::int64_t o = 0; o < split.outer; ++o)
        for (std::int64_t j = 0; j < k; ++j) {
          T* dst = po + (o * split.size + index[j]) * split.inner;
          const T* row = ps + (o * k + j) * split.inner;
          for (std::int64_t i = 0; i < split.inner; ++i)
            dst[i] += row[i];
        }
    });
  });
  return out;
}

} // namespace

Tensor expand(const Tensor& a, const Shape& shape) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(a), cuda::expand(a, shape));
  check_expand(a, shape);
  return gather_strided("expand", a, shape, broadcast_strides(a.shape(), shape));
}

Tensor transpose(const Tensor& a, std::int64_t d0, std::int64_t d1) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(a), cuda::transpose(a, d0, d1));
  check_defined("transpose", a);
  const auto i = wrap_dim(d0, a.dim());
  const auto j = wrap_dim(d1, a.dim());
  Shape shape = a.shape();
  Shape strides = a.strides();
  std::swap(shape[i], shape[j]);
  std::swap(strides[i], strides[j]);
  return gather_strided("transpose", a, shape, strides);
}

Tensor view(const Tensor& a, const Shape& shape) {
  check_defined("view", a);
  const auto mismatch = [&] {
    return std::invalid_argument("view: shape " + shape_str(shape) +
                                 " is invalid for a tensor of shape " + shape_str(a.shape()));
  };
  Shape resolved = shape;
  std::int64_t known = 1;
  std::int64_t inferred = -1;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == -1 && inferred < 0)
      inferred = static_cast<std::int64_t>(d);
    else if (shape[d] < 0)
      throw mismatch();
    else
      known *= shape[d];
  }
  if (inferred >= 0) {
    if (known == 0 || a.numel() % known != 0)
      throw mismatch();
    resolved[inferred] = a.numel() / known;
  }
  if (numel_of(resolved) != a.numel())
    throw mismatch();
  const auto& base = *a.impl();
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = base.storage;
  impl->offset = base.offset;
  impl->shape = std::move(resolved);
  impl->strides = contiguous_strides(impl->shape);
  impl->dtype = base.dtype;
  impl->version = base.version;
  return Tensor(std::move(impl));
}

Tensor index_select(const Tensor& a, std::int64_t dim, const std::vector<std::int64_t>& index) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(a), cuda::index_select(a, dim, index));
  check_defined("index_select", a);
  const auto d = wrap_dim(dim, a.dim());
  check_indices("index_select", index, a.size(d), dim);
  Shape shape = a.shape();
  shape[d] = static_cast<std::int64_t>(index.size());
  auto out = empty_like(a, shape);
  const auto split = split_at(a.shape(), d);
  launch("index_select", {&a}, {&out}, [a, out, split, index] {
    const auto k = static_cast<std::int64_t>(index.size());
    const auto row_bytes = static_cast<std::size_t>(split.inner) * element_size(a.dtype());
    const auto* src = static_cast<const char*>(a.impl()->raw());
    auto* dst = static_cast<char*>(out.impl()->raw());
    for (std::int64_t o = 0; o < split.outer; ++o)
      for (std::int64_t j = 0; j < k; ++j)
        std::memcpy(dst + (o * k + j) * row_bytes, src + (o * split.size + index[j]) * row_bytes,
                    row_bytes);
  });
  return out;
}

Tensor index_add_into_zeros(const Shape& shape, std::int64_t dim,
                            const std::vector<std::int64_t>& index, const Tensor& src) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(src), cuda::index_add_into_zeros(shape, dim, index, src));
  const auto d = check_scatter_source("index_add_into_zeros", shape, dim, src,
                                      static_cast<std::int64_t>(index.size()));
  check_indices("index_add_into_zeros", index, shape[d], dim);
  return scatter_add_rows(shape, d, index, src);
}

Tensor narrow(const Tensor& a, std::int64_t dim, std::int64_t start, std::int64_t length) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(a), cuda::narrow(a, dim, start, length));
  check_defined("narrow", a);
  const auto d = wrap_dim(dim, a.dim());
  check_range("narrow", dim, start, length, a.size(d));
  return index_select(a, d, iota(start, length));
}

Tensor narrow_into_zeros(const Shape& shape, std::int64_t dim, std::int64_t start,
                         const Tensor& src) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(src), cuda::narrow_into_zeros(shape, dim, start, src));
  const auto d = check_scatter_source("narrow_into_zeros", shape, dim, src, std::nullopt);
  const auto length = src.size(d);
  check_range("narrow_into_zeros", dim, start, length, shape[d]);
  return scatter_add_rows(shape, d, iota(start, length), src);
}

Tensor cat(const std::vector<Tensor>& tensors, std::int64_t dim) {
  ACTORGRAD_CUDA_DISPATCH(!tensors.empty() && on_cuda(tensors[0]), cuda::cat(tensors, dim));
  const auto c = cat_dims(tensors, dim);
  auto out = empty_like(tensors[0], c.out);
  const auto split = split_at(c.out, c.dim);
  std::int64_t start = 0; // where the next input's rows go along dim
  for (const auto& t : tensors) {
    const auto rows = t.size(c.dim);
    launch("cat", {&t}, {&out}, [t, out, split, start, rows] {
      const auto row_bytes = static_cast<std::size_t>(split.inner) * element_size(t.dtype());
      const auto* src = static_cast<const char*>(t.impl()->raw());
      auto* dst = static_cast<char*>(out.impl()->raw());
      for (std::int64_t o = 0; o < split.outer; ++o)
        std::memcpy(dst + (o * split.size + start) * row_bytes, src + o * rows * row_bytes,
                    rows * row_bytes);
    });
    start += rows;
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, std::int64_t dim) {
  check_joinable("stack", tensors);
  const Shape& shape = tensors[0].shape();
  Shape unsqueezed = shape;
  unsqueezed.insert(unsqueezed.begin() + wrap_dim_for("stack", dim, tensors[0].dim() + 1), 1);
  std::vector<Tensor> views;
  views.reserve(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].shape() != shape)
      throw std::invalid_argument("stack: tensors[" + std::to_string(i) + "] has shape " +
                                  shape_str(tensors[i].shape()) + " but tensors[0] has shape " +
                                  shape_str(shape) + " (expected one shape)");
    views.push_back(view(tensors[i], unsqueezed));
  }
  return cat(views, dim);
}

Tensor clone(const Tensor& a) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(a), cuda::clone(a));
  check_defined("clone", a);
  auto out = empty_like(a, a.shape());
  launch("clone", {&a}, {&out}, [a, out] { copy_bytes(out, a); });
  return out;
}

Tensor cast(const Tensor& a, DType dtype) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(a), cuda::cast(a, dtype));
  check_defined("cast", a);
  auto out = Tensor::empty(a.shape(), dtype, a.device());
  launch("cast", {&a}, {&out}, [a, out] {
    dispatch_dtype(a.dtype(), [&](auto from) {
      dispatch_dtype(out.dtype(), [&](auto to) {
        using To = decltype(to);
        array_of<To>(out) = const_array_of<decltype(from)>(a).template cast<To>();
      });
    });
  });
  return out;
}

Tensor to_device(const Tensor& a, Device device) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(a) || device.type == DeviceType::cuda,
                          cuda::to_device(a, device));
  check_defined("to_device", a);
  auto out = Tensor::empty(a.shape(), a.dtype(), device);
  if (device.is_cpu()) { // device to host: wait for the data, as cudaMemcpy does
    prepare_host_access(*a.impl());
    copy_bytes(out, a);
    return out;
  }
  // Host or another device to `device`: a copy on `device`'s current stream,
  // ordered after the work already enqueued on the source's current stream.
  if (!a.device().is_cpu() && a.device() != device && has_streams(a.device()))
    Event::recorded_on(current_stream(a.device())).block(current_stream(device));
  // A host source is staged first (unless nobody else holds it), so the
  // caller may overwrite it as soon as this returns.
  const Tensor src = a.device().is_cpu() && a.use_count() > 1 ? clone(a) : a;
  launch("to_device", {&src}, {&out}, [src, out] { copy_bytes(out, src); });
  record_async_read(src, current_stream(device)); // Note [Pending reads]
  return out;
}

} // namespace actorgrad::kernels
