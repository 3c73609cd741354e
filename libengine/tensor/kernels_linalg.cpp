/// @file kernels_linalg.cpp
/// Matrix products through Eigen's GEMM.

#include <stdexcept>

#include "libengine/tensor/detail/cuda_dispatch.h"
#include "libengine/tensor/detail/kernel_support.h"
#include "libengine/tensor/kernels.h"

namespace actorgrad::kernels {

using namespace detail;

Tensor matmul(const Tensor& a, const Tensor& b) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(a), cuda::matmul(a, b));
  check_compatible("matmul", a, b);
  const auto mismatch = [&](const std::string& why) {
    return std::invalid_argument("matmul: shapes " + shape_str(a.shape()) + " and " +
                                 shape_str(b.shape()) + " " + why);
  };
  if (a.dim() < 1 || a.dim() > 2 || b.dim() < 1 || b.dim() > 2)
    throw mismatch("are not 1-D or 2-D");
  // A 1-D left operand is a row vector, a 1-D right operand a column vector;
  // their unit dimension is dropped from the result (torch.matmul).
  const auto m = a.dim() == 2 ? a.size(0) : 1;
  const auto k = a.size(-1);
  const auto n = b.dim() == 2 ? b.size(1) : 1;
  if (b.size(0) != k)
    throw mismatch("cannot be multiplied (" + std::to_string(k) + " != " +
                   std::to_string(b.size(0)) + ")");
  Shape out_shape;
  if (a.dim() == 2)
    out_shape.push_back(m);
  if (b.dim() == 2)
    out_shape.push_back(n);
  auto out = empty_like(a, out_shape);
  launch("matmul", {&a, &b}, {&out}, [a, b, out, m, k, n] {
    dispatch_dtype(a.dtype(), [&](auto zero) {
      using T = decltype(zero);
      using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
      Eigen::Map<const Matrix> ma(a.data<T>(), m, k);
      Eigen::Map<const Matrix> mb(b.data<T>(), k, n);
      Eigen::Map<Matrix> mo(out.data<T>(), m, n);
      mo.noalias() = ma * mb;
    });
  });
  return out;
}

} // namespace actorgrad::kernels
