/// @file kernels_cuda_linalg.cpp
/// Matrix products through cuBLAS.

#include "actorgrad/libengine/tensor/cuda/kernels_cuda.h"

#include <array>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <cublas_v2.h>

#include "actorgrad/device/cuda/cuda_error.h"
#include "actorgrad/libengine/tensor/cuda/detail/cuda_support.h"
#include "actorgrad/libengine/tensor/detail/kernel_checks.h"

namespace actorgrad::kernels::cuda {

using namespace kernels::detail;
using namespace cuda::detail;

namespace {

void check_cublas(cublasStatus_t status, const char* call, Device d) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(call) + " on " + d.str() + ": " +
                             cublasGetStatusString(status));
}

/// This thread's cuBLAS handles, one per device, created on first use and
/// destroyed when the thread ends. A handle is not shared between threads,
/// so setting its stream before each call cannot race.
class Handles {
public:
  Handles() = default;
  Handles(const Handles&) = delete;
  Handles& operator=(const Handles&) = delete;
  ~Handles() {
    for (cublasHandle_t h : handles_)
      if (h != nullptr)
        (void)cublasDestroy(h); // fails only once the runtime is unloading
  }

  /// The handle of `d` (which must be current), set to work on `stream`.
  cublasHandle_t of(Device d, cudaStream_t stream) {
    if (d.index < 0 || d.index >= static_cast<int>(handles_.size()))
      throw std::invalid_argument("matmul: no cuBLAS handle for " + d.str());
    cublasHandle_t& h = handles_[d.index];
    if (h == nullptr) {
      check_cublas(cublasCreate(&h), "cublasCreate", d);
      // Full float32 products: no TF32 (tests compare with the CPU to 1e-5).
      check_cublas(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode", d);
    }
    check_cublas(cublasSetStream(h, stream), "cublasSetStream", d);
    return h;
  }

private:
  std::array<cublasHandle_t, 64> handles_{};
};

cublasHandle_t handle(Device d, cudaStream_t stream) {
  thread_local Handles handles;
  return handles.of(d, stream);
}

} // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  const MatmulDims dims = matmul_dims(a, b);
  const OnDevice on("matmul", a.device());
  auto out = empty_like(a, dims.out);
  if (out.numel() == 0)
    return out;
  const Device d = a.device();
  if (dims.k == 0) { // an empty sum: zeros
    actorgrad::cuda::check(cudaMemsetAsync(mutable_data_of(out), 0,
                                           out.numel() * element_size(out.dtype()),
                                           on.launch.stream),
                           "cudaMemsetAsync", d);
    return out;
  }
  // Row-major C[m, n] = A[m, k] B[k, n] is column-major C^T = B^T A^T: cuBLAS
  // reads each row-major matrix as its transpose, so pass B first.
  const auto m = static_cast<int>(dims.m);
  const auto k = static_cast<int>(dims.k);
  const auto n = static_cast<int>(dims.n);
  if (m != dims.m || k != dims.k || n != dims.n)
    throw std::invalid_argument("matmul: sizes beyond the 32-bit range of cuBLAS: " +
                                shape_str(a.shape()) + " and " + shape_str(b.shape()));
  cublasHandle_t h = handle(d, on.launch.stream);
  dispatch_dtype(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T alpha = 1, beta = 0;
    const auto* pa = static_cast<const T*>(data_of(a));
    const auto* pb = static_cast<const T*>(data_of(b));
    auto* pc = static_cast<T*>(mutable_data_of(out));
    if constexpr (std::is_same_v<T, float>)
      check_cublas(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, pb, n, pa, k, &beta,
                               pc, n),
                   "cublasSgemm", d);
    else
      check_cublas(cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, pb, n, pa, k, &beta,
                               pc, n),
                   "cublasDgemm", d);
  });
  return out;
}

} // namespace actorgrad::kernels::cuda
