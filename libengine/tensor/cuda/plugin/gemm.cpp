/// @file gemm.cpp
/// Matrix products through cuBLAS (the gemm launcher of launch.h).

#include <array>
#include <stdexcept>
#include <string>

#include <cublas_v2.h>

#include "actorgrad/libengine/tensor/cuda/detail/launch.h"

namespace actorgrad::kernels::cuda::detail {

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

void gemm(const Launch& l, DType t, int m, int n, int k, const void* a, const void* b, void* c) {
  const Device d = l.stream.device;
  cublasHandle_t h = handle(d, l.native);
  // Row-major C[m, n] = A[m, k] B[k, n] is column-major C^T = B^T A^T: cuBLAS
  // reads each row-major matrix as its transpose, so pass B first.
  if (t == DType::f32) {
    const float alpha = 1, beta = 0;
    check_cublas(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha,
                             static_cast<const float*>(b), n, static_cast<const float*>(a), k,
                             &beta, static_cast<float*>(c), n),
                 "cublasSgemm", d);
  } else {
    const double alpha = 1, beta = 0;
    check_cublas(cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha,
                             static_cast<const double*>(b), n, static_cast<const double*>(a), k,
                             &beta, static_cast<double*>(c), n),
                 "cublasDgemm", d);
  }
}

} // namespace actorgrad::kernels::cuda::detail
