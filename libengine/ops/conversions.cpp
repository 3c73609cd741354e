/// @file conversions.cpp
/// Differentiable device moves and dtype casts: the gradient goes back.

#include "actorgrad/libengine/ops.h"
#include "actorgrad/libengine/ops/detail/function_node.h"
#include "actorgrad/libengine/tensor/kernels.h"

namespace actorgrad {

using detail::record;

Tensor to_device(const Tensor& a, Device device) {
  if (a.device() == device)
    return a;
  return record("ToCopyBackward", kernels::to_device(a, device), {a},
                [source = a.device()](const Tensor& g, const auto&, const auto&) -> variable_list {
                  return {to_device(g, source)};
                });
}

Tensor to_dtype(const Tensor& a, DType dtype) {
  if (a.dtype() == dtype)
    return a;
  return record("ToCopyBackward", kernels::cast(a, dtype), {a},
                [source = a.dtype()](const Tensor& g, const auto&, const auto&) -> variable_list {
                  return {to_dtype(g, source)};
                });
}

} // namespace actorgrad
