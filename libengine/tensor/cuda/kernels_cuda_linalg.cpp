/// @file kernels_cuda_linalg.cpp
/// Matrix products (cuBLAS, in the CUDA plugin).

#include "actorgrad/libengine/tensor/cuda/kernels_cuda.h"

#include <stdexcept>

#include "actorgrad/libengine/tensor/cuda/detail/cuda_support.h"
#include "actorgrad/libengine/tensor/detail/kernel_checks.h"

namespace actorgrad::kernels::cuda {

using namespace kernels::detail;
using namespace cuda::detail;

Tensor matmul(const Tensor& a, const Tensor& b) {
  const MatmulDims dims = matmul_dims(a, b);
  const OnDevice on("matmul", a.device());
  auto out = empty_like(a, dims.out);
  if (out.numel() == 0)
    return out;
  if (dims.k == 0) { // an empty sum: zeros
    on.plugin.memset_async(on.launch.stream, mutable_data_of(out), 0,
                           out.numel() * element_size(out.dtype()));
    return out;
  }
  const auto m = static_cast<int>(dims.m);
  const auto k = static_cast<int>(dims.k);
  const auto n = static_cast<int>(dims.n);
  if (m != dims.m || k != dims.k || n != dims.n)
    throw std::invalid_argument("matmul: sizes beyond the 32-bit range of cuBLAS: " +
                                shape_str(a.shape()) + " and " + shape_str(b.shape()));
  on.kernels.gemm(on.launch, a.dtype(), m, n, k, data_of(a), data_of(b), mutable_data_of(out));
  return out;
}

} // namespace actorgrad::kernels::cuda
