#pragma once
/// @file gradcheck.h
/// Finite-difference checks of first- and second-order gradients (float64),
/// in the manner of torch.autograd.gradcheck / gradgradcheck. The analytic
/// side goes through actorgrad::grad, so it runs on the default executor.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "actorgrad/libengine/tensor/tensor.h"

namespace actorgrad::testing {

/// The function under test: several inputs, one output (any shape).
using TensorFn = std::function<Tensor(const std::vector<Tensor>&)>;

struct GradcheckOptions {
  /// Step of the central difference.
  double eps = 1e-6;
  /// An entry passes when |analytic - numeric| <= atol + rtol * |numeric|.
  double atol = 1e-5;
  double rtol = 1e-5;
  /// Seed of the random grad_outputs / directions of gradgradcheck.
  std::uint64_t seed = 20240601;
};

struct GradcheckResult {
  bool ok = true;
  double max_abs_err = 0;
  /// max |a - n| / max(|a|, |n|) over entries where either is nonzero.
  double max_rel_err = 0;
  /// Empty when ok; otherwise names the worst entry (input, element,
  /// analytic, numeric) and the number of failing entries.
  std::string message;
};

/// Compares the full Jacobian of `f` at `inputs` computed by
/// actorgrad::grad (one backward per output element, retain_graph) with
/// central differences. Only the inputs with requires_grad() are
/// differentiated; the others are constants. `inputs` are not modified:
/// the check works on fresh copies.
GradcheckResult gradcheck(const TensorFn& f, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options = {});

/// Second order. With g(x, u) = grad(f(x), x, grad_outputs = u,
/// create_graph = true) for a random u, and H(x, u) = sum_k sum(g_k * v_k)
/// for random v_k, compares grad(H, (x, u)) (the analytic second-order
/// gradient, including the derivative with respect to the grad_output) with
/// central differences of H, where each evaluation of H takes a first-order
/// backward.
GradcheckResult gradgradcheck(const TensorFn& f, const std::vector<Tensor>& inputs,
                              const GradcheckOptions& options = {});

} // namespace actorgrad::testing
