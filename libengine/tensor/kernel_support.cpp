#include "libengine/tensor/detail/kernel_support.h"

#include <stdexcept>

#include "libengine/tensor/tensor_impl.h"

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

void bump_version(const Tensor& self) { ++self.impl()->version->version; }

} // namespace actorgrad::kernels::detail
