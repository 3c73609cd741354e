#pragma once
/// @file shape.h
/// Shapes, contiguous strides and NumPy broadcasting.

#include <cstdint>
#include <string>
#include <vector>

namespace actorgrad {

/// Sizes of a tensor, outermost first.
using Shape = std::vector<std::int64_t>;

/// Number of elements of `s` (1 for a 0-dim shape).
std::int64_t numel_of(const Shape& s);

/// Row-major strides of a contiguous tensor of shape `s`, in elements.
Shape contiguous_strides(const Shape& s);

/// `[2, 3]`.
std::string shape_str(const Shape& s);

/// The NumPy broadcast of `a` and `b`; throws std::invalid_argument naming both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b);

/// True when `from` can be broadcast (expanded) to `to`.
bool is_expandable_to(const Shape& from, const Shape& to);

/// Normalizes a possibly negative dimension index; throws naming the dim and rank.
std::int64_t wrap_dim(std::int64_t dim, std::int64_t rank);

} // namespace actorgrad
