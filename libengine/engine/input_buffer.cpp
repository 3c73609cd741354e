#include "libengine/engine/input_buffer.h"

#include "libengine/autograd/grad_mode.h"
#include "libengine/ops.h"
#include "libengine/tensor/kernels.h"
#include "libengine/tensor/tensor_impl.h"

namespace actorgrad {

namespace {

// Only the engine holds this tensor and its storage: safe to add in place.
bool sole_owner(const Tensor& t) {
  return t.use_count() == 1 && t.impl()->storage.use_count() == 1;
}

} // namespace

void InputBuffer::add(std::size_t pos, Tensor&& grad) {
  if (!grad.defined())
    return;
  Tensor& old = buffer_.at(pos);
  if (!old.defined()) {
    old = std::move(grad);
  } else if (GradMode::is_enabled()) {
    old = actorgrad::add(old, grad); // create_graph: keep the sum's graph
  } else if (sole_owner(old)) {
    kernels::add_(old, grad, 1.0);
  } else if (sole_owner(grad)) {
    kernels::add_(grad, old, 1.0);
    old = std::move(grad);
  } else {
    old = kernels::add(old, grad);
  }
}

} // namespace actorgrad
