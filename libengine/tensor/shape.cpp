#include "actorgrad/libengine/tensor/shape.h"

#include <algorithm>
#include <stdexcept>

namespace actorgrad {

std::int64_t numel_of(const Shape& s) {
  std::int64_t n = 1;
  for (auto d : s)
    n *= d;
  return n;
}

Shape contiguous_strides(const Shape& s) {
  Shape strides(s.size());
  std::int64_t stride = 1;
  for (auto i = s.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= s[i];
  }
  return strides;
}

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i > 0)
      out += ", ";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const auto rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    // Align from the right: dims missing on the left count as 1.
    const auto da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const auto db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      throw std::invalid_argument("shapes " + shape_str(a) + " and " + shape_str(b) +
                                  " cannot be broadcast together");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

bool is_expandable_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size())
    return false;
  const auto lead = to.size() - from.size();
  for (std::size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[lead + i])
      return false;
  return true;
}

std::int64_t wrap_dim(std::int64_t dim, std::int64_t rank) {
  if (rank == 0)
    throw std::invalid_argument("dimension " + std::to_string(dim) +
                                " given for a 0-dim tensor (rank 0)");
  if (dim < -rank || dim >= rank)
    throw std::out_of_range("dimension " + std::to_string(dim) + " out of range for rank " +
                            std::to_string(rank) + " (expected in [" + std::to_string(-rank) +
                            ", " + std::to_string(rank - 1) + "])");
  return dim < 0 ? dim + rank : dim;
}

} // namespace actorgrad
