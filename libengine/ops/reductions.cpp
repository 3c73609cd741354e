/// @file reductions.cpp
/// Differentiable sums and means, and sum_to (the inverse of broadcasting).

#include "actorgrad/libengine/ops.h"
#include "actorgrad/libengine/ops/detail/function_node.h"
#include "actorgrad/libengine/ops/detail/grad_shapes.h"
#include "actorgrad/libengine/tensor/kernels.h"

namespace actorgrad {

using detail::record;

namespace {

/// `scale` times the sum of `a` over `dims` (all when empty); the gradient
/// is the incoming one broadcast back over the reduced dims, times `scale`.
Tensor scaled_sum(const char* name, const Tensor& a, const std::vector<std::int64_t>& dims,
                  bool keepdim, double scale) {
  auto out = kernels::sum(a, dims, keepdim);
  if (scale != 1.0)
    out = kernels::mul_scalar(out, scale);
  return record(name, std::move(out), {a},
                [sa = a.shape(), kept = detail::kept_shape(a.shape(), dims),
                 scale](const Tensor& g, const auto&, const auto&) -> variable_list {
                  auto grad = expand(detail::as_shape(g, kept), sa);
                  return {scale == 1.0 ? grad : mul(grad, scale)};
                });
}

/// Number of elements each output of a reduction over `dims` sums.
double reduced_count(const Shape& shape, const std::vector<std::int64_t>& dims) {
  const auto kept = detail::kept_shape(shape, dims);
  double n = 1;
  for (std::size_t d = 0; d < shape.size(); ++d)
    if (kept[d] == 1)
      n *= static_cast<double>(shape[d]);
  return n;
}

} // namespace

Tensor sum(const Tensor& a) { return scaled_sum("SumBackward", a, {}, false, 1.0); }

Tensor sum(const Tensor& a, const std::vector<std::int64_t>& dims, bool keepdim) {
  return scaled_sum("SumBackward", a, dims, keepdim, 1.0);
}

Tensor mean(const Tensor& a) { return mean(a, {}, false); }

Tensor mean(const Tensor& a, const std::vector<std::int64_t>& dims, bool keepdim) {
  return scaled_sum("MeanBackward", a, dims, keepdim, 1.0 / reduced_count(a.shape(), dims));
}

Tensor sum_to(const Tensor& a, const Shape& shape) {
  if (a.shape() == shape)
    return a;
  auto out = kernels::sum_to(a, shape);
  return record("SumToBackward", std::move(out), {a},
                [sa = a.shape()](const Tensor& g, const auto&, const auto&) -> variable_list {
                  return {expand(g, sa)};
                });
}

} // namespace actorgrad
