/// @file loss.cpp
/// Differentiable losses: nll_loss and cross_entropy.

#include <stdexcept>

#include "actorgrad/libengine/ops.h"
#include "actorgrad/libengine/ops/detail/function_node.h"
#include "actorgrad/libengine/tensor/kernels.h"

namespace actorgrad {

using detail::record;

namespace {

/// The constant W [N, C] with W[i, targets[i]] = -1/N and zeros elsewhere,
/// so that nll_loss = sum(W * log_probs) and its gradient is W * grad.
Tensor nll_weights(const Tensor& log_probs, const std::vector<std::int64_t>& targets) {
  if (log_probs.dim() != 2)
    throw std::invalid_argument("nll_loss: expected log_probs of shape [N, C], got " +
                                log_probs.describe());
  const auto n = log_probs.size(0);
  const auto c = log_probs.size(1);
  if (static_cast<std::int64_t>(targets.size()) != n)
    throw std::invalid_argument("nll_loss: " + std::to_string(targets.size()) +
                                " targets for log_probs of shape " + shape_str(log_probs.shape()));
  std::vector<double> w(static_cast<std::size_t>(n * c), 0.0);
  for (std::int64_t i = 0; i < n; ++i) {
    const auto t = targets[i];
    if (t < 0 || t >= c)
      throw std::out_of_range("nll_loss: target " + std::to_string(t) + " at index " +
                              std::to_string(i) + " is out of range for " + std::to_string(c) +
                              " classes");
    w[i * c + t] = -1.0 / static_cast<double>(n);
  }
  return Tensor::from_vector(w, log_probs.shape(), log_probs.dtype(), log_probs.device());
}

} // namespace

Tensor nll_loss(const Tensor& log_probs, const std::vector<std::int64_t>& targets) {
  auto w = nll_weights(log_probs, targets);
  auto out = kernels::sum(kernels::mul(log_probs, w));
  return record("NllLossBackward", std::move(out), {log_probs},
                [](const Tensor& g, const variable_list& s, const auto&) -> variable_list {
                  return {mul(s[0], g)};
                },
                {w});
}

Tensor cross_entropy(const Tensor& logits, const std::vector<std::int64_t>& targets) {
  return nll_loss(log_softmax(logits, 1), targets);
}

} // namespace actorgrad
