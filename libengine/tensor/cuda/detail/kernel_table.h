#pragma once
/// @file kernel_table.h
/// The CUDA plugin's launchers (launch.h) as a table, the way the core
/// reaches them (Note [CUDA only when used] in device/cuda/plugin.h).

#include "actorgrad/libengine/tensor/cuda/detail/launch.h"

namespace actorgrad::kernels::cuda::detail {

/// One pointer per launcher of launch.h, of its exact type.
struct KernelTable {
  decltype(&detail::unary) unary;
  decltype(&detail::binary) binary;
  decltype(&detail::cast) cast;
  decltype(&detail::gather_rows) gather_rows;
  decltype(&detail::scatter_add_rows) scatter_add_rows;
  decltype(&detail::reduce) reduce;
  decltype(&detail::softmax) softmax;
  decltype(&detail::find_nan) find_nan;
  decltype(&detail::gemm) gemm;
};

} // namespace actorgrad::kernels::cuda::detail
