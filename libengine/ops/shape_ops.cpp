/// @file shape_ops.cpp
/// Differentiable shape changes: reshape/view, transpose, expand, clone,
/// cat and stack.

#include "actorgrad/libengine/ops.h"
#include "actorgrad/libengine/ops/detail/function_node.h"
#include "actorgrad/libengine/ops/detail/grad_shapes.h"
#include "actorgrad/libengine/tensor/kernels.h"

namespace actorgrad {

using detail::record;

namespace {

/// Records `out`, `inputs` joined along `dim` of `out` with `rows` rows
/// each (their size along `dim` for cat, 1 for stack): input i's gradient
/// is its rows of the output's gradient, in its own shape.
Tensor record_join(const char* name, Tensor out, const variable_list& inputs, std::int64_t dim,
                   const std::vector<std::int64_t>& rows) {
  std::vector<Shape> shapes;
  shapes.reserve(inputs.size());
  for (const auto& t : inputs)
    shapes.push_back(t.shape());
  return record(name, std::move(out), inputs,
                [dim, rows, shapes = std::move(shapes)](const Tensor& g, const auto&,
                                                        const auto& needs) -> variable_list {
                  variable_list grads(shapes.size());
                  std::int64_t start = 0;
                  for (std::size_t i = 0; i < shapes.size(); start += rows[i], ++i)
                    if (needs[i])
                      grads[i] = detail::as_shape(narrow(g, dim, start, rows[i]), shapes[i]);
                  return grads;
                });
}

} // namespace

Tensor reshape(const Tensor& a, const Shape& shape) {
  auto out = kernels::view(a, shape);
  return record("ViewBackward", std::move(out), {a},
                [sa = a.shape()](const Tensor& g, const auto&, const auto&) -> variable_list {
                  return {reshape(g, sa)};
                });
}

Tensor view(const Tensor& a, const Shape& shape) { return reshape(a, shape); }

Tensor transpose(const Tensor& a, std::int64_t d0, std::int64_t d1) {
  return record("TransposeBackward", kernels::transpose(a, d0, d1), {a},
                [d0, d1](const Tensor& g, const auto&, const auto&) -> variable_list {
                  return {transpose(g, d0, d1)};
                });
}

Tensor expand(const Tensor& a, const Shape& shape) {
  auto out = kernels::expand(a, shape);
  return record("ExpandBackward", std::move(out), {a},
                [sa = a.shape()](const Tensor& g, const auto&, const auto&) -> variable_list {
                  return {sum_to(g, sa)};
                });
}

Tensor cat(const variable_list& tensors, std::int64_t dim) {
  auto out = kernels::cat(tensors, dim);
  std::vector<std::int64_t> rows;
  rows.reserve(tensors.size());
  for (const auto& t : tensors)
    rows.push_back(t.size(dim));
  return record_join("CatBackward", std::move(out), tensors, dim, rows);
}

Tensor stack(const variable_list& tensors, std::int64_t dim) {
  auto out = kernels::stack(tensors, dim);
  return record_join("StackBackward", std::move(out), tensors, dim,
                     std::vector<std::int64_t>(tensors.size(), 1));
}

Tensor clone(const Tensor& a) {
  return record("CloneBackward", kernels::clone(a), {a},
                [](const Tensor& g, const auto&, const auto&) -> variable_list { return {g}; });
}

} // namespace actorgrad
