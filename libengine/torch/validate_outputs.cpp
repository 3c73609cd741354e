#include "actorgrad/libengine/torch/validate_outputs.h"

#include <torch/csrc/autograd/function.h>

#include <sstream>

namespace actorgrad::torch_bridge {

namespace {

bool is_sparse_compressed(at::Layout l) {
  return l == at::kSparseCsr || l == at::kSparseCsc || l == at::kSparseBsr || l == at::kSparseBsc;
}

/// libtorch's format_error of call_function (made only on an error: a
/// node's name is a string built per call).
std::string in(const ::torch::autograd::Node* fn, const std::string& message) {
  return fn ? "Function " + fn->name() + " returned an " + message : message;
}

} // namespace

void validate_outputs(const std::vector<::torch::autograd::Edge>& edges,
                      std::vector<at::Tensor>& grads, const ::torch::autograd::Node* fn) {
  if (grads.size() != edges.size()) {
    std::stringstream ss;
    ss << "invalid number of gradients - expected " << edges.size() << ", but got "
       << grads.size();
    TORCH_CHECK(false, in(fn, ss.str()));
  }
  for (std::size_t i = 0; i < grads.size(); ++i) {
    const auto& edge = edges[i];
    if (!edge.is_valid())
      continue;
    const auto& metadata = edge.function->input_metadata(edge.input_nr);
    auto& grad = grads[i];
    if (!grad.defined())
      continue; // as libtorch: an undefined gradient is allowed
    if (!metadata.is_same_shape(grad)) {
      if (metadata.is_expandable_to_shape(grad))
        grad = metadata.reduce_grad(grad);
      else
        TORCH_CHECK(false, in(fn, metadata.incompatible_shape_error_message(i, grad).str()));
    }
    const auto expected_type = c10::typeMetaToScalarType(metadata.options().dtype());
    TORCH_CHECK(c10::isFloatingType(grad.scalar_type()) ||
                c10::isComplexType(expected_type) == c10::isComplexType(grad.scalar_type()));
    if (expected_type != grad.scalar_type())
      grad = grad.to(expected_type);
    if (grad.layout() != metadata.layout() && !grad.is_sparse() &&
        !(grad.layout() == at::kStrided &&
          (is_sparse_compressed(metadata.layout()) || metadata.layout() == at::kSparse))) {
      std::stringstream ss;
      ss << "invalid gradient at index " << i << " - expected layout " << metadata.layout()
         << " but got " << grad.layout();
      TORCH_CHECK(false, in(fn, ss.str()));
    }
    if (grad.device() != metadata.device() &&
        !(metadata.is_tensor_subclass() || grad.unsafeGetTensorImpl()->is_python_dispatch())) {
      if (grad.dim() == 0) {
        grad = grad.to(metadata.device());
      } else {
        std::stringstream ss;
        ss << "invalid gradient at index " << i << " - expected device " << metadata.device()
           << " but got " << grad.device();
        TORCH_CHECK(false, in(fn, ss.str()));
      }
    }
    TORCH_INTERNAL_ASSERT(c10::isFloatingType(grad.scalar_type()) ||
                          c10::isComplexType(grad.scalar_type()));
  }
}

} // namespace actorgrad::torch_bridge
