#pragma once
/// @file cuda_support.h
/// Host-side helpers of the CUDA kernels (kernels_cuda_*.cpp): launch
/// targets and the plugin's launchers, elementwise geometries, index
/// uploads and reads back to the host.

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <vector>

#include "actorgrad/device/cuda/plugin.h"
#include "actorgrad/libengine/tensor/cuda/detail/kernel_table.h"
#include "actorgrad/libengine/tensor/tensor.h"

namespace actorgrad::kernels::cuda::detail {

/// What a kernel on CUDA device `d` needs: the CUDA plugin (loaded on the
/// first call; std::runtime_error naming `d` when it cannot be), its
/// launchers, and a launch of `op` on the current stream of `d`.
struct OnDevice {
  OnDevice(const char* op, Device d);
  const actorgrad::cuda::Plugin& plugin;
  const KernelTable& kernels;
  Launch launch;
};

/// The geometry of an elementwise op over `shape` whose inputs are read
/// through `strides` (each in the rank of `shape`): size-1 dims dropped and
/// adjacent dims merged where every input allows. Throws
/// std::invalid_argument naming `op` when more than max_dims remain.
Geometry geometry(const char* op, const Shape& shape, std::initializer_list<Shape> strides);

/// `index` copied to memory of `d` (on its current stream).
std::shared_ptr<void> upload(const std::vector<std::int64_t>& index, Device d);

/// Copies `nbytes` from memory of `d` to the host on the current stream of
/// `d`, then waits for that stream.
void copy_to_host(void* dst, const void* src, std::size_t nbytes, Device d);

/// The first element of `t`.
const void* data_of(const Tensor& t);
void* mutable_data_of(const Tensor& t);

} // namespace actorgrad::kernels::cuda::detail
