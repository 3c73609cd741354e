#pragma once
/// @file cuda_dispatch.h
/// Routes a host kernel's call to its CUDA version (cuda/kernels_cuda.h).

#include "actorgrad/libengine/tensor/tensor.h"
#ifdef ACTORGRAD_WITH_CUDA
#include "actorgrad/libengine/tensor/cuda/kernels_cuda.h"
#endif

namespace actorgrad::kernels::detail {

/// True when `t` is defined and lives on a CUDA device.
inline bool on_cuda(const Tensor& t) { return t.defined() && t.device().type == DeviceType::cuda; }

} // namespace actorgrad::kernels::detail

/// At the top of a host kernel, `ACTORGRAD_CUDA_DISPATCH(on_cuda(a), cuda::add(a, b, alpha));`
/// returns what the CUDA kernel returns when `cond` holds. Expands to
/// nothing in builds without the CUDA backend, where no tensor can live on a
/// CUDA device (Storage::allocate refuses) and the CUDA kernels are not linked.
#ifdef ACTORGRAD_WITH_CUDA
#define ACTORGRAD_CUDA_DISPATCH(cond, call) \
  if (cond)                                 \
  return call
#else
#define ACTORGRAD_CUDA_DISPATCH(cond, call) static_cast<void>(0)
#endif
