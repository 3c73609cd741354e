/// @file kernels_elementwise.cpp
/// Elementwise kernels: broadcasting binary ops, unary maps and the in-place kernels.

#include <cmath>
#include <stdexcept>

#include "actorgrad/libengine/tensor/detail/cuda_dispatch.h"
#include "actorgrad/libengine/tensor/detail/kernel_checks.h"
#include "actorgrad/libengine/tensor/detail/kernel_support.h"
#include "actorgrad/libengine/tensor/kernels.h"

namespace actorgrad::kernels {

using namespace detail;

namespace {

/// out = f(a, b) with NumPy broadcasting; `f` maps two scalars to one.
template <class F>
Tensor binary(const char* op, const Tensor& a, const Tensor& b, F f) {
  check_compatible(op, a, b);
  const Shape out_shape = broadcast_for(op, a, b);
  auto out = empty_like(a, out_shape);
  launch(op, {&a, &b}, {&out}, [a, b, out, f] {
    dispatch_dtype(a.dtype(), [&](auto zero) {
      using T = decltype(zero);
      if (a.shape() == b.shape()) {
        array_of<T>(out) = const_array_of<T>(a).binaryExpr(const_array_of<T>(b), f);
        return;
      }
      const T* pa = a.data<T>();
      const T* pb = b.data<T>();
      T* po = out.data<T>();
      const auto sa = broadcast_strides(a.shape(), out.shape());
      const auto sb = broadcast_strides(b.shape(), out.shape());
      for_each_strided<2>(out.shape(), {&sa, &sb},
                          [&](const auto& off) { *po++ = f(pa[off[0]], pb[off[1]]); });
    });
  });
  return out;
}

/// out = f(map of a); `f` maps an Eigen array expression to another (vectorized).
template <class F>
Tensor unary(const char* op, const Tensor& a, F f) {
  check_defined(op, a);
  auto out = empty_like(a, a.shape());
  launch(op, {&a}, {&out}, [a, out, f] {
    dispatch_dtype(a.dtype(), [&](auto zero) {
      using T = decltype(zero);
      array_of<T>(out) = f(const_array_of<T>(a));
    });
  });
  return out;
}

/// self = f(self, other) with `other` broadcast to self's shape; bumps the version.
template <class F>
void binary_inplace(const char* op, const Tensor& self, const Tensor& other, F f) {
  check_compatible(op, self, other);
  check_broadcast_to(op, other, self);
  launch(op, {&other, &self}, {&self}, [self, other, f] {
    dispatch_dtype(self.dtype(), [&](auto zero) {
      using T = decltype(zero);
      if (self.shape() == other.shape()) {
        auto s = array_of<T>(self);
        s = s.binaryExpr(const_array_of<T>(other), f);
        return;
      }
      T* ps = self.data<T>();
      const T* po = other.data<T>();
      const auto so = broadcast_strides(other.shape(), self.shape());
      for_each_strided<1>(self.shape(), {&so}, [&](const auto& off) {
        *ps = f(*ps, po[off[0]]);
        ++ps;
      });
    });
  });
  bump_version(self);
}

} // namespace

// -- binary -------------------------------------------------------------------

Tensor add(const Tensor& a, const Tensor& b, double alpha) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(a), cuda::add(a, b, alpha));
  return binary("add", a, b,
                [alpha](auto x, auto y) { return x + static_cast<decltype(x)>(alpha) * y; });
}

Tensor sub(const Tensor& a, const Tensor& b) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(a), cuda::sub(a, b));
  return binary("sub", a, b, [](auto x, auto y) { return x - y; });
}

Tensor mul(const Tensor& a, const Tensor& b) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(a), cuda::mul(a, b));
  return binary("mul", a, b, [](auto x, auto y) { return x * y; });
}

Tensor div(const Tensor& a, const Tensor& b) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(a), cuda::div(a, b));
  return binary("div", a, b, [](auto x, auto y) { return x / y; });
}

Tensor pow(const Tensor& a, const Tensor& b) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(a), cuda::pow(a, b));
  return binary("pow", a, b, [](auto x, auto y) { return std::pow(x, y); });
}

