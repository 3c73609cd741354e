#pragma once
/// @file kernels.h
/// Non-differentiable tensor kernels (CPU and sim: host memory, Eigen).
///
/// Every kernel returns a new contiguous tensor on the device of its inputs;
/// inputs on different devices, or of different dtypes, are an
/// std::invalid_argument naming both. Binary ops broadcast as NumPy does.
/// These record no autograd history: the differentiable ops in
/// libengine/ops/ call them and build the graph.

#include <cstdint>
#include <vector>

#include "actorgrad/libengine/tensor/tensor.h"

namespace actorgrad::kernels {

// -- elementwise --------------------------------------------------------------
Tensor add(const Tensor& a, const Tensor& b, double alpha = 1.0); ///< a + alpha * b
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor add_scalar(const Tensor& a, double s);
Tensor mul_scalar(const Tensor& a, double s);
Tensor pow_scalar(const Tensor& a, double exponent);
Tensor neg(const Tensor& a);
Tensor exp(const Tensor& a);
Tensor log(const Tensor& a);
Tensor tanh(const Tensor& a);
Tensor sigmoid(const Tensor& a);
Tensor relu(const Tensor& a);
/// 1 where a > s, else 0 (same dtype as a).
Tensor gt_scalar(const Tensor& a, double s);

// -- linear algebra -------------------------------------------------------------
/// 2-D x 2-D, 1-D x 2-D, 2-D x 1-D and 1-D x 1-D, as torch.matmul; Eigen GEMM.
Tensor matmul(const Tensor& a, const Tensor& b);

// -- reductions -------------------------------------------------------------------
/// Sum over `dims` (all dims when empty), keeping them as size 1 if keepdim.
Tensor sum(const Tensor& a, const std::vector<std::int64_t>& dims = {}, bool keepdim = false);
/// Max over one dim.
Tensor amax(const Tensor& a, std::int64_t dim, bool keepdim);
/// Sums a broadcast gradient back to `shape` (inverse of expand).
Tensor sum_to(const Tensor& a, const Shape& shape);
/// True if any element is NaN.
bool any_nan(const Tensor& a);

// -- shape and data movement ----------------------------------------------------
/// A contiguous copy of `a` broadcast to `shape`.
Tensor expand(const Tensor& a, const Shape& shape);
/// A contiguous copy with dims d0 and d1 swapped.
Tensor transpose(const Tensor& a, std::int64_t d0, std::int64_t d1);
/// A view with a new shape (same numel; one -1 is inferred); shares storage and version.
Tensor view(const Tensor& a, const Shape& shape);
/// Rows (along `dim`) picked by `index`; throws naming an out-of-range index.
Tensor index_select(const Tensor& a, std::int64_t dim, const std::vector<std::int64_t>& index);
/// Zeros of `shape` with `src` added at `index` along `dim` (backward of index_select).
Tensor index_add_into_zeros(const Shape& shape, std::int64_t dim,
                            const std::vector<std::int64_t>& index, const Tensor& src);
/// Elements [start, start + length) along `dim`, copied.
Tensor narrow(const Tensor& a, std::int64_t dim, std::int64_t start, std::int64_t length);
/// Zeros of `shape` with `src` written at [start, start + len) along `dim`.
Tensor narrow_into_zeros(const Shape& shape, std::int64_t dim, std::int64_t start,
                         const Tensor& src);
/// `tensors` joined along `dim`: one dtype, one device, one rank (at least
/// 1) and equal sizes except along `dim`; errors name the offending position.
Tensor cat(const std::vector<Tensor>& tensors, std::int64_t dim);
/// `tensors` (one shape) joined along a new dimension `dim`, in
/// [-(rank + 1), rank]; a cat of views.
Tensor stack(const std::vector<Tensor>& tensors, std::int64_t dim);
Tensor clone(const Tensor& a);
/// Copy converted to `dtype`.
Tensor cast(const Tensor& a, DType dtype);
/// Copy moved to `device`.
Tensor to_device(const Tensor& a, Device device);

// -- activations over a dim -------------------------------------------------------
Tensor softmax(const Tensor& a, std::int64_t dim);
Tensor log_softmax(const Tensor& a, std::int64_t dim);

// -- in place (bump the version counter) --------------------------------------
void add_(const Tensor& self, const Tensor& other,
          double alpha); ///< self += alpha * other (other broadcast to self)
void sub_(const Tensor& self, const Tensor& other,
          double alpha); ///< self -= alpha * other (other broadcast to self)
void mul_(const Tensor& self, double s);
void mul_(const Tensor& self, const Tensor& other); ///< self *= other (other broadcast to self)
void div_(const Tensor& self, const Tensor& other); ///< self /= other (other broadcast to self)
void fill_(const Tensor& self, double v);
void copy_(const Tensor& self, const Tensor& src);

/// Max |a - b| (same shape); for tests and examples.
double max_abs_diff(const Tensor& a, const Tensor& b);

} // namespace actorgrad::kernels
