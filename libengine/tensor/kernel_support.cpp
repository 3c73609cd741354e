#include "actorgrad/libengine/tensor/detail/kernel_support.h"

#include <algorithm>
#include <stdexcept>

#include "actorgrad/device/guards.h"
#include "actorgrad/libengine/tensor/tensor_impl.h"

namespace actorgrad::kernels::detail {

void check_defined(const char* op, const Tensor& a) {
  if (!a.defined())
    throw std::logic_error(std::string(op) + ": undefined tensor");
}

void check_compatible(const char* op, const Tensor& a, const Tensor& b) {
  check_defined(op, a);
  check_defined(op, b);
  if (a.device() != b.device())
    throw std::invalid_argument(std::string(op) + ": tensors on different devices: " +
                                a.device().str() + " and " + b.device().str());
  if (a.dtype() != b.dtype())
    throw std::invalid_argument(std::string(op) + ": tensors of different dtypes: " +
                                dtype_name(a.dtype()) + " and " + dtype_name(b.dtype()));
}

Tensor empty_like(const Tensor& like, const Shape& shape) {
  return Tensor::empty(shape, like.dtype(), like.device());
}

Shape broadcast_strides(const Shape& from, const Shape& to) {
  const auto contiguous = contiguous_strides(from);
  const auto lead = to.size() - from.size();
  Shape out(to.size(), 0);
  for (std::size_t i = 0; i < from.size(); ++i)
    out[lead + i] = from[i] == 1 ? 0 : contiguous[i];
  return out;
}

DimSplit split_at(const Shape& shape, std::int64_t dim) {
  DimSplit s;
  for (std::int64_t d = 0; d < static_cast<std::int64_t>(shape.size()); ++d) {
    if (d < dim)
      s.outer *= shape[d];
    else if (d == dim)
      s.size = shape[d];
    else
      s.inner *= shape[d];
  }
  return s;
}

void launch_on_stream(const char* op, std::initializer_list<const Tensor*> reads,
                      std::initializer_list<const Tensor*> writes, std::function<void()> body) {
  const Device d = (*writes.begin())->device();
  std::vector<sim::Access> accesses;
  if (sim::detecting_races()) {
    // Every sim buffer, also the source of a copy from another sim device.
    auto add = [&](const Tensor& t, bool write, const std::string& role) {
      if (t.device().type == DeviceType::sim)
        accesses.push_back(
          {&t.impl()->storage->sim_state, write, role + " of " + op + " (" + t.describe() + ")"});
    };
    int i = 0;
    for (const Tensor* t : reads)
      add(*t, false, "input " + std::to_string(i++));
    for (const Tensor* t : writes)
      add(*t, true, "the output");
  }
  // A copy moves data between devices (or from the host); the rest are kernels.
  const bool copy =
    std::any_of(reads.begin(), reads.end(), [&](const Tensor* t) { return t->device() != d; });
  sim::launch(current_stream(d), op, copy ? DeviceWork::copy : DeviceWork::kernel, accesses,
              std::move(body));
}

void bump_version(const Tensor& self) { ++self.impl()->version->version; }

} // namespace actorgrad::kernels::detail