// -- unary --------------------------------------------------------------------

Tensor add_scalar(const Tensor& a, double s) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(a), cuda::add_scalar(a, s));
  return unary("add_scalar", a, [s](const auto& x) { return x + scalar_of<decltype(x)>(s); });
}

Tensor mul_scalar(const Tensor& a, double s) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(a), cuda::mul_scalar(a, s));
  return unary("mul_scalar", a, [s](const auto& x) { return x * scalar_of<decltype(x)>(s); });
}

Tensor pow_scalar(const Tensor& a, double exponent) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(a), cuda::pow_scalar(a, exponent));
  return unary("pow_scalar", a,
               [exponent](const auto& x) { return x.pow(scalar_of<decltype(x)>(exponent)); });
}

Tensor neg(const Tensor& a) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(a), cuda::neg(a));
  return unary("neg", a, [](const auto& x) { return -x; });
}

Tensor exp(const Tensor& a) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(a), cuda::exp(a));
  return unary("exp", a, [](const auto& x) { return x.exp(); });
}

Tensor log(const Tensor& a) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(a), cuda::log(a));
  return unary("log", a, [](const auto& x) { return x.log(); });
}

Tensor tanh(const Tensor& a) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(a), cuda::tanh(a));
  return unary("tanh", a, [](const auto& x) { return x.tanh(); });
}

Tensor sigmoid(const Tensor& a) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(a), cuda::sigmoid(a));
  return unary("sigmoid", a, [](const auto& x) {
    using T = scalar_of<decltype(x)>;
    return (T(1) + (-x).exp()).inverse();
  });
}

Tensor relu(const Tensor& a) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(a), cuda::relu(a));
  return unary("relu", a, [](const auto& x) { return x.max(scalar_of<decltype(x)>(0)); });
}

Tensor gt_scalar(const Tensor& a, double s) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(a), cuda::gt_scalar(a, s));
  return unary("gt_scalar", a, [s](const auto& x) {
    using T = scalar_of<decltype(x)>;
    return (x > T(s)).template cast<T>();
  });
}

// -- in place -------------------------------------------------------------------

void add_(const Tensor& self, const Tensor& other, double alpha) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(self), cuda::add_(self, other, alpha));
  binary_inplace("add_", self, other,
                 [alpha](auto x, auto y) { return x + static_cast<decltype(x)>(alpha) * y; });
}

void sub_(const Tensor& self, const Tensor& other, double alpha) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(self), cuda::sub_(self, other, alpha));
  binary_inplace("sub_", self, other,
                 [alpha](auto x, auto y) { return x - static_cast<decltype(x)>(alpha) * y; });
}

void mul_(const Tensor& self, const Tensor& other) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(self), cuda::mul_(self, other));
  binary_inplace("mul_", self, other, [](auto x, auto y) { return x * y; });
}

void div_(const Tensor& self, const Tensor& other) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(self), cuda::div_(self, other));
  binary_inplace("div_", self, other, [](auto x, auto y) { return x / y; });
}

void copy_(const Tensor& self, const Tensor& src) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(self), cuda::copy_(self, src));
  binary_inplace("copy_", self, src, [](auto, auto y) { return y; });
}

void mul_(const Tensor& self, double s) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(self), cuda::mul_(self, s));
  check_defined("mul_", self);
  launch("mul_", {&self}, {&self}, [self, s] {
    dispatch_dtype(self.dtype(), [&](auto zero) {
      using T = decltype(zero);
      array_of<T>(self) *= static_cast<T>(s);
    });
  });
  bump_version(self);
}

void fill_(const Tensor& self, double v) {
  ACTORGRAD_CUDA_DISPATCH(on_cuda(self), cuda::fill_(self, v));
  check_defined("fill_", self);
  launch("fill_", {}, {&self}, [self, v] {
    dispatch_dtype(self.dtype(), [&](auto zero) {
      using T = decltype(zero);
      array_of<T>(self).setConstant(static_cast<T>(v));
    });
  });
  bump_version(self);
}

} // namespace actorgrad::kernels
