/// @file kernels_cuda_reduce.cpp
/// CUDA reductions and the softmax family (reductions along one dim).

#include "actorgrad/libengine/tensor/cuda/kernels_cuda.h"

#include <utility>

#include "actorgrad/device/cuda/caching_allocator.h"
#include "actorgrad/libengine/tensor/cuda/detail/cuda_support.h"
#include "actorgrad/libengine/tensor/detail/kernel_checks.h"

namespace actorgrad::kernels::cuda {

using namespace kernels::detail;
using namespace cuda::detail;

namespace {

Tensor softmax_impl(const char* op, const Tensor& a, std::int64_t dim, bool log) {
  check_defined(op, a);
  const auto split = split_at(a.shape(), wrap_dim(dim, a.dim()));
  const OnDevice on(op, a.device());
  auto out = empty_like(a, a.shape());
  on.kernels.softmax(on.launch, log, a.dtype(), split.outer, split.size, split.inner, data_of(a),
                     mutable_data_of(out));
  return out;
}

/// The single element of a one-element CUDA tensor, read back to the host.
double read_scalar(const Tensor& t) {
  return dispatch_dtype(t.dtype(), [&](auto zero) {
    decltype(zero) v{};
    copy_to_host(&v, data_of(t), sizeof v, t.device());
    return static_cast<double>(v);
  });
}

} // namespace

Tensor sum(const Tensor& a, const std::vector<std::int64_t>& dims, bool keepdim) {
  const SumDims s = sum_dims(a, dims, keepdim);
  const OnDevice on("sum", a.device());
  // One pass per run of adjacent reduced dims (of size > 1), each reducing
  // the middle of [outer, run, inner]; the last pass writes the result.
  std::vector<std::pair<std::int64_t, std::int64_t>> runs; // [begin, end) dims
  for (std::int64_t d = 0; d < a.dim(); ++d) {
    if (!s.reduced[d] || a.size(d) == 1)
      continue;
    if (!runs.empty() && runs.back().second == d)
      ++runs.back().second;
    else
      runs.emplace_back(d, d + 1);
  }
  if (runs.empty()) { // nothing to add up: a copy in the new shape
    auto out = empty_like(a, s.out);
    on.kernels.unary(on.launch, UnaryOp::copy, a.dtype(), 0.0,
                     geometry("sum", a.shape(), {a.strides()}), data_of(a), mutable_data_of(out));
    return out;
  }
  Tensor current = a;
  Shape shape = a.shape();
  for (std::size_t r = 0; r < runs.size(); ++r) {
    const auto [begin, end] = runs[r];
    std::int64_t outer = 1, size = 1, inner = 1;
    for (std::int64_t d = 0; d < a.dim(); ++d)
      (d < begin ? outer : d < end ? size : inner) *= shape[d];
    for (auto d = begin; d < end; ++d)
      shape[d] = 1;
    auto out = empty_like(a, r + 1 == runs.size() ? s.out : shape);
    on.kernels.reduce(on.launch, ReduceOp::sum, a.dtype(), outer, size, inner, data_of(current),
                      mutable_data_of(out));
    current = out;
  }
  return current;
}

Tensor amax(const Tensor& a, std::int64_t dim, bool keepdim) {
  const AmaxDims m = amax_dims(a, dim, keepdim);
  const OnDevice on("amax", a.device());
  auto out = empty_like(a, m.out);
  on.kernels.reduce(on.launch, ReduceOp::max, a.dtype(), m.split.outer, m.split.size, m.split.inner,
                    data_of(a), mutable_data_of(out));
  return out;
}

bool any_nan(const Tensor& a) {
  check_defined("any_nan", a);
  if (a.numel() == 0)
    return false;
  const OnDevice on("any_nan", a.device());
  const auto flag = actorgrad::cuda::allocate(sizeof(int), a.device());
  on.plugin.memset_async(on.launch.stream, flag.get(), 0, sizeof(int));
  on.kernels.find_nan(on.launch, a.dtype(), a.numel(), data_of(a), static_cast<int*>(flag.get()));
  int found = 0;
  copy_to_host(&found, flag.get(), sizeof found, a.device());
  return found != 0;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  check_compatible("max_abs_diff", a, b);
  check_same_shape("max_abs_diff", a, b);
  if (a.numel() == 0)
    return 0.0;
  const OnDevice on("max_abs_diff", a.device());
  auto diff = empty_like(a, a.shape());
  const auto g = geometry("max_abs_diff", a.shape(), {a.strides(), b.strides()});
  on.kernels.binary(on.launch, BinaryOp::abs_diff, a.dtype(), 1.0, g, data_of(a), data_of(b),
                    mutable_data_of(diff));
  auto max = empty_like(a, {});
  on.kernels.reduce(on.launch, ReduceOp::max, a.dtype(), 1, a.numel(), 1, data_of(diff),
                    mutable_data_of(max));
  return read_scalar(max);
}

Tensor softmax(const Tensor& a, std::int64_t dim) { return softmax_impl("softmax", a, dim, false); }

Tensor log_softmax(const Tensor& a, std::int64_t dim) {
  return softmax_impl("log_softmax", a, dim, true);
}

} // namespace actorgrad::kernels::cuda
