#pragma once
/// @file kernel_support.h
/// Private helpers shared by the host kernels: argument checks, Eigen maps
/// and strided iteration. Not part of the public API (keeps Eigen out of it).

#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <utility>

#include <Eigen/Dense>

#include "actorgrad/device/sim/sim_backend.h"
#include "actorgrad/libengine/tensor/tensor.h"

namespace actorgrad::kernels::detail {

/// Enqueues `body` on the current stream of the writes' device. Use launch().
void launch_on_stream(const char* op, std::initializer_list<const Tensor*> reads,
                      std::initializer_list<const Tensor*> writes, std::function<void()> body);

/// Runs `body`, the kernel `op`, on the device of `writes` (the first one
/// decides): at once on the CPU (and on a synchronous sim), enqueued on the
/// calling thread's current stream of an asynchronous sim device.
///
/// Note [Kernels run later]
/// On a sim stream the body runs after launch() returns, on the stream's
/// thread, so it must capture by value every tensor and every piece of
/// metadata it uses (tensor handles keep the memory alive until it ran),
/// and all argument checks must happen before launch() so that errors reach
/// the caller. `reads` and `writes` name the tensors it touches for the
/// race detector.
template <class F>
void launch(const char* op, std::initializer_list<const Tensor*> reads,
            std::initializer_list<const Tensor*> writes, F&& body) {
  if ((*writes.begin())->device().type == DeviceType::sim && sim::is_async())
    launch_on_stream(op, reads, writes, std::function<void()>(std::forward<F>(body)));
  else
    body();
}

/// Throws std::logic_error naming `op` when `a` is undefined.
void check_defined(const char* op, const Tensor& a);

/// Throws unless both are defined, on one device and of one dtype; the
/// std::invalid_argument names `op` and both devices or dtypes.
void check_compatible(const char* op, const Tensor& a, const Tensor& b);

/// A new contiguous tensor of `shape` with the dtype and device of `like`.
Tensor empty_like(const Tensor& like, const Shape& shape);

/// Strides (in elements) that read a contiguous tensor of shape `from` as if
/// broadcast to `to`: 0 along broadcast dims, in the rank of `to`.
Shape broadcast_strides(const Shape& from, const Shape& to);

/// A tensor seen as [outer, size, inner] around dimension `dim`.
struct DimSplit {
  std::int64_t outer = 1;
  std::int64_t size = 1;
  std::int64_t inner = 1;
};
DimSplit split_at(const Shape& shape, std::int64_t dim);

/// Bumps the version counter of `self` after an in-place kernel.
void bump_version(const Tensor& self);

/// One-dimensional Eigen array over a contiguous tensor's elements.
template <class T>
using ArrayMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <class T>
using ConstArrayMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

template <class T>
ArrayMap<T> array_of(const Tensor& t) {
  return {t.data<T>(), static_cast<Eigen::Index>(t.numel())};
}
template <class T>
ConstArrayMap<T> const_array_of(const Tensor& t) {
  return {t.data<T>(), static_cast<Eigen::Index>(t.numel())};
}

/// The element type of an Eigen expression.
template <class X>
using scalar_of = typename std::decay_t<X>::Scalar;

/// Walks every index of `shape` in row-major order and calls `f(offsets)`,
/// where offsets[j] is the index dotted with `strides[j]` (each in the rank of
/// `shape`). The innermost dimension runs as a tight loop.
template <std::size_t N, class F>
void for_each_strided(const Shape& shape, const std::array<const Shape*, N>& strides, F&& f) {
  if (numel_of(shape) == 0)
    return;
  std::array<std::int64_t, N> off{};
  if (shape.empty()) {
    f(off);
    return;
  }
  const auto rank = shape.size();
  const auto last = rank - 1;
  std::array<std::int64_t, N> inner_stride{};
  for (std::size_t j = 0; j < N; ++j)
    inner_stride[j] = (*strides[j])[last];
  Shape idx(rank, 0);
  for (;;) {
    auto at = off;
    for (std::int64_t i = 0; i < shape[last]; ++i) {
      f(at);
      for (std::size_t j = 0; j < N; ++j)
        at[j] += inner_stride[j];
    }
    // Advance the odometer over the outer dimensions.
    std::size_t d = last;
    for (;;) {
      if (d == 0)
        return;
      --d;
      for (std::size_t j = 0; j < N; ++j)
        off[j] += (*strides[j])[d];
      if (++idx[d] < shape[d])
        break;
      for (std::size_t j = 0; j < N; ++j)
        off[j] -= (*strides[j])[d] * shape[d];
      idx[d] = 0;
    }
  }
}

} // namespace actorgrad::kernels::detail
