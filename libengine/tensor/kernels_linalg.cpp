/// @file kernels_linalg.cpp
/// Matrix products through Eigen's GEMM.

#include <stdexcept>

#include "actorgrad/libengine/tensor/detail/cuda_dispatch.h"
#include "actorgrad/libengine/tensor/detail/kernel_checks.h"
#include "actorgrad/libengine/tensor/detail/kernel_support.h"
#include "actorgrad/libengine/tensor/kernels.h"

namespace actorgrad::kernels {

using namespace detail;

Tensor matmul(const Tensor& a, const Tensor& b) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(a), cuda::matmul(a, b));
  const MatmulDims dims = matmul_dims(a, b);
  const auto m = dims.m, k = dims.k, n = dims.n;
  auto out = empty_like(a, dims.out);
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
