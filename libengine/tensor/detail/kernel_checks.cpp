#include "actorgrad/libengine/tensor/detail/kernel_checks.h"

#include <numeric>
#include <stdexcept>
#include <string>

namespace actorgrad::kernels::detail {

Shape broadcast_for(const char* op, const Tensor& a, const Tensor& b) {
  try {
    return broadcast_shapes(a.shape(), b.shape());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string(op) + ": " + e.what());
  }
}

void check_broadcast_to(const char* op, const Tensor& other, const Tensor& self) {
  if (!is_expandable_to(other.shape(), self.shape()))
    throw std::invalid_argument(std::string(op) + ": shape " + shape_str(other.shape()) +
                                " cannot be broadcast to " + shape_str(self.shape()));
}

void check_expand(const Tensor& a, const Shape& shape) {
  check_defined("expand", a);
  if (!is_expandable_to(a.shape(), shape))
    throw std::invalid_argument("expand: shape " + shape_str(a.shape()) +
                                " cannot be expanded to " + shape_str(shape));
}

void check_same_shape(const char* op, const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape())
    throw std::invalid_argument(std::string(op) + ": shapes " + shape_str(a.shape()) + " and " +
                                shape_str(b.shape()) + " differ");
}

MatmulDims matmul_dims(const Tensor& a, const Tensor& b) {
  check_compatible("matmul", a, b);
  const auto mismatch = [&](const std::string& why) {
    return std::invalid_argument("matmul: shapes " + shape_str(a.shape()) + " and " +
                                 shape_str(b.shape()) + " " + why);
  };
  if (a.dim() < 1 || a.dim() > 2 || b.dim() < 1 || b.dim() > 2)
    throw mismatch("are not 1-D or 2-D");
  MatmulDims d;
  d.m = a.dim() == 2 ? a.size(0) : 1;
  d.k = a.size(-1);
  d.n = b.dim() == 2 ? b.size(1) : 1;
  if (b.size(0) != d.k)
    throw mismatch("cannot be multiplied (" + std::to_string(d.k) +
                   " != " + std::to_string(b.size(0)) + ")");
  if (a.dim() == 2)
    d.out.push_back(d.m);
  if (b.dim() == 2)
    d.out.push_back(d.n);
  return d;
}

SumDims sum_dims(const Tensor& a, const std::vector<std::int64_t>& dims, bool keepdim) {
  check_defined("sum", a);
  const auto rank = a.dim();
  SumDims s;
  s.reduced.assign(rank, dims.empty());
  for (auto d : dims) {
    const auto w = wrap_dim(d, rank);
    if (s.reduced[w])
      throw std::invalid_argument("sum: dimension " + std::to_string(d) +
                                  " appears more than once");
    s.reduced[w] = true;
  }
  s.kept = a.shape();
  for (std::int64_t d = 0; d < rank; ++d) {
    if (s.reduced[d])
      s.kept[d] = 1;
    if (!s.reduced[d] || keepdim)
      s.out.push_back(s.kept[d]);
  }
  return s;
}

AmaxDims amax_dims(const Tensor& a, std::int64_t dim, bool keepdim) {
  check_defined("amax", a);
  const auto d = wrap_dim(dim, a.dim());
  AmaxDims r{split_at(a.shape(), d), a.shape()};
  if (r.split.size == 0)
    throw std::invalid_argument("amax: dimension " + std::to_string(dim) + " of shape " +
                                shape_str(a.shape()) + " is empty");
  if (keepdim)
    r.out[d] = 1;
  else
    r.out.erase(r.out.begin() + d);
  return r;
}

void check_indices(const char* op, const std::vector<std::int64_t>& index, std::int64_t size,
                   std::int64_t dim) {
  for (auto i : index)
    if (i < 0 || i >= size)
      throw std::out_of_range(std::string(op) + ": index " + std::to_string(i) +
                              " is out of range for dimension " + std::to_string(dim) +
                              " with size " + std::to_string(size));
}

void check_range(const char* op, std::int64_t dim, std::int64_t start, std::int64_t length,
                 std::int64_t size) {
  if (start < 0 || length < 0 || start + length > size)
    throw std::out_of_range(std::string(op) + ": start " + std::to_string(start) + " and length " +
                            std::to_string(length) + " are out of range for dimension " +
                            std::to_string(dim) + " with size " + std::to_string(size));
}

std::int64_t check_scatter_source(const char* op, const Shape& shape, std::int64_t dim,
                                  const Tensor& src, std::optional<std::int64_t> rows) {
  check_defined(op, src);
  const auto d = wrap_dim(dim, static_cast<std::int64_t>(shape.size()));
  bool fits = src.dim() == static_cast<std::int64_t>(shape.size());
  for (std::int64_t i = 0; fits && i < src.dim(); ++i)
    fits = i == d ? !rows || src.size(i) == *rows : src.size(i) == shape[i];
  if (!fits)
    throw std::invalid_argument(std::string(op) + ": source of shape " + shape_str(src.shape()) +
                                " does not fit shape " + shape_str(shape) + " along dimension " +
                                std::to_string(dim));
  return d;
}

namespace {

std::string nth(std::size_t i) { return "tensors[" + std::to_string(i) + "]"; }

} // namespace

void check_joinable(const char* op, const std::vector<Tensor>& tensors) {
  if (tensors.empty())
    throw std::invalid_argument(std::string(op) + ": expected a non-empty list of tensors");
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (!t.defined())
      throw std::invalid_argument(std::string(op) + ": " + nth(i) + " is undefined");
    if (t.dtype() != tensors[0].dtype() || t.device() != tensors[0].device())
      throw std::invalid_argument(std::string(op) + ": " + nth(i) + " is " + t.describe() +
                                  " but " + nth(0) + " is " + tensors[0].describe() +
                                  " (expected one dtype and one device)");
  }
}

CatDims cat_dims(const std::vector<Tensor>& tensors, std::int64_t dim) {
  check_joinable("cat", tensors);
  const Shape& first = tensors[0].shape();
  const auto rank = static_cast<std::int64_t>(first.size());
  CatDims c{wrap_dim_for("cat", dim, rank), first};
  c.out[c.dim] = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const Shape& s = tensors[i].shape();
    bool fits = s.size() == first.size();
    for (std::int64_t d = 0; fits && d < rank; ++d)
      fits = d == c.dim || s[d] == first[d];
    if (!fits)
      throw std::invalid_argument(
        "cat: " + nth(i) + " has shape " + shape_str(s) + " but " + nth(0) + " has shape " +
        shape_str(first) + " (sizes must match except in dimension " + std::to_string(dim) + ")");
    c.out[c.dim] += s[c.dim];
  }
  return c;
}

std::int64_t wrap_dim_for(const char* op, std::int64_t dim, std::int64_t rank) {
  try {
    return wrap_dim(dim, rank);
  } catch (const std::out_of_range& e) {
    throw std::out_of_range(std::string(op) + ": " + e.what());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string(op) + ": " + e.what());
  }
}

std::vector<std::int64_t> iota(std::int64_t start, std::int64_t length) {
  std::vector<std::int64_t> v(length);
  std::iota(v.begin(), v.end(), start);
  return v;
}

} // namespace actorgrad::kernels::detail
