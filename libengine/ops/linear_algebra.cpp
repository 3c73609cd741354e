/// @file linear_algebra.cpp
/// Differentiable matrix product.

#include "actorgrad/libengine/ops.h"
#include "actorgrad/libengine/ops/detail/function_node.h"
#include "actorgrad/libengine/ops/detail/grad_shapes.h"
#include "actorgrad/libengine/tensor/kernels.h"

namespace actorgrad {

using detail::as_shape;
using detail::record;
using detail::save_if;

Tensor matmul(const Tensor& a, const Tensor& b) {
  auto out = kernels::matmul(a, b);
  const char* name = b.dim() == 2 ? "MmBackward" : a.dim() == 2 ? "MvBackward" : "DotBackward";
  // With a 1-D `a` seen as [1, k] and a 1-D `b` as [k, 1], both cases are
  // C = A B: dA = dC B^T, dB = A^T dC.
  return record(
    name, std::move(out), {a, b},
    [sa = a.shape(), sb = b.shape()](const Tensor& g, const variable_list& s,
                                     const auto& needs) -> variable_list {
      const Shape a2 = sa.size() == 1 ? Shape{1, sa[0]} : sa;
      const Shape b2 = sb.size() == 1 ? Shape{sb[0], 1} : sb;
      const auto g2 = as_shape(g, {a2[0], b2[1]});
      return {needs[0] ? as_shape(matmul(g2, transpose(as_shape(s[1], b2), 0, 1)), sa) : Tensor(),
              needs[1] ? as_shape(matmul(transpose(as_shape(s[0], a2), 0, 1), g2), sb) : Tensor()};
    },
    {save_if(b.requires_grad(), a), save_if(a.requires_grad(), b)});
}

} // namespace actorgrad
