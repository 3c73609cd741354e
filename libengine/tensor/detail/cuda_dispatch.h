#pragma once
/// @file cuda_dispatch.h
/// Routes a host kernel's call to its CUDA version (cuda/kernels_cuda.h).

#include "actorgrad/libengine/tensor/cuda/kernels_cuda.h"
#include "actorgrad/libengine/tensor/tensor.h"

namespace actorgrad::kernels::detail {

/// True when `t` is defined and lives on a CUDA device.
inline bool on_cuda(const Tensor& t) { return t.defined() && t.device().type == DeviceType::cuda; }

} // namespace actorgrad::kernels::detail

/// At the top of a host kernel, `ACTORGRAD_CUDA_DISPATCH(on_cuda(a), cuda::add(a, b, alpha));`
/// returns what the CUDA kernel returns when `cond` holds. The CUDA kernels
/// (their host glue) are always linked; they reach the GPU through the CUDA
/// plugin, loaded by the first tensor allocated on a CUDA device
/// (Note [CUDA only when used] in device/cuda/plugin.h). Without it no
/// tensor lives on a CUDA device (Storage::allocate throws naming it), so a
/// CPU or sim run never gets past `cond`.
#define ACTORGRAD_CUDA_DISPATCH(cond, call)                                                        \
  if (cond)                                                                                        \
  return call
