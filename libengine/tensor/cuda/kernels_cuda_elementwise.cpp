/// @file kernels_cuda_elementwise.cpp
/// Elementwise CUDA kernels: broadcasting binary ops, unary maps and the in-place kernels.

#include "actorgrad/libengine/tensor/cuda/kernels_cuda.h"

#include "actorgrad/libengine/tensor/cuda/detail/cuda_support.h"
#include "actorgrad/libengine/tensor/detail/kernel_checks.h"

namespace actorgrad::kernels::cuda {

using namespace kernels::detail;
using namespace cuda::detail;

namespace {

/// out = op(a, b) with NumPy broadcasting.
Tensor binary_op(const char* op, BinaryOp f, const Tensor& a, const Tensor& b, double alpha = 1.0) {
  check_compatible(op, a, b);
  const Shape shape = broadcast_for(op, a, b);
  const OnDevice on(op, a.device());
  auto out = empty_like(a, shape);
  const auto g =
    geometry(op, shape, {broadcast_strides(a.shape(), shape), broadcast_strides(b.shape(), shape)});
  on.kernels.binary(on.launch, f, a.dtype(), alpha, g, data_of(a), data_of(b),
                    mutable_data_of(out));
  return out;
}

/// out = op(a, s).
Tensor unary_op(const char* op, UnaryOp f, const Tensor& a, double s = 0.0) {
  check_defined(op, a);
  const OnDevice on(op, a.device());
  auto out = empty_like(a, a.shape());
  on.kernels.unary(on.launch, f, a.dtype(), s, geometry(op, a.shape(), {a.strides()}), data_of(a),
                   mutable_data_of(out));
  return out;
}

/// self = op(self, other) with `other` broadcast to self's shape; bumps the version.
void binary_inplace(const char* op, BinaryOp f, const Tensor& self, const Tensor& other,
                    double alpha) {
  check_compatible(op, self, other);
  check_broadcast_to(op, other, self);
  const OnDevice on(op, self.device());
  const auto g =
    geometry(op, self.shape(), {self.strides(), broadcast_strides(other.shape(), self.shape())});
  on.kernels.binary(on.launch, f, self.dtype(), alpha, g, data_of(self), data_of(other),
                    mutable_data_of(self));
  bump_version(self);
}

/// self = op(self, s); bumps the version.
void unary_inplace(const char* op, UnaryOp f, const Tensor& self, double s) {
  check_defined(op, self);
  const OnDevice on(op, self.device());
  on.kernels.unary(on.launch, f, self.dtype(), s, geometry(op, self.shape(), {self.strides()}),
                   data_of(self), mutable_data_of(self));
  bump_version(self);
}

} // namespace

Tensor add(const Tensor& a, const Tensor& b, double alpha) {
  return binary_op("add", BinaryOp::add, a, b, alpha);
}
Tensor sub(const Tensor& a, const Tensor& b) { return binary_op("sub", BinaryOp::sub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary_op("mul", BinaryOp::mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary_op("div", BinaryOp::div, a, b); }
Tensor pow(const Tensor& a, const Tensor& b) { return binary_op("pow", BinaryOp::pow, a, b); }

Tensor add_scalar(const Tensor& a, double s) {
  return unary_op("add_scalar", UnaryOp::add_scalar, a, s);
}
Tensor mul_scalar(const Tensor& a, double s) {
  return unary_op("mul_scalar", UnaryOp::mul_scalar, a, s);
}
Tensor pow_scalar(const Tensor& a, double exponent) {
  return unary_op("pow_scalar", UnaryOp::pow_scalar, a, exponent);
}
Tensor neg(const Tensor& a) { return unary_op("neg", UnaryOp::neg, a); }
Tensor exp(const Tensor& a) { return unary_op("exp", UnaryOp::exp, a); }
Tensor log(const Tensor& a) { return unary_op("log", UnaryOp::log, a); }
Tensor tanh(const Tensor& a) { return unary_op("tanh", UnaryOp::tanh, a); }
Tensor sigmoid(const Tensor& a) { return unary_op("sigmoid", UnaryOp::sigmoid, a); }
Tensor relu(const Tensor& a) { return unary_op("relu", UnaryOp::relu, a); }
Tensor gt_scalar(const Tensor& a, double s) {
  return unary_op("gt_scalar", UnaryOp::gt_scalar, a, s);
}

void add_(const Tensor& self, const Tensor& other, double alpha) {
  binary_inplace("add_", BinaryOp::add, self, other, alpha);
}
void sub_(const Tensor& self, const Tensor& other, double alpha) {
  binary_inplace("sub_", BinaryOp::add, self, other, -alpha);
}
void mul_(const Tensor& self, const Tensor& other) {
  binary_inplace("mul_", BinaryOp::mul, self, other, 1.0);
}
void div_(const Tensor& self, const Tensor& other) {
  binary_inplace("div_", BinaryOp::div, self, other, 1.0);
}
void copy_(const Tensor& self, const Tensor& src) {
  binary_inplace("copy_", BinaryOp::second, self, src, 1.0);
}
void mul_(const Tensor& self, double s) { unary_inplace("mul_", UnaryOp::mul_scalar, self, s); }
void fill_(const Tensor& self, double v) { unary_inplace("fill_", UnaryOp::fill, self, v); }

} // namespace actorgrad::kernels::cuda
