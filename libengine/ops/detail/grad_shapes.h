#pragma once
/// @file grad_shapes.h
/// Private to libengine/ops: shape helpers for backward formulas.

#include <cstdint>
#include <vector>

#include "actorgrad/libengine/ops.h"

namespace actorgrad::detail {

/// `t` seen with `shape`: `t` itself when it already has it, else a reshape.
inline Tensor as_shape(const Tensor& t, const Shape& shape) {
  return t.shape() == shape ? t : reshape(t, shape);
}

/// `shape` with the reduced `dims` (all dims when empty) set to 1: the
/// keepdim shape of a reduction. `dims` were validated by the forward kernel.
inline Shape kept_shape(const Shape& shape, const std::vector<std::int64_t>& dims) {
  const auto rank = static_cast<std::int64_t>(shape.size());
  Shape kept = dims.empty() ? Shape(shape.size(), 1) : shape;
  for (auto d : dims)
    kept[wrap_dim(d, rank)] = 1;
  return kept;
}

} // namespace actorgrad::detail
