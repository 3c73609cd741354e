#pragma once
/// @file scatter.h
/// Private to libengine/ops: the differentiable backwards of the row
/// selections, so their gradients can be differentiated again.

#include <cstdint>
#include <vector>

#include "actorgrad/libengine/tensor/tensor.h"

namespace actorgrad::detail {

/// Zeros of `shape` with `src` added at rows `index` along `dim`; backward
/// is index_select.
Tensor index_add_into_zeros(const Shape& shape, std::int64_t dim,
                            const std::vector<std::int64_t>& index, const Tensor& src);

/// Zeros of `shape` with `src` written from `start` along `dim`; backward is narrow.
Tensor narrow_into_zeros(const Shape& shape, std::int64_t dim, std::int64_t start,
                         const Tensor& src);

} // namespace actorgrad::detail
