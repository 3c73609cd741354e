#pragma once
/// @file remote_ops.h
/// The forward ops a worker runs for remote_call.

#include <string>
#include <vector>

#include "actorgrad/libengine/tensor/tensor.h"

namespace actorgrad::remote {

/// Non-tensor arguments of a remote op.
struct OpAttrs {
  /// Names of worker-held parameters (created with RemoteWorker::create_param).
  std::vector<std::string> params = {};
  /// Numeric attributes.
  std::vector<double> numbers = {};
  /// Text attribute.
  std::string text = {};
};

/// Runs forward op `op` on `args` with the worker's parameters `params`
/// (resolved from attrs.params, same order). Ops (args -> outputs):
///
/// - `identity`  x -> x
/// - `linear`    x -> x @ W + b         params {W, b} (or {W}: no bias)
/// - `matmul`, `add`, `sub`, `mul`      a, b -> a op b
/// - `relu`, `tanh`, `sigmoid`, `exp`   x -> f(x)
/// - `sum`, `mean`                      x -> 0-dim
/// - `mse`       pred, target -> mean((pred - target)^2)
///
/// Test ops, only when `test_ops` (the worker was started with
/// --enable-test-ops):
/// - `test.slow_backward`  x -> x; its backward (node `SlowBackward`)
///   creates the file named by attrs.text (when given), then sleeps
///   attrs.numbers[0] ms.
/// - `test.nan_backward`   x -> x; its backward (node `NanBackward`)
///   returns NaN.
///
/// Throws std::invalid_argument naming the op and what is wrong (unknown
/// op, wrong number of arguments or parameters); shape errors come from
/// the ops themselves.
variable_list run_remote_op(const std::string& op, const variable_list& args,
                            const variable_list& params, const OpAttrs& attrs, bool test_ops);

} // namespace actorgrad::remote
