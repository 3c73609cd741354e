#include "actorgrad/actors/remote/detail/wire_tensor.h"

#include <limits>

#include <caf/sec.hpp>

#include "actorgrad/libengine/autograd/grad_mode.h"

namespace actorgrad::remote::detail {

namespace {

constexpr std::uint8_t kMaxRank = 32;

caf::error malformed(const std::string& what) {
  return caf::make_error(caf::sec::invalid_argument, "malformed tensor on the wire: " + what);
}

} // namespace

std::string describe(const WireTensor& x) {
  return x.tensor.defined() ? x.tensor.describe() : std::string("undefined");
}

caf::error save_wire_tensor(caf::serializer& sink, const WireTensor& x) {
  std::uint8_t defined = x.tensor.defined() ? 1 : 0;
  if (auto err = sink(defined))
    return err;
  if (!defined)
    return caf::none;
  Tensor t = x.tensor;
  const Device device = t.device();
  if (!device.is_cpu()) {
    NoGradGuard no_grad;
    t = t.detach().to(Device::cpu());
  }
  auto dtype = static_cast<std::uint8_t>(t.dtype());
  auto device_type = static_cast<std::uint8_t>(device.type);
  std::int16_t device_index = device.index;
  auto rank = static_cast<std::uint8_t>(t.dim());
  if (auto err = sink(dtype, device_type, device_index, rank))
    return err;
  for (std::int64_t d = 0; d < t.dim(); ++d) {
    std::int64_t size = t.size(d);
    if (auto err = sink(size))
      return err;
  }
  std::size_t bytes = static_cast<std::size_t>(t.numel()) * element_size(t.dtype());
  void* data = dispatch_dtype(
    t.dtype(), [&](auto zero) -> void* { return static_cast<void*>(t.data<decltype(zero)>()); });
  if (auto err = sink.begin_sequence(bytes))
    return err;
  if (bytes > 0)
    if (auto err = sink.apply_raw(bytes, data))
      return err;
  return sink.end_sequence();
}

caf::error load_wire_tensor(caf::deserializer& source, WireTensor& x) {
  std::uint8_t defined = 0;
  if (auto err = source(defined))
    return err;
  if (defined == 0) {
    x.tensor = Tensor();
    return caf::none;
  }
  std::uint8_t dtype = 0, device_type = 0, rank = 0;
  std::int16_t device_index = 0;
  if (auto err = source(dtype, device_type, device_index, rank))
    return err;
  if (dtype > static_cast<std::uint8_t>(DType::f64))
    return malformed("unknown dtype " + std::to_string(dtype));
  if (device_type > static_cast<std::uint8_t>(DeviceType::cuda))
    return malformed("unknown device type " + std::to_string(device_type));
  if (rank > kMaxRank)
    return malformed("rank " + std::to_string(rank) + " above " + std::to_string(kMaxRank));
  Shape shape;
  std::int64_t numel = 1;
  for (std::uint8_t d = 0; d < rank; ++d) {
    std::int64_t size = 0;
    if (auto err = source(size))
      return err;
    if (size < 0 || (size > 0 && numel > std::numeric_limits<std::int64_t>::max() / size))
      return malformed("bad size " + std::to_string(size) + " in dimension " + std::to_string(d));
    numel *= size;
    shape.push_back(size);
  }
  const auto type = static_cast<DType>(dtype);
  std::size_t bytes = 0;
  if (auto err = source.begin_sequence(bytes))
    return err;
  const std::size_t expected = static_cast<std::size_t>(numel) * element_size(type);
  if (bytes != expected)
    return malformed(std::to_string(bytes) + " bytes of data for " + dtype_name(type) + " " +
                     shape_str(shape) + " (" + std::to_string(expected) + " expected)");
  Tensor t = Tensor::empty(shape, type, Device::cpu());
  void* data = dispatch_dtype(
    type, [&](auto zero) -> void* { return static_cast<void*>(t.data<decltype(zero)>()); });
  if (bytes > 0)
    if (auto err = source.apply_raw(bytes, data))
      return err;
  if (auto err = source.end_sequence())
    return err;
  const Device device{static_cast<DeviceType>(device_type), device_index};
  if (!device.is_cpu()) {
    try {
      NoGradGuard no_grad;
      t = t.to(device);
    } catch (const std::exception& e) {
      return malformed(std::string("cannot place it on ") + device.str() + ": " + e.what());
    }
  }
  x.tensor = std::move(t);
  return caf::none;
}

} // namespace actorgrad::remote::detail
