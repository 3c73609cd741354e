/// @file entry.cpp
/// The CUDA plugin's table (device/cuda/plugin.h) and its memory copies.

#include <cuda_runtime_api.h>

#include "actorgrad/device/cuda/plugin.h"
#include "actorgrad/device/cuda/plugin/caching_allocator.h"
#include "actorgrad/device/cuda/plugin/cuda_backend.h"
#include "actorgrad/device/cuda/plugin/cuda_error.h"
#include "actorgrad/device/cuda/plugin/device_scope.h"
#include "actorgrad/device/cuda/plugin/device_work_timer.h"
#include "actorgrad/libengine/tensor/cuda/detail/kernel_table.h"

namespace actorgrad::cuda::plugin {

namespace {

using kernels::cuda::detail::KernelTable;
using kernels::cuda::detail::Launch;

StreamBackend* backend_ptr() { return &backend(); }

/// Enqueues one item, `op`, on `s` with its device current: `call` (which
/// returns the runtime's status), seen by the thread's launch observer
/// (Note [Device work timing on CUDA]).
template <class F>
void enqueue(Stream s, DeviceWork kind, const char* op, F&& call) {
  const DeviceScope scope(s.device);
  const cudaStream_t native = native_stream(s);
  observed({kind, op, s, s, 0}, native, [&] { check(call(native), op, s.device); });
}

void memset_async(Stream s, void* dst, int value, std::size_t nbytes) {
  enqueue(s, DeviceWork::kernel, "cudaMemsetAsync",
          [&](cudaStream_t n) { return cudaMemsetAsync(dst, value, nbytes, n); });
}

void copy_async(Stream s, void* dst, const void* src, std::size_t nbytes, CopyKind kind) {
  auto copy = [&](const char* op, cudaMemcpyKind k) {
    enqueue(s, DeviceWork::copy, op,
            [&](cudaStream_t n) { return cudaMemcpyAsync(dst, src, nbytes, k, n); });
  };
  switch (kind) {
  case CopyKind::host_to_device:
    return copy("cudaMemcpyAsync (host to device)", cudaMemcpyHostToDevice);
  case CopyKind::device_to_host:
    return copy("cudaMemcpyAsync (device to host)", cudaMemcpyDeviceToHost);
  case CopyKind::device_to_device:
    return copy("cudaMemcpyAsync (device to device)", cudaMemcpyDeviceToDevice);
  }
}

void copy_2d_async(Stream s, void* dst, std::size_t dpitch, const void* src, std::size_t spitch,
                   std::size_t width, std::size_t height) {
  enqueue(s, DeviceWork::copy, "cudaMemcpy2DAsync", [&](cudaStream_t n) {
    return cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, cudaMemcpyDeviceToDevice, n);
  });
}

void copy_peer_async(Stream s, void* dst, Device to, const void* src, std::size_t nbytes) {
  enqueue(s, DeviceWork::copy, "cudaMemcpyPeerAsync", [&](cudaStream_t n) {
    return cudaMemcpyPeerAsync(dst, to.index, src, s.device.index, nbytes, n);
  });
}

/// `F` with the launch's device made current around it (kernel launches
/// and cuBLAS act on the current device).
template <auto F>
struct OnDevice;

template <class... Args, void (*F)(const Launch&, Args...)>
struct OnDevice<F> {
  static void call(const Launch& l, Args... args) {
    const DeviceScope scope(l.stream.device);
    observed({DeviceWork::kernel, l.op, l.stream, l.stream, 0}, l.native, [&] { F(l, args...); });
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
  plugin_abi_version, &connect_launch_observer, &device_count, &no_device_reason,
  &backend_ptr,       &native_stream,           &allocate,     &record_stream,
  &empty_cache,       &allocator_stats,         &memset_async, &copy_async,
  &copy_2d_async,     &copy_peer_async,         &kernel_table,
};

} // namespace

} // namespace actorgrad::cuda::plugin

const actorgrad::cuda::Plugin* actorgrad_cuda_plugin() { return &actorgrad::cuda::plugin::table; }
