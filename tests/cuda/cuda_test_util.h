#pragma once
/// @file cuda_test_util.h
/// Moving tensors to cuda:0 and back, and comparing them with CPU results.

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "actorgrad/device/cuda/caching_allocator.h"
#include "actorgrad/device/stream.h"
#include "actorgrad/libengine/tensor/cuda/kernels_cuda.h"
#include "actorgrad/libengine/tensor/tensor.h"

namespace actorgrad::testing {

inline constexpr Device gpu = Device::cuda(0);

/// Relative tolerance per dtype: the task's 1e-5 for float32.
inline double tolerance(DType t) { return t == DType::f32 ? 1e-5 : 1e-12; }

inline Tensor to_gpu(const Tensor& t) { return kernels::cuda::to_device(t, gpu); }
inline Tensor to_cpu(const Tensor& t) { return kernels::cuda::to_device(t, Device::cpu()); }

/// The largest elementwise difference of `got` (on any device) from `want`
/// (same shape, on the CPU), relative to max(1, |want|); NaN where `want`
/// has NaN counts as equal, anywhere else as infinite. Asserts nothing:
/// safe on any thread.
inline double worst_difference(const Tensor& got, const Tensor& want) {
  const auto g = (got.device().is_cpu() ? got : to_cpu(got)).to_vector();
  const auto w = want.to_vector();
  double worst = 0.0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    if (std::isnan(g[i]) || std::isnan(w[i])) {
      if (std::isnan(g[i]) != std::isnan(w[i]))
        worst = INFINITY;
      continue;
    }
    worst = std::max(worst, std::abs(g[i] - w[i]) / std::max(1.0, std::abs(w[i])));
  }
  return worst;
}

/// `got` (on cuda:0) equals `want` (on the CPU) in shape and dtype, and
/// elementwise to tolerance(dtype) relative to max(1, |want|).
inline void check_close(const Tensor& got, const Tensor& want, const std::string& what) {
  BOOST_TEST_CONTEXT(what) {
    BOOST_TEST(got.device().str() == gpu.str());
    BOOST_TEST(shape_str(got.shape()) == shape_str(want.shape()));
    BOOST_TEST(dtype_name(got.dtype()) == dtype_name(want.dtype()));
    if (got.shape() != want.shape() || got.dtype() != want.dtype())
      return;
    BOOST_TEST(worst_difference(got, want) <= tolerance(want.dtype()));
  }
}

/// Runs `body`, then checks that every block of cuda:0 it allocated is free
/// again (nothing, the engine included, kept one of its tensors alive), and
/// empties the cache, so that compute-sanitizer's leak check reports only
/// memory that nobody can free.
template <class Body>
void check_frees_its_memory(Body&& body) {
  synchronize(default_stream(gpu));
  const std::size_t before = cuda::allocator_stats(gpu).bytes_in_use;
  body();
  synchronize(default_stream(gpu));
  BOOST_TEST(cuda::allocator_stats(gpu).bytes_in_use == before,
             "every block allocated on cuda:0 was freed");
  cuda::empty_cache();
  BOOST_TEST(cuda::allocator_stats(gpu).bytes_cached == 0u);
}

} // namespace actorgrad::testing
