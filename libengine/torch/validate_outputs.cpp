#include "actorgrad/libengine/torch/validate_outputs.h"

#include <torch/csrc/autograd/function.h>

#include <sstream>

namespace actorgrad::torch::detail {

namespace {

// Note [Reading InputMetadata's shape]
// libtorch 1.13's InputMetadata has no public shape accessor: is_same_shape
// compares through out-of-line SymInt operators and costs about 200
// instructions a gradient, more than the rest of the checks. The member
// pointer below is taken by an explicit instantiation, where C++ does not
// check access ([temp.spec.general]/6), so same_shape compares the concrete
// sizes inline and leaves anything else (nested or symbolic) to
// is_same_shape.
using InputMetadata = ::torch::autograd::InputMetadata;
using MetadataShapePtr = ::torch::autograd::MetadataShape InputMetadata::*;
struct ShapeMember {
  friend MetadataShapePtr member(ShapeMember);
};
template <MetadataShapePtr M>
struct ExposeShape {
  friend MetadataShapePtr member(ShapeMember) { return M; }
};
template struct ExposeShape<&InputMetadata::shape_>;

/// True when `grad` surely has the metadata's shape: the same sizes, word
/// for word. A symbolic size is a tagged word no concrete size (never
/// negative) can equal, so a false here only means "not sure": validate_one
/// then asks is_same_shape.
bool same_shape(const InputMetadata& metadata, const at::Tensor& grad) {
  const auto* shape =
    c10::get_if<::torch::autograd::SymIntSmallVec>(&(metadata.*member(ShapeMember{})));
  if (shape == nullptr || grad.is_nested()) [[unlikely]]
    return false;
  const c10::SymIntArrayRef sizes = grad.sym_sizes();
  if (sizes.size() != shape->size())
    return false;
  for (std::size_t k = 0; k < sizes.size(); ++k)
    if (sizes[k].as_int_unchecked() != (*shape)[k].as_int_unchecked())
      return false;
  return true;
}

bool is_sparse_compressed(at::Layout l) {
  return l == at::kSparseCsr || l == at::kSparseCsc || l == at::kSparseBsr || l == at::kSparseBsc;
}

/// libtorch's format_error of call_function (made only on an error: a
/// node's name is a string built per call).
std::string in(const ::torch::autograd::Node* fn, const std::string& message) {
  return fn ? "Function " + fn->name() + " returned an " + message : message;
}

/// libtorch's checks and conversions of one gradient (out of line: the
/// fast path in validate_outputs handles the usual case).
[[gnu::noinline]] void validate_one(const InputMetadata& metadata, at::Tensor& grad, std::size_t i,
                                    const ::torch::autograd::Node* fn) {
  if (!metadata.is_same_shape(grad)) {
    if (metadata.is_expandable_to_shape(grad))
      grad = metadata.reduce_grad(grad);
    else
      TORCH_CHECK(false, in(fn, metadata.incompatible_shape_error_message(i, grad).str()));
  }
  const auto expected_type = c10::typeMetaToScalarType(metadata.options().dtype());
  // Spelled as libtorch spells it: the check's text is the error message.
  const bool input_is_complex = c10::isComplexType(expected_type);
  const bool grad_is_complex = c10::isComplexType(grad.scalar_type());
  TORCH_CHECK(isFloatingType(grad.scalar_type()) || (input_is_complex == grad_is_complex));
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

/// libtorch's "invalid number of gradients" error.
[[noreturn, gnu::noinline]] void wrong_count(std::size_t expected, std::size_t got,
                                             const ::torch::autograd::Node* fn) {
  std::stringstream ss;
  ss << "invalid number of gradients - expected " << expected << ", but got " << got;
  TORCH_CHECK(false, in(fn, ss.str()));
}

} // namespace

void validate_outputs(const std::vector<::torch::autograd::Edge>& edges,
                      std::vector<at::Tensor>& grads, const ::torch::autograd::Node* fn) {
  if (grads.size() != edges.size()) [[unlikely]]
    wrong_count(edges.size(), grads.size(), fn);
  for (std::size_t i = 0; i < grads.size(); ++i) {
    const auto& edge = edges[i];
    auto& grad = grads[i];
    // As libtorch: no check for an edge to nowhere or an undefined gradient.
    if (!edge.is_valid() || !grad.defined())
      continue;
    const auto& metadata = edge.function->input_metadata(edge.input_nr);
    // The usual case: every check of validate_one passes and converts nothing.
    if (grad.dtype() == metadata.dtype() && grad.layout() == metadata.layout() &&
        grad.device() == metadata.device() && same_shape(metadata, grad)) [[likely]] {
      TORCH_INTERNAL_ASSERT(c10::isFloatingType(grad.scalar_type()) ||
                            c10::isComplexType(grad.scalar_type()));
      continue;
    }
    validate_one(metadata, grad, i, fn);
  }
}

} // namespace actorgrad::torch::detail
