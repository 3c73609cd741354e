#include "actorgrad/libengine/autograd/accumulate_grad.h"

#include "actorgrad/libengine/autograd/grad_mode.h"
#include "actorgrad/libengine/ops.h"
#include "actorgrad/libengine/tensor/kernels.h"
#include "actorgrad/libengine/tensor/pending_reads.h"
#include "actorgrad/libengine/tensor/tensor_impl.h"

namespace actorgrad {

AccumulateGrad::AccumulateGrad(Tensor variable) : variable_(std::move(variable)) {
  add_input_metadata(variable_);
  may_have_hooks_.store(true, std::memory_order_relaxed); // its leaf's, registered any time
}

const HookList<TensorHook>* AccumulateGrad::leaf_hooks() const {
  return &variable_.impl()->meta().hooks;
}

variable_list AccumulateGrad::apply(variable_list&& grads) {
  Tensor new_grad = std::move(grads.at(0));
  if (!new_grad.defined())
    return {};
  auto& m = variable_.impl()->meta();
  // Note [Concurrent accumulation]
  // Several GraphTasks may reach the same
  // leaf at once (each caller thread runs its own CPU nodes), so the leaf's
  // gradient is guarded like PyTorch's AccumulateGrad guards it.
  std::lock_guard<std::mutex> lock(m.mutex);
  Tensor& grad = m.grad;
  if (!grad.defined()) {
    // Steal the incoming gradient when only the engine holds it and its
    // storage (no copy); under create_graph keep it so it carries its graph.
    const bool sole_owner = new_grad.use_count() == 1 && new_grad.impl()->storage.use_count() == 1;
    if (GradMode::is_enabled() || sole_owner)
      grad = std::move(new_grad);
    else
      grad = kernels::clone(new_grad);
  } else if (GradMode::is_enabled()) {
    grad = add(grad, new_grad);
  } else {
    order_write_after_reads(grad); // it may be a stolen gradient a copy read (Note [Pending reads])
    kernels::add_(grad, new_grad, 1.0);
  }
  return {};
}

} // namespace actorgrad
