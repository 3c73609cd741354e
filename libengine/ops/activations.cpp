/// @file activations.cpp
/// Differentiable activations: tanh, sigmoid, relu, softmax and log_softmax.
/// Each saves its own output, from which its gradient follows.

#include "actorgrad/libengine/ops.h"
#include "actorgrad/libengine/ops/detail/function_node.h"
#include "actorgrad/libengine/tensor/kernels.h"

namespace actorgrad {

using detail::record;

Tensor tanh(const Tensor& a) {
  // d tanh = 1 - y^2
  return record(
    "TanhBackward", kernels::tanh(a), {a},
    [](const Tensor& g, const variable_list& s, const auto&) -> variable_list {
      return {mul(g, add(neg(mul(s[0], s[0])), 1.0))};
    },
    {}, true);
}

Tensor sigmoid(const Tensor& a) {
  // d sigmoid = y * (1 - y)
  return record(
    "SigmoidBackward", kernels::sigmoid(a), {a},
    [](const Tensor& g, const variable_list& s, const auto&) -> variable_list {
      return {mul(g, mul(s[0], add(neg(s[0]), 1.0)))};
    },
    {}, true);
}

Tensor relu(const Tensor& a) {
  // The mask y > 0 is a constant: relu's second derivative is zero.
  return record(
    "ReluBackward", kernels::relu(a), {a},
    [](const Tensor& g, const variable_list& s, const auto&) -> variable_list {
      return {mul(g, kernels::gt_scalar(s[0], 0.0))};
    },
    {}, true);
}

Tensor softmax(const Tensor& a, std::int64_t dim) {
  // d softmax: y * (g - sum(g * y, dim))
  return record(
    "SoftmaxBackward", kernels::softmax(a, dim), {a},
    [dim](const Tensor& g, const variable_list& s, const auto&) -> variable_list {
      return {mul(s[0], sub(g, sum(mul(g, s[0]), {dim}, true)))};
    },
    {}, true);
}

Tensor log_softmax(const Tensor& a, std::int64_t dim) {
  // d log_softmax: g - exp(y) * sum(g, dim)
  return record(
    "LogSoftmaxBackward", kernels::log_softmax(a, dim), {a},
    [dim](const Tensor& g, const variable_list& s, const auto&) -> variable_list {
      return {sub(g, mul(exp(s[0]), sum(g, {dim}, true)))};
    },
    {}, true);
}

} // namespace actorgrad
