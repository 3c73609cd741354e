/// @file indexing.cpp
/// Differentiable row selection (index_select, narrow) and their scatter
/// backwards, each the other's gradient.

#include "actorgrad/libengine/ops.h"
#include "actorgrad/libengine/ops/detail/function_node.h"
#include "actorgrad/libengine/ops/detail/scatter.h"
#include "actorgrad/libengine/tensor/kernels.h"

namespace actorgrad {

using detail::record;

Tensor index_select(const Tensor& a, std::int64_t dim, const std::vector<std::int64_t>& index) {
  auto out = kernels::index_select(a, dim, index);
  return record(
    "IndexSelectBackward", std::move(out), {a},
    [sa = a.shape(), dim, index](const Tensor& g, const auto&, const auto&) -> variable_list {
      return {detail::index_add_into_zeros(sa, dim, index, g)};
    });
}

Tensor narrow(const Tensor& a, std::int64_t dim, std::int64_t start, std::int64_t length) {
  auto out = kernels::narrow(a, dim, start, length);
  return record(
    "NarrowBackward", std::move(out), {a},
    [sa = a.shape(), dim, start](const Tensor& g, const auto&, const auto&) -> variable_list {
      return {detail::narrow_into_zeros(sa, dim, start, g)};
    });
}

namespace detail {

Tensor index_add_into_zeros(const Shape& shape, std::int64_t dim,
                            const std::vector<std::int64_t>& index, const Tensor& src) {
  return record("IndexSelectBackwardBackward",
                kernels::index_add_into_zeros(shape, dim, index, src), {src},
                [dim, index](const Tensor& g, const auto&, const auto&) -> variable_list {
                  return {index_select(g, dim, index)};
                });
}

Tensor narrow_into_zeros(const Shape& shape, std::int64_t dim, std::int64_t start,
                         const Tensor& src) {
  auto out = kernels::narrow_into_zeros(shape, dim, start, src);
  return record("NarrowBackwardBackward", std::move(out), {src},
                [dim, start, length = src.size(dim)](const Tensor& g, const auto&, const auto&)
                  -> variable_list { return {narrow(g, dim, start, length)}; });
}

} // namespace detail

} // namespace actorgrad
