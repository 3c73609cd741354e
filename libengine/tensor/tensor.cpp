// The autograd members of Tensor (data and factories: tensor_data.cpp).
#include "actorgrad/libengine/tensor/tensor.h"

#include <stdexcept>

#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/autograd/grad_mode.h"
#include "actorgrad/libengine/autograd/node.h"
#include "actorgrad/libengine/ops.h"
#include "actorgrad/libengine/tensor/kernels.h"
#include "actorgrad/libengine/tensor/tensor_impl.h"

namespace actorgrad {

AutogradMeta& TensorImpl::meta() {
  if (!autograd)
    autograd = std::make_unique<AutogradMeta>();
  return *autograd;
}

namespace {

const TensorImpl& checked(const std::shared_ptr<TensorImpl>& impl) {
  if (!impl)
    throw std::logic_error("undefined tensor");
  return *impl;
}

} // namespace

bool Tensor::requires_grad() const {
  const auto& i = checked(impl_);
  return i.autograd && i.autograd->requires_grad;
}

Tensor& Tensor::set_requires_grad(bool value) {
  checked(impl_);
  if (grad_fn())
    throw std::invalid_argument("set_requires_grad: only leaf tensors can be marked; this " +
                                describe() + " was produced by " + grad_fn()->name());
  impl_->meta().requires_grad = value;
  return *this;
}

Tensor Tensor::grad() const {
  const auto& i = checked(impl_);
  if (!i.autograd)
    return {};
  std::lock_guard<std::mutex> lock(i.autograd->mutex);
  return i.autograd->grad;
}

void Tensor::set_grad(const Tensor& g) {
  checked(impl_);
  if (g.defined() && g.shape() != shape())
    throw std::invalid_argument("set_grad: gradient " + g.describe() + " does not match " +
                                describe());
  auto& m = impl_->meta();
  std::lock_guard<std::mutex> lock(m.mutex);
  m.grad = g;
}

std::shared_ptr<Node> Tensor::grad_fn() const {
  const auto& i = checked(impl_);
  return i.autograd ? i.autograd->grad_fn : nullptr;
}

std::uint32_t Tensor::output_nr() const {
  const auto& i = checked(impl_);
  return i.autograd ? i.autograd->output_nr : 0;
}

bool Tensor::is_leaf() const { return grad_fn() == nullptr; }

void Tensor::retain_grad() {
  if (!requires_grad())
    throw std::invalid_argument("retain_grad: " + describe() + " does not require grad");
  if (is_leaf() || retains_grad())
    return; // leaves keep their grad already
  impl_->meta().retains_grad = true;
  std::weak_ptr<TensorImpl> weak = impl_;
  grad_fn()->add_retains_grad_hook(output_nr(), [weak](const Tensor& g) {
    if (auto impl = weak.lock(); impl && g.defined()) {
      auto& m = impl->meta();
      std::lock_guard<std::mutex> lock(m.mutex);
      m.grad = m.grad.defined() ? kernels::add(m.grad, g) : kernels::clone(g);
    }
    return Tensor();
  });
}

bool Tensor::retains_grad() const {
  const auto& i = checked(impl_);
  return i.autograd && i.autograd->retains_grad;
}

HookHandle Tensor::register_hook(std::function<Tensor(const Tensor&)> hook, std::string name) {
  if (!requires_grad())
    throw std::invalid_argument("register_hook: " + describe() +
                                " does not require grad, so no gradient reaches the hook");
  if (auto fn = grad_fn())
    return fn->add_tensor_pre_hook(output_nr(), std::move(hook), std::move(name));
  return impl_->meta().hooks.add(impl_, std::move(hook), std::move(name));
}

std::uint32_t Tensor::version() const {
  return checked(impl_).version->version.load(std::memory_order_relaxed);
}

Tensor Tensor::detach() const {
  const auto& i = checked(impl_);
  auto out = std::make_shared<TensorImpl>();
  out->storage = i.storage;
  out->offset = i.offset;
  out->shape = i.shape;
  out->strides = i.strides;
  out->dtype = i.dtype;
  out->version = i.version;
  return Tensor(std::move(out));
}

Tensor Tensor::to(Device device) const { return to_device(*this, device); }
Tensor Tensor::to(DType dtype) const { return to_dtype(*this, dtype); }

void Tensor::backward(const Tensor& gradient, bool retain_graph, bool create_graph,
                      const std::vector<Tensor>& inputs) const {
  BackwardOptions options{{}, retain_graph, create_graph, inputs};
  if (gradient.defined())
    options.grad_tensors.push_back(gradient);
  actorgrad::backward({*this}, options);
}

namespace {

// In-place ops are not differentiable here: refuse them where they would
// silently corrupt a recorded graph (PyTorch's leaf check).
void check_inplace(const Tensor& t, const char* op) {
  if (GradMode::is_enabled() && t.requires_grad())
    throw std::invalid_argument(std::string(op) + ": " + t.describe() +
                                " requires grad; in-place ops on it are only allowed under "
                                "NoGradGuard");
}

} // namespace

Tensor& Tensor::add_(const Tensor& other, double alpha) {
  check_inplace(*this, "add_");
  kernels::add_(*this, other, alpha);
  return *this;
}

Tensor& Tensor::sub_(const Tensor& other, double alpha) {
  check_inplace(*this, "sub_");
  kernels::sub_(*this, other, alpha);
  return *this;
}

Tensor& Tensor::mul_(const Tensor& other) {
  check_inplace(*this, "mul_");
  kernels::mul_(*this, other);
  return *this;
}

Tensor& Tensor::div_(const Tensor& other) {
  check_inplace(*this, "div_");
  kernels::div_(*this, other);
  return *this;
}

Tensor& Tensor::mul_(double factor) {
  check_inplace(*this, "mul_");
  kernels::mul_(*this, factor);
  return *this;
}

Tensor& Tensor::fill_(double value) {
  check_inplace(*this, "fill_");
  kernels::fill_(*this, value);
  return *this;
}

Tensor& Tensor::zero_() { return fill_(0.0); }

Tensor& Tensor::copy_(const Tensor& src) {
  check_inplace(*this, "copy_");
  kernels::copy_(*this, src);
  return *this;
}

} // namespace actorgrad
