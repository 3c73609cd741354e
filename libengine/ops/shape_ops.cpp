/// @file shape_ops.cpp
/// Differentiable shape changes: reshape/view, transpose, expand, clone.

#include "libengine/ops.h"
#include "libengine/ops/detail/function_node.h"
#include "libengine/tensor/kernels.h"

namespace actorgrad {

using detail::record;

Tensor reshape(const Tensor& a, const Shape& shape) {
  auto out = kernels::view(a, shape);
  return record("ViewBackward", std::move(out), {a},
                [sa = a.shape()](const Tensor& g, const auto&, const auto&) -> variable_list {
                  return {reshape(g, sa)};
                });
}

Tensor view(const Tensor& a, const Shape& shape) { return reshape(a, shape); }

Tensor transpose(const Tensor& a, std::int64_t d0, std::int64_t d1) {
  return record("TransposeBackward", kernels::transpose(a, d0, d1), {a},
                [d0, d1](const Tensor& g, const auto&, const auto&) -> variable_list {
                  return {transpose(g, d0, d1)};
                });
}

Tensor expand(const Tensor& a, const Shape& shape) {
  auto out = kernels::expand(a, shape);
  return record("ExpandBackward", std::move(out), {a},
                [sa = a.shape()](const Tensor& g, const auto&, const auto&) -> variable_list {
                  return {sum_to(g, sa)};
                });
}

Tensor clone(const Tensor& a) {
  return record("CloneBackward", kernels::clone(a), {a},
                [](const Tensor& g, const auto&, const auto&) -> variable_list { return {g}; });
}

} // namespace actorgrad
