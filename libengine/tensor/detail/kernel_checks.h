#pragma once
/// @file kernel_checks.h
/// Argument checks and result shapes shared by the host kernels and the
/// CUDA kernels, so that every device validates alike and throws the same
/// messages. Private to the kernels.

#include <cstdint>
#include <optional>
#include <vector>

#include "actorgrad/libengine/tensor/detail/kernel_support.h"

namespace actorgrad::kernels::detail {

/// The NumPy broadcast of the shapes of `a` and `b`; the
/// std::invalid_argument names `op` and both shapes.
Shape broadcast_for(const char* op, const Tensor& a, const Tensor& b);

/// Throws std::invalid_argument naming `op` unless `other` can be broadcast
/// to the shape of `self` (in-place binary ops).
void check_broadcast_to(const char* op, const Tensor& other, const Tensor& self);

/// Throws std::invalid_argument unless `a` can be expanded to `shape`.
void check_expand(const Tensor& a, const Shape& shape);

/// Throws std::invalid_argument naming `op` unless `a` and `b` have one shape.
void check_same_shape(const char* op, const Tensor& a, const Tensor& b);

/// A matmul as row-major [m, k] x [k, n] and its result shape: a 1-D left
/// operand is a row vector, a 1-D right operand a column vector, and their
/// unit dimension is dropped from the result (torch.matmul).
struct MatmulDims {
  std::int64_t m = 1;
  std::int64_t k = 1;
  std::int64_t n = 1;
  Shape out;
};
/// Checks the operands of matmul (compatible, 1-D or 2-D, inner sizes equal).
MatmulDims matmul_dims(const Tensor& a, const Tensor& b);

/// The dims a sum reduces and the shapes around it.
struct SumDims {
  std::vector<bool> reduced; ///< per input dim
  Shape kept;                ///< the input shape with reduced dims set to 1
  Shape out;                 ///< the result shape (kept, less reduced dims unless keepdim)
};
/// Checks the dims of sum (all when empty; a repeated dim is an error).
SumDims sum_dims(const Tensor& a, const std::vector<std::int64_t>& dims, bool keepdim);

/// The lane split and result shape of a max over one dim.
struct AmaxDims {
  DimSplit split;
  Shape out;
};
/// Checks the dim of amax (which must not be empty).
AmaxDims amax_dims(const Tensor& a, std::int64_t dim, bool keepdim);

/// Throws std::out_of_range naming `op`, the index and the size when an
/// index is outside [0, size).
void check_indices(const char* op, const std::vector<std::int64_t>& index, std::int64_t size,
                   std::int64_t dim);

/// Throws std::out_of_range unless [start, start + length) lies in [0, size).
void check_range(const char* op, std::int64_t dim, std::int64_t start, std::int64_t length,
                 std::int64_t size);

/// Checks that `src` has `shape` except along `dim` (and there `rows`, when
/// given); returns `dim` wrapped.
std::int64_t check_scatter_source(const char* op, const Shape& shape, std::int64_t dim,
                                  const Tensor& src, std::optional<std::int64_t> rows);

/// Throws naming `op` unless `tensors` is a non-empty list of defined
/// tensors of one dtype and one device (errors name the position).
void check_joinable(const char* op, const std::vector<Tensor>& tensors);

/// The dim (wrapped) along which cat joins and its result shape.
struct CatDims {
  std::int64_t dim = 0;
  Shape out;
};
/// Checks the operands of cat (see kernels::cat).
CatDims cat_dims(const std::vector<Tensor>& tensors, std::int64_t dim);

/// wrap_dim, its errors prefixed with `op`.
std::int64_t wrap_dim_for(const char* op, std::int64_t dim, std::int64_t rank);

/// start, start + 1, ..., start + length - 1.
std::vector<std::int64_t> iota(std::int64_t start, std::int64_t length);

} // namespace actorgrad::kernels::detail
