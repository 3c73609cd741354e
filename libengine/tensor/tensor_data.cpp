/// @file tensor_data.cpp
/// Tensor factories, metadata and element access (the non-autograd members).

#include <algorithm>
#include <random>
#include <stdexcept>

#include "actorgrad/device/sim/sim_backend.h"
#include "actorgrad/libengine/tensor/kernels.h"
#include "actorgrad/libengine/tensor/tensor.h"
#include "actorgrad/libengine/tensor/tensor_impl.h"

namespace actorgrad {

namespace {

const TensorImpl& checked(const TensorImpl* impl) {
  if (impl == nullptr)
    throw std::logic_error("undefined tensor");
  return *impl;
}

/// A tensor of `shape` on `device` whose elements are `next()` converted to
/// its element type. Filled on the host; a device tensor is then copied
/// there on the current stream, as a host-to-device copy.
template <class Gen>
Tensor filled(const Shape& shape, DType dtype, Device device, Gen&& next) {
  auto t = Tensor::empty(shape, dtype, Device::cpu());
  dispatch_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    auto* p = t.data<T>();
    for (std::int64_t i = 0, n = t.numel(); i < n; ++i)
      p[i] = static_cast<T>(next());
  });
  return device.is_cpu() ? t : kernels::to_device(t, device);
}

} // namespace

Tensor::Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

// -- factories ----------------------------------------------------------------

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  for (auto d : shape)
    if (d < 0)
      throw std::invalid_argument("negative size in shape " + shape_str(shape));
  auto impl = std::make_shared<TensorImpl>();
  impl->storage =
    Storage::allocate(static_cast<std::size_t>(numel_of(shape)) * element_size(dtype), device);
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) {
  return full(shape, 0.0, dtype, device);
}

Tensor Tensor::ones(const Shape& shape, DType dtype, Device device) {
  return full(shape, 1.0, dtype, device);
}

Tensor Tensor::full(const Shape& shape, double value, DType dtype, Device device) {
  return filled(shape, dtype, device, [value] { return value; });
}

Tensor Tensor::eye(std::int64_t n, DType dtype, Device device) {
  if (n < 0)
    throw std::invalid_argument("eye: n must be non-negative, got " + std::to_string(n));
  return filled({n, n}, dtype, device, [n, i = std::int64_t{0}]() mutable {
    const bool diagonal = i / n == i % n;
    ++i;
    return diagonal ? 1.0 : 0.0;
  });
}

Tensor Tensor::scalar(double value, DType dtype, Device device) {
  return full({}, value, dtype, device);
}

Tensor Tensor::from_vector(const std::vector<double>& values, const Shape& shape, DType dtype,
                           Device device) {
  if (static_cast<std::int64_t>(values.size()) != numel_of(shape))
    throw std::invalid_argument("from_vector: " + std::to_string(values.size()) +
                                " values do not fill shape " + shape_str(shape));
  return filled(shape, dtype, device, [it = values.begin()]() mutable { return *it++; });
}

Tensor Tensor::randn(const Shape& shape, std::uint64_t seed, DType dtype, Device device) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> dist(0.0, 1.0);
  return filled(shape, dtype, device, [&] { return dist(gen); });
}

Tensor Tensor::uniform(const Shape& shape, double lo, double hi, std::uint64_t seed, DType dtype,
                       Device device) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  return filled(shape, dtype, device, [&] { return dist(gen); });
}

Tensor Tensor::full_like(const Tensor& like, double value) {
  return full(like.shape(), value, like.dtype(), like.device());
}

// -- metadata -----------------------------------------------------------------

const Shape& Tensor::shape() const { return checked(impl_.get()).shape; }

const Shape& Tensor::strides() const { return checked(impl_.get()).strides; }

std::int64_t Tensor::dim() const { return static_cast<std::int64_t>(shape().size()); }

std::int64_t Tensor::size(std::int64_t d) const { return shape()[wrap_dim(d, dim())]; }

std::int64_t Tensor::numel() const { return numel_of(shape()); }

DType Tensor::dtype() const { return checked(impl_.get()).dtype; }

Device Tensor::device() const { return checked(impl_.get()).storage->device; }

std::string Tensor::describe() const {
  return dtype_name(dtype()) + shape_str(shape()) + " on " + device().str();
}

// -- data -----------------------------------------------------------------------

void prepare_host_access(const TensorImpl& t, bool write) {
  const Device d = t.storage->device;
  if (d.type != DeviceType::sim || !sim::is_async() || sim::on_stream_thread())
    return;
  std::string what;
  if (sim::detecting_races())
    what = dtype_name(t.dtype) + shape_str(t.shape) + " on " + d.str();
  sim::host_access(d, {&t.storage->sim_state, write, std::move(what)},
                   write ? "host write" : "host read");
}

template <class T>
T* Tensor::data() const {
  const auto& impl = checked(impl_.get());
  constexpr DType wanted = std::is_same_v<T, float> ? DType::f32 : DType::f64;
  if (impl.dtype != wanted)
    throw std::invalid_argument("data<" + dtype_name(wanted) + ">() called on a " + describe());
  prepare_host_access(impl);
  return static_cast<T*>(impl.raw());
}

template float* Tensor::data<float>() const;
template double* Tensor::data<double>() const;

namespace {

/// `t` itself when the host can read its memory, else a copy on the CPU
/// (device memory: data() is a device pointer there).
Tensor readable_on_host(const Tensor& t) {
  return t.device().type == DeviceType::cuda ? kernels::to_device(t, Device::cpu()) : t;
}

} // namespace

double Tensor::item() const {
  if (numel() != 1)
    throw std::invalid_argument("item() needs a one-element tensor, got shape " +
                                shape_str(shape()));
  const Tensor host = readable_on_host(*this);
  return dispatch_dtype(
    dtype(), [&](auto zero) { return static_cast<double>(*host.data<decltype(zero)>()); });
}

std::vector<double> Tensor::to_vector() const {
  const Tensor host = readable_on_host(*this);
  return dispatch_dtype(dtype(), [&](auto zero) {
    const auto* p = host.data<decltype(zero)>();
    return std::vector<double>(p, p + numel());
  });
}

double Tensor::at(std::initializer_list<std::int64_t> index) const {
  const auto& s = shape();
  const auto bad = [&] {
    std::string idx;
    for (auto i : index)
      idx += (idx.empty() ? "" : ", ") + std::to_string(i);
    return std::out_of_range("index (" + idx + ") out of range for shape " + shape_str(s));
  };
  if (index.size() != s.size())
    throw bad();
  std::int64_t linear = 0;
  std::size_t d = 0;
  for (auto i : index) {
    if (i < 0 || i >= s[d])
      throw bad();
    linear = linear * s[d] + i;
    ++d;
  }
  const Tensor host = readable_on_host(*this);
  return dispatch_dtype(
    dtype(), [&](auto zero) { return static_cast<double>(host.data<decltype(zero)>()[linear]); });
}

} // namespace actorgrad
