#include "tools/cli/mlp.h"

#include <cmath>
#include <stdexcept>

#include "actorgrad/libengine/autograd/grad_mode.h"
#include "actorgrad/libengine/ops.h"

namespace actorgrad::cli {

Activation parse_activation(const std::string& text) {
  if (text == "tanh")
    return Activation::tanh;
  if (text == "relu")
    return Activation::relu;
  throw std::invalid_argument("unknown activation '" + text + "' (expected tanh or relu)");
}

Mlp::Mlp(const std::vector<std::int64_t>& sizes, Activation act, DType dtype,
         const std::vector<Device>& devices, std::uint64_t seed)
  : act_(act) {
  if (sizes.size() < 2)
    throw std::invalid_argument("an MLP needs at least an input and an output size");
  if (devices.empty())
    throw std::invalid_argument("an MLP needs at least one device");
  for (std::size_t i = 0; i + 1 < sizes.size(); ++i) {
    const auto in = sizes[i], out = sizes[i + 1];
    const Device dev = devices[i % devices.size()];
    const double bound = std::sqrt(6.0 / double(in + out));
    Linear l;
    l.device = dev;
    l.weight = Tensor::uniform({in, out}, -bound, bound, seed * 1000003u + i, dtype, dev);
    l.bias = Tensor::zeros({out}, dtype, dev);
    l.weight.set_requires_grad(true);
    l.bias.set_requires_grad(true);
    layers_.push_back(std::move(l));
  }
}

Tensor Mlp::forward(const Tensor& x) const {
  Tensor h = x;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const auto& l = layers_[i];
    if (h.device() != l.device)
      h = to_device(h, l.device);
    h = add(matmul(h, l.weight), l.bias);
    if (i + 1 < layers_.size())
      h = act_ == Activation::tanh ? tanh(h) : relu(h);
  }
  if (!h.device().is_cpu())
    h = to_device(h, Device::cpu());
  return h;
}

std::vector<Tensor> Mlp::parameters() const {
  std::vector<Tensor> ps;
  for (const auto& l : layers_) {
    ps.push_back(l.weight);
    ps.push_back(l.bias);
  }
  return ps;
}

std::int64_t Mlp::parameter_count() const {
  std::int64_t n = 0;
  for (const auto& p : parameters())
    n += p.numel();
  return n;
}

void Optimizer::zero_grad() {
  for (auto& p : params_)
    p.set_grad(Tensor());
}

SgdMomentum::SgdMomentum(std::vector<Tensor> params, double lr, double momentum)
  : Optimizer(std::move(params)), lr_(lr), momentum_(momentum) {
  for (const auto& p : params_)
    buf_.push_back(Tensor::zeros(p.shape(), p.dtype(), p.device()));
}

void SgdMomentum::step() {
  NoGradGuard no_grad;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const Tensor g = params_[i].grad();
    if (!g.defined())
      continue;
    buf_[i].mul_(momentum_).add_(g);
    params_[i].add_(buf_[i], -lr_);
  }
}

Adam::Adam(std::vector<Tensor> params, double lr, double beta1, double beta2, double eps)
  : Optimizer(std::move(params)), lr_(lr), beta1_(beta1), beta2_(beta2), eps_(eps) {
  for (const auto& p : params_) {
    m_.push_back(Tensor::zeros(p.shape(), p.dtype(), p.device()));
    v_.push_back(Tensor::zeros(p.shape(), p.dtype(), p.device()));
  }
}

void Adam::step() {
  NoGradGuard no_grad;
  ++t_;
  const double bc1 = 1.0 - std::pow(beta1_, double(t_));
  const double bc2 = 1.0 - std::pow(beta2_, double(t_));
  const double step_size = lr_ * std::sqrt(bc2) / bc1;
  const double eps_hat = eps_ * std::sqrt(bc2);
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const Tensor g = params_[i].grad();
    if (!g.defined())
      continue;
    m_[i].mul_(beta1_).add_(g, 1.0 - beta1_);
    v_[i].mul_(beta2_).add_(mul(g, g), 1.0 - beta2_);
    // p -= step_size * m / (sqrt(v) + eps_hat)  (bias corrections folded in)
    params_[i].add_(div(m_[i], add(pow(v_[i], 0.5), eps_hat)), -step_size);
  }
}

} // namespace actorgrad::cli
