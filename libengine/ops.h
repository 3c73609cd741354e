#pragma once
/// @file ops.h
/// Differentiable tensor operations. Each records a backward node when grad
/// mode is on and an input requires grad; each backward is itself written in
/// these ops, so create_graph gives higher-order gradients.

#include <cstdint>
#include <vector>

#include "actorgrad/libengine/tensor/tensor.h"

namespace actorgrad {

Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor neg(const Tensor& a);
Tensor add(const Tensor& a, double s);
Tensor mul(const Tensor& a, double s);
/// a ** exponent
Tensor pow(const Tensor& a, double exponent);
/// a ** b elementwise (a > 0 for the gradient with respect to b)
Tensor pow(const Tensor& a, const Tensor& b);
Tensor exp(const Tensor& a);
Tensor log(const Tensor& a);
Tensor tanh(const Tensor& a);
Tensor sigmoid(const Tensor& a);
Tensor relu(const Tensor& a);
Tensor matmul(const Tensor& a, const Tensor& b);
/// Sum of all elements (0-dim).
Tensor sum(const Tensor& a);
/// Sum over `dims`.
Tensor sum(const Tensor& a, const std::vector<std::int64_t>& dims, bool keepdim = false);
Tensor mean(const Tensor& a);
Tensor mean(const Tensor& a, const std::vector<std::int64_t>& dims, bool keepdim = false);
/// Same data, new shape (one -1 inferred); shares storage.
Tensor reshape(const Tensor& a, const Shape& shape);
/// Alias of reshape (tensors are always contiguous).
Tensor view(const Tensor& a, const Shape& shape);
Tensor transpose(const Tensor& a, std::int64_t d0, std::int64_t d1);
/// Broadcast to `shape`; backward sums back.
Tensor expand(const Tensor& a, const Shape& shape);
/// Sum a broadcast tensor back to `shape`; backward expands.
Tensor sum_to(const Tensor& a, const Shape& shape);
Tensor clone(const Tensor& a);
/// `tensors` joined along `dim` (torch.cat): one dtype, one device, equal
/// sizes except along `dim`. Each input's gradient is its slice.
Tensor cat(const variable_list& tensors, std::int64_t dim = 0);
/// `tensors` (one shape) joined along a new dimension `dim`, in
/// [-(rank + 1), rank] (torch.stack). Each input's gradient is its slice.
Tensor stack(const variable_list& tensors, std::int64_t dim = 0);
Tensor index_select(const Tensor& a, std::int64_t dim, const std::vector<std::int64_t>& index);
/// Elements [start, start + length) along `dim`.
Tensor narrow(const Tensor& a, std::int64_t dim, std::int64_t start, std::int64_t length);
Tensor softmax(const Tensor& a, std::int64_t dim);
Tensor log_softmax(const Tensor& a, std::int64_t dim);
/// Mean negative log-likelihood of `targets` (class indices) under
/// `log_probs` [N, C].
Tensor nll_loss(const Tensor& log_probs, const std::vector<std::int64_t>& targets);
/// log_softmax over dim 1 then nll_loss: logits [N, C], targets N class indices.
Tensor cross_entropy(const Tensor& logits, const std::vector<std::int64_t>& targets);
/// Differentiable device copy (gradient goes back to the source device).
Tensor to_device(const Tensor& a, Device device);
/// Differentiable dtype cast.
Tensor to_dtype(const Tensor& a, DType dtype);

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator-(const Tensor& a) { return neg(a); }
inline Tensor operator+(const Tensor& a, double s) { return add(a, s); }
inline Tensor operator+(double s, const Tensor& a) { return add(a, s); }
inline Tensor operator-(const Tensor& a, double s) { return add(a, -s); }
inline Tensor operator*(const Tensor& a, double s) { return mul(a, s); }
inline Tensor operator*(double s, const Tensor& a) { return mul(a, s); }
inline Tensor operator/(const Tensor& a, double s) { return mul(a, 1.0 / s); }

} // namespace actorgrad
