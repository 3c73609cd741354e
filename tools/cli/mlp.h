#pragma once
/// @file mlp.h
/// A small multi-layer perceptron whose layers may live on different devices,
/// and the optimizers that update it in place.

#include <cstdint>
#include <string>
#include <vector>

#include "actorgrad/libengine/tensor/tensor.h"

namespace actorgrad::cli {

enum class Activation { tanh, relu };

/// Parses `tanh` or `relu`; throws std::invalid_argument otherwise.
Activation parse_activation(const std::string& text);

/// One affine layer `y = x W + b` with W [in, out] and b [out] on `device`.
struct Linear {
  Tensor weight;
  Tensor bias;
  Device device;
};

/// `sizes[0] -> sizes[1] -> ... -> sizes.back()`, with the activation after
/// every layer but the last (which gives logits).
class Mlp {
public:
  /// Glorot-uniform weights and zero biases, drawn from `seed`. Layer i
  /// lives on `devices[i % devices.size()]`.
  Mlp(const std::vector<std::int64_t>& sizes, Activation act, DType dtype,
      const std::vector<Device>& devices, std::uint64_t seed);

  /// Logits [N, sizes.back()] on the CPU for `x` [N, sizes[0]] on the CPU.
  /// Activations are moved with to_device where consecutive layers live on
  /// different devices, so the backward crosses device workers.
  Tensor forward(const Tensor& x) const;

  /// Every weight and bias (the leaves to optimize).
  std::vector<Tensor> parameters() const;
  std::int64_t parameter_count() const;
  const std::vector<Linear>& layers() const { return layers_; }

private:
  std::vector<Linear> layers_;
  Activation act_;
};

/// Updates parameters in place from their .grad (under NoGradGuard) and
/// clears the gradients for the next step.
class Optimizer {
public:
  virtual ~Optimizer() = default;
  virtual void step() = 0;
  /// Sets every parameter's .grad to undefined.
  void zero_grad();

protected:
  explicit Optimizer(std::vector<Tensor> params) : params_(std::move(params)) {}
  std::vector<Tensor> params_;
};

/// SGD with (heavy-ball) momentum: `buf = mu * buf + g; p -= lr * buf`.
class SgdMomentum final : public Optimizer {
public:
  SgdMomentum(std::vector<Tensor> params, double lr, double momentum);
  void step() override;

private:
  double lr_, momentum_;
  std::vector<Tensor> buf_;
};

/// Adam (Kingma & Ba) with bias correction.
class Adam final : public Optimizer {
public:
  Adam(std::vector<Tensor> params, double lr, double beta1 = 0.9, double beta2 = 0.999,
       double eps = 1e-8);
  void step() override;

private:
  double lr_, beta1_, beta2_, eps_;
  std::int64_t t_ = 0;
  std::vector<Tensor> m_, v_;
};

} // namespace actorgrad::cli
