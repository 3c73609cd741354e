/// @file entry.cpp
/// The CUDA plugin's table (device/cuda/plugin.h) and its memory copies.

#include <cuda_runtime_api.h>

#include "actorgrad/device/cuda/plugin.h"
#include "actorgrad/device/cuda/plugin/caching_allocator.h"
#include "actorgrad/device/cuda/plugin/cuda_backend.h"
#include "actorgrad/device/cuda/plugin/cuda_error.h"
#include "actorgrad/device/cuda/plugin/device_scope.h"
#include "actorgrad/libengine/tensor/cuda/detail/kernel_table.h"

namespace actorgrad::cuda::plugin {

namespace {

using kernels::cuda::detail::KernelTable;
using kernels::cuda::detail::Launch;

StreamBackend* backend_ptr() { return &backend(); }

void memset_async(Stream s, void* dst, int value, std::size_t nbytes) {
  const DeviceScope scope(s.device);
  check(cudaMemsetAsync(dst, value, nbytes, native_stream(s)), "cudaMemsetAsync", s.device);
}

void copy_async(Stream s, void* dst, const void* src, std::size_t nbytes, CopyKind kind) {
  const DeviceScope scope(s.device);
  switch (kind) {
    case CopyKind::host_to_device:
      check(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyHostToDevice, native_stream(s)),
            "cudaMemcpyAsync (host to device)", s.device);
      return;
    case CopyKind::device_to_host:
      check(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToHost, native_stream(s)),
            "cudaMemcpyAsync (device to host)", s.device);
      return;
    case CopyKind::device_to_device:
      check(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToDevice, native_stream(s)),
            "cudaMemcpyAsync (device to device)", s.device);
      return;
  }
}

void copy_2d_async(Stream s, void* dst, std::size_t dpitch, const void* src, std::size_t spitch,
                   std::size_t width, std::size_t height) {
  const DeviceScope scope(s.device);
  check(cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, cudaMemcpyDeviceToDevice,
                          native_stream(s)),
        "cudaMemcpy2DAsync", s.device);
}

void copy_peer_async(Stream s, void* dst, Device to, const void* src, std::size_t nbytes) {
  const DeviceScope scope(s.device);
  check(cudaMemcpyPeerAsync(dst, to.index, src, s.device.index, nbytes, native_stream(s)),
        "cudaMemcpyPeerAsync", s.device);
}

/// `F` with the launch's device made current around it (kernel launches
/// and cuBLAS act on the current device).
template <auto F>
struct OnDevice;

template <class... Args, void (*F)(const Launch&, Args...)>
struct OnDevice<F> {
  static void call(const Launch& l, Args... args) {
    const DeviceScope scope(l.stream.device);
    F(l, args...);
  }
};

namespace k = kernels::cuda::detail;

constexpr KernelTable kernel_table{
  &OnDevice<&k::unary>::call,
  &OnDevice<&k::binary>::call,
  &OnDevice<&k::cast>::call,
  &OnDevice<&k::gather_rows>::call,
  &OnDevice<&k::scatter_add_rows>::call,
  &OnDevice<&k::reduce>::call,
  &OnDevice<&k::softmax>::call,
  &OnDevice<&k::find_nan>::call,
  &OnDevice<&k::gemm>::call,
};

constexpr Plugin table{
  plugin_abi_version,
  &device_count,
  &backend_ptr,
  &native_stream,
  &allocate,
  &record_stream,
  &empty_cache,
  &allocator_stats,
  &memset_async,
  &copy_async,
  &copy_2d_async,
  &copy_peer_async,
  &kernel_table,
};

} // namespace

} // namespace actorgrad::cuda::plugin

const actorgrad::cuda::Plugin* actorgrad_cuda_plugin() {
  return &actorgrad::cuda::plugin::table;
}
