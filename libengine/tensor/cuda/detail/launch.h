#pragma once
/// @file launch.h
/// The CUDA kernel launchers behind kernels_cuda.h: device pointers, sizes
/// and strides in, work enqueued on a stream, nothing waited for. Defined
/// in the CUDA plugin (cuda/plugin/), which makes the launch's device
/// current around each; the host glue (kernels_cuda_*.cpp, in the core)
/// calls them through its KernelTable (kernel_table.h), never by name.
/// Shared with the kernels (*.cu, built by nvcc), so it includes neither
/// Eigen nor CUDA headers. Pointers are to the first element; sizes and
/// strides count elements. A launch error throws std::runtime_error naming
/// the op and the device.

#include <cstdint>

#include "actorgrad/device/cuda/cuda_backend.h"
#include "actorgrad/libengine/tensor/dtype.h"

namespace actorgrad::kernels::cuda::detail {

/// Where a launch goes, and the op its errors name.
struct Launch {
  const char* op;
  Stream stream;       ///< a stream of the launch's device
  cudaStream_t native; ///< its runtime handle (cuda::native_stream)
};

/// Most dims an elementwise launch takes once adjacent dims are merged.
inline constexpr int max_dims = 8;

/// An elementwise iteration over `numel` elements: `rank` dims of `sizes`
/// (outermost first); the output is contiguous and input j is read at the
/// index dotted with `strides[j]`. Rank 0 is one element.
struct Geometry {
  int rank = 0;
  std::int64_t numel = 1;
  std::int64_t sizes[max_dims] = {};
  std::int64_t strides[2][max_dims] = {};
};

enum class UnaryOp : std::uint8_t {
  copy,       ///< x (strided reads: expand, transpose, narrow)
  fill,       ///< s
  add_scalar, ///< x + s
  mul_scalar, ///< x * s
  pow_scalar, ///< x ** s
  neg,
  exp,
  log,
  tanh,
  sigmoid,
  relu,
  gt_scalar, ///< x > s ? 1 : 0
};

enum class BinaryOp : std::uint8_t {
  add,      ///< x + alpha * y
  sub,      ///< x - y
  mul,      ///< x * y
  div,      ///< x / y
  pow,      ///< x ** y
  second,   ///< y (copy_)
  abs_diff, ///< |x - y|
};

enum class ReduceOp : std::uint8_t {
  sum, ///< of nothing: 0
  max, ///< NaN wins, as on the CPU
};

/// out[i] = op(in[offset of i], s); `in` may be `out` when both are contiguous.
void unary(const Launch& l, UnaryOp op, DType t, double s, const Geometry& g, const void* in,
           void* out);

/// out[i] = op(a[offset 0 of i], b[offset 1 of i]); `a` may be `out` when both
/// are contiguous (the in-place ops).
void binary(const Launch& l, BinaryOp op, DType t, double alpha, const Geometry& g, const void* a,
            const void* b, void* out);

/// out[i] = in[i] converted from `from` to `to`, for `n` contiguous elements.
void cast(const Launch& l, DType from, DType to, std::int64_t n, const void* in, void* out);

/// `in` seen as [outer, size, inner] and `out` as [outer, k, inner]: row j
/// of out is row index[j] of in. `index` (k entries) is in device memory
/// and in range.
void gather_rows(const Launch& l, DType t, std::int64_t outer, std::int64_t size,
                 std::int64_t inner, const std::int64_t* index, std::int64_t k, const void* in,
                 void* out);

/// `out` seen as [outer, size, inner] and `src` as [outer, k, inner]: row j
/// of src is added to row index[j] of out, atomically (repeated indices
/// accumulate, in no fixed order).
void scatter_add_rows(const Launch& l, DType t, std::int64_t outer, std::int64_t size,
                      std::int64_t inner, const std::int64_t* index, std::int64_t k,
                      const void* src, void* out);

/// `in` seen as [outer, size, inner]: out[o, i] = op over j of in[o, j, i],
/// `out` contiguous [outer, inner]. Sums of float32 accumulate in float64.
void reduce(const Launch& l, ReduceOp op, DType t, std::int64_t outer, std::int64_t size,
            std::int64_t inner, const void* in, void* out);

/// Softmax (its log when `log`) along the middle dim of [outer, size, inner],
/// shifted by the lane max (by 0 when that max is infinite).
void softmax(const Launch& l, bool log, DType t, std::int64_t outer, std::int64_t size,
             std::int64_t inner, const void* in, void* out);

/// Sets *flag (device memory, zeroed by the caller) to 1 when any of the
/// `n` contiguous elements is NaN.
void find_nan(const Launch& l, DType t, std::int64_t n, const void* in, int* flag);

/// Row-major c[m, n] = a[m, k] b[k, n], all contiguous, through cuBLAS
/// (sgemm without TF32, dgemm; one handle per thread and device). Sizes
/// fit in 32 bits and k > 0.
void gemm(const Launch& l, DType t, int m, int n, int k, const void* a, const void* b, void* c);

} // namespace actorgrad::kernels::cuda::detail
