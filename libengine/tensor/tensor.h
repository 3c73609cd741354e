#pragma once
/// @file tensor.h
/// The n-dimensional array the engine differentiates.

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "actorgrad/device/device.h"
#include "actorgrad/libengine/autograd/hook_handle.h"
#include "actorgrad/libengine/tensor/dtype.h"
#include "actorgrad/libengine/tensor/shape.h"

namespace actorgrad {

class Node;
struct TensorImpl;

/// A handle to a tensor: copies share the same data and autograd state
/// (like `torch::Tensor`). A default-constructed Tensor is undefined.
///
/// Tensors are contiguous row-major; views made by `reshape`/`view`/`detach`
/// share storage and the version counter with their base.
class Tensor {
public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl);

  // -- factories --------------------------------------------------------------

  /// Uninitialized tensor.
  static Tensor empty(const Shape& shape, DType dtype = DType::f64, Device device = Device::cpu());
  /// All zeros.
  static Tensor zeros(const Shape& shape, DType dtype = DType::f64, Device device = Device::cpu());
  /// All ones.
  static Tensor ones(const Shape& shape, DType dtype = DType::f64, Device device = Device::cpu());
  /// Every element `value`.
  static Tensor full(const Shape& shape, double value, DType dtype = DType::f64,
                     Device device = Device::cpu());
  /// The `n` x `n` identity matrix (torch.eye); throws if `n` is negative.
  static Tensor eye(std::int64_t n, DType dtype = DType::f64, Device device = Device::cpu());
  /// A 0-dim tensor holding `value`.
  static Tensor scalar(double value, DType dtype = DType::f64, Device device = Device::cpu());
  /// Copies `values` (row-major) into a new tensor; throws if the count does not match `shape`.
  static Tensor from_vector(const std::vector<double>& values, const Shape& shape,
                            DType dtype = DType::f64, Device device = Device::cpu());
  /// Standard normal samples drawn from a generator seeded with `seed`.
  static Tensor randn(const Shape& shape, std::uint64_t seed, DType dtype = DType::f64,
                      Device device = Device::cpu());
  /// Uniform samples in [lo, hi) drawn from a generator seeded with `seed`.
  static Tensor uniform(const Shape& shape, double lo, double hi, std::uint64_t seed,
                        DType dtype = DType::f64, Device device = Device::cpu());
  /// A tensor of the same shape, dtype and device as `like`, filled with `value`.
  static Tensor full_like(const Tensor& like, double value);

  // -- metadata ---------------------------------------------------------------

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  const Shape& strides() const;
  std::int64_t dim() const;
  /// Size of dimension `d` (negative counts from the end).
  std::int64_t size(std::int64_t d) const;
  std::int64_t numel() const;
  DType dtype() const;
  Device device() const;
  /// `float64[2, 3] on sim:0`.
  std::string describe() const;

  // -- data -------------------------------------------------------------------

  /// Pointer to the first element; T must match dtype() (checked). On a sim
  /// device it first synchronizes the current stream (a host access); on a
  /// CUDA device it is a device pointer (use to_vector() or item() to read).
  template <class T>
  T* data() const;
  /// The single element of a one-element tensor, as double.
  double item() const;
  /// All elements, row-major, as doubles.
  std::vector<double> to_vector() const;
  /// Element at a multi-index, as double.
  double at(std::initializer_list<std::int64_t> index) const;

  // -- autograd ---------------------------------------------------------------

  bool requires_grad() const;
  /// Marks a leaf as requiring grad; throws on a non-leaf.
  Tensor& set_requires_grad(bool value = true);
  /// Accumulated gradient of a leaf (or a tensor that retains grad); undefined if none.
  Tensor grad() const;
  /// Replaces the accumulated gradient (an undefined tensor clears it).
  void set_grad(const Tensor& g);
  /// The backward function that produced this tensor; null for a leaf.
  std::shared_ptr<Node> grad_fn() const;
  /// Which output of grad_fn() this tensor is.
  std::uint32_t output_nr() const;
  /// No grad_fn (created by the user, or does not require grad).
  bool is_leaf() const;
  /// Makes a non-leaf keep its gradient in grad() during backward.
  void retain_grad();
  bool retains_grad() const;
  /// Registers a hook called with this tensor's gradient during backward
  /// (hooks run in registration order). A defined return value replaces the
  /// gradient and must have its shape, dtype and device, else the backward
  /// fails with an error naming the hook (its index, and `name` when
  /// given) and the node; an undefined one keeps the gradient. The handle's
  /// remove() takes the hook out (see hook_handle.h for removal during a
  /// backward).
  HookHandle register_hook(std::function<Tensor(const Tensor&)> hook, std::string name = {});
  /// Bumped by every in-place op; shared with views and detached aliases.
  std::uint32_t version() const;
  /// A tensor sharing data and version counter, with no autograd history.
  Tensor detach() const;
  /// A copy on `device` (this tensor if already there); differentiable.
  Tensor to(Device device) const;
  /// A copy of element type `dtype` (this tensor if already it); differentiable.
  Tensor to(DType dtype) const;

  /// `torch.Tensor.backward`: uses the default executor.
  void backward(const Tensor& gradient = {}, bool retain_graph = false, bool create_graph = false,
                const std::vector<Tensor>& inputs = {}) const;

  // -- in-place (bump the version; refused on tensors that need grad while grad mode is on)

  /// this += alpha * other (`other` broadcast to this tensor's shape).
  Tensor& add_(const Tensor& other, double alpha = 1.0);
  /// this -= alpha * other (`other` broadcast to this tensor's shape).
  Tensor& sub_(const Tensor& other, double alpha = 1.0);
  Tensor& mul_(double factor);
  /// this *= other (`other` broadcast to this tensor's shape).
  Tensor& mul_(const Tensor& other);
  /// this /= other (`other` broadcast to this tensor's shape).
  Tensor& div_(const Tensor& other);
  Tensor& fill_(double value);
  Tensor& zero_();
  /// Copies `src` (same shape) into this tensor.
  Tensor& copy_(const Tensor& src);

  // -- identity ---------------------------------------------------------------

  /// Same underlying tensor (not just equal values).
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  /// Number of Tensor handles sharing this tensor (for AccumulateGrad's steal).
  long use_count() const { return impl_.use_count(); }

private:
  std::shared_ptr<TensorImpl> impl_;
};

/// A list of tensors (gradients in and out of a Node).
using variable_list = std::vector<Tensor>;

} // namespace actorgrad
