/// @file kernels_reduce.cpp
/// Reductions and the softmax family (reductions along one dim).

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "actorgrad/libengine/tensor/detail/cuda_dispatch.h"
#include "actorgrad/libengine/tensor/detail/kernel_checks.h"
#include "actorgrad/libengine/tensor/detail/kernel_support.h"
#include "actorgrad/libengine/tensor/kernels.h"

namespace actorgrad::kernels {

using namespace detail;

namespace {

/// Calls `f(base, stride)` for every lane along the split dim, in row-major
/// order of the other dims: `base` is the offset of the lane's first element,
/// `stride` the step between its elements.
template <class F>
void for_each_lane(const DimSplit& s, F&& f) {
  for (std::int64_t o = 0; o < s.outer; ++o)
    for (std::int64_t i = 0; i < s.inner; ++i)
      f(o * s.size * s.inner + i, s.inner);
}

/// Softmax of `a` along `dim` (its log when `log`), shifted by the lane max.
Tensor softmax_impl(const char* op, const Tensor& a, std::int64_t dim, bool log) {
  check_defined(op, a);
  const auto split = split_at(a.shape(), wrap_dim(dim, a.dim()));
  auto out = empty_like(a, a.shape());
  launch(op, {&a}, {&out}, [a, out, split, log] {
    dispatch_dtype(a.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* pa = a.data<T>();
      T* po = out.data<T>();
      for_each_lane(split, [&](std::int64_t base, std::int64_t stride) {
        const auto n = split.size;
        T max = -std::numeric_limits<T>::infinity();
        for (std::int64_t j = 0; j < n; ++j)
          max = std::max(max, pa[base + j * stride]);
        if (std::isinf(max))
          max = T(0); // all -inf (or an inf): keep the shift finite
        T total = 0;
        for (std::int64_t j = 0; j < n; ++j)
          total += std::exp(pa[base + j * stride] - max);
        const T log_total = std::log(total);
        for (std::int64_t j = 0; j < n; ++j) {
          const T shifted = pa[base + j * stride] - max;
          po[base + j * stride] = log ? shifted - log_total : std::exp(shifted) / total;
        }
      });
    });
  });
  return out;
}

} // namespace

Tensor sum(const Tensor& a, const std::vector<std::int64_t>& dims, bool keepdim) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(a), cuda::sum(a, dims, keepdim));
  const SumDims sd = sum_dims(a, dims, keepdim);
  const Shape& kept = sd.kept;
  const std::vector<bool>& reduced = sd.reduced;
  const Shape& out_shape = sd.out;
  auto out = empty_like(a, out_shape);
  launch("sum", {&a}, {&out}, [a, out, kept, reduced] {
    dispatch_dtype(a.dtype(), [&](auto zero) {
      using T = decltype(zero);
      // float32 sums accumulate in float64, as on CUDA (SumOp in reduce.cu):
      // a float32 running sum over a long lane drifts by about sqrt(n) ulps.
      using Acc = std::conditional_t<std::is_same_v<T, float>, double, T>;
      if (numel_of(kept) == 1) {
        *out.data<T>() = static_cast<T>(const_array_of<T>(a).template cast<Acc>().sum());
        return;
      }
      std::vector<Acc> wide; // float32's float64 cells (float64 adds into `out`)
      Acc* po = nullptr;
      if constexpr (std::is_same_v<Acc, T>) {
        array_of<T>(out).setZero();
        po = out.data<T>();
      } else {
        wide.assign(static_cast<std::size_t>(numel_of(kept)), Acc(0));
        po = wide.data();
      }
      // Walk the input; each element adds into the output cell its kept index maps to.
      Shape to_out = contiguous_strides(kept);
      const Shape& from_in = a.strides();
      for (std::size_t d = 0; d < reduced.size(); ++d)
        if (reduced[d])
          to_out[d] = 0;
      const T* pa = a.data<T>();
      for_each_strided<2>(a.shape(), {&from_in, &to_out},
                          [&](const auto& off) { po[off[1]] += pa[off[0]]; });
      std::copy(wide.begin(), wide.end(), out.data<T>());
    });
  });
  return out;
}

Tensor amax(const Tensor& a, std::int64_t dim, bool keepdim) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(a), cuda::amax(a, dim, keepdim));
  const AmaxDims ad = amax_dims(a, dim, keepdim);
  const DimSplit split = ad.split;
  const Shape& out_shape = ad.out;
  auto out = empty_like(a, out_shape);
  launch("amax", {&a}, {&out}, [a, out, split] {
    dispatch_dtype(a.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* pa = a.data<T>();
      T* po = out.data<T>();
      for_each_lane(split, [&](std::int64_t base, std::int64_t stride) {
        T m = pa[base];
        for (std::int64_t j = 1; j < split.size; ++j) {
          const T v = pa[base + j * stride];
          if (v > m || std::isnan(v))
            m = v;
        }
        *po++ = m;
      });
    });
  });
  return out;
}

Tensor sum_to(const Tensor& a, const Shape& shape) {
  check_defined("sum_to", a);
  if (!is_expandable_to(shape, a.shape()))
    throw std::invalid_argument("sum_to: shape " + shape_str(a.shape()) + " cannot be summed to " +
                                shape_str(shape));
  const auto lead = a.dim() - static_cast<std::int64_t>(shape.size());
  std::vector<std::int64_t> dims;
  for (std::int64_t d = 0; d < a.dim(); ++d)
    if (d < lead || (shape[d - lead] == 1 && a.size(d) != 1))
      dims.push_back(d);
  if (dims.empty())
    return clone(a);
  return view(sum(a, dims, true), shape);
}

bool any_nan(const Tensor& a) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(a), cuda::any_nan(a));
  check_defined("any_nan", a);
  return dispatch_dtype(a.dtype(),
                        [&](auto zero) { return const_array_of<decltype(zero)>(a).isNaN().any(); });
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(a), cuda::max_abs_diff(a, b));
  check_compatible("max_abs_diff", a, b);
  check_same_shape("max_abs_diff", a, b);
  if (a.numel() == 0)
    return 0.0;
  return dispatch_dtype(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    return static_cast<double>((const_array_of<T>(a) - const_array_of<T>(b)).abs().maxCoeff());
  });
}

Tensor softmax(const Tensor& a, std::int64_t dim) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(a), cuda::softmax(a, dim));
  return softmax_impl("softmax", a, dim, false);
}

Tensor log_softmax(const Tensor& a, std::int64_t dim) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(a), cuda::log_softmax(a, dim));
  return softmax_impl("log_softmax", a, dim, true);
}

} // namespace actorgrad::kernels
