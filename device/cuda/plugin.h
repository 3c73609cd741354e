#pragma once
/// @file plugin.h
/// What the CUDA plugin (libactorgrad_cuda.so) hands the core: its stream
/// backend, its caching allocator, its memory copies and the kernel table.
///
/// Note [CUDA only when used]
/// The CUDA runtime and cuBLAS are linked into
/// the plugin only, which the core loads (plugin_loader.h) on the first use
/// of a CUDA device, so a CPU or sim run never maps libcudart or libcublas.
/// The boundary is this table of plain functions over raw pointers, Device
/// and Stream values: the plugin knows the CUDA runtime, the core knows the
/// tensors (the Tensor glue of kernels_cuda.h stays in actorgrad_engine).
/// The plugin links none of the core's libraries (they are static): it
/// builds device.cpp itself, which holds no state, is linked with `-z defs`
/// so that a stray reference to the core fails its link, and exports
/// nothing but actorgrad_cuda_plugin().

#include <cstddef>
#include <cstdint>
#include <memory>

#include "actorgrad/device/cuda/caching_allocator.h"
#include "actorgrad/device/cuda/cuda_backend.h"
#include "actorgrad/device/launch_observer.h"
#include "actorgrad/device/stream_backend.h"

namespace actorgrad::kernels::cuda::detail {
struct KernelTable; // libengine/tensor/cuda/detail/kernel_table.h
} // namespace actorgrad::kernels::cuda::detail

namespace actorgrad::cuda {

/// Bumped whenever Plugin or KernelTable changes, so that a plugin from
/// another build is refused instead of called wrongly.
inline constexpr std::uint32_t plugin_abi_version = 3;

/// The direction of a copy_async.
enum class CopyKind : std::uint8_t {
  host_to_device,
  device_to_host,
  device_to_device,
};

/// The plugin's functions. Every one that acts on a device makes it current
/// for the call, and throws std::runtime_error naming the call and the
/// device when the runtime fails (std::invalid_argument for a stream or a
/// device that is not a visible CUDA one). Work is enqueued on the stream
/// given and not waited for, unless said otherwise.
struct Plugin {
  /// plugin_abi_version of the plugin's build; checked before anything else.
  std::uint32_t abi_version;
  /// Called by the loader before anything else: how the plugin finds the
  /// calling thread's launch observer (launch_observer(), which lives in
  /// the core; Note [Device work timing on CUDA]).
  void (*connect_launch_observer)(LaunchObserver* (*launch_observer)());
  /// CUDA devices visible to this process (0 without a driver or a GPU).
  int (*device_count)();
  /// Why device_count() is 0, in the runtime's words; "" when it is not.
  const char* (*no_device_reason)();
  /// The CUDA device type's stream backend (cuda_backend.h describes its streams).
  StreamBackend* (*backend)();
  /// The runtime handle of `s`, as cuda::native_stream.
  cudaStream_t (*native_stream)(Stream s);
  /// The caching allocator (caching_allocator.h): `nbytes` on s.device, tied to `s`.
  std::shared_ptr<void> (*allocate)(std::size_t nbytes, Stream s);
  void (*record_stream)(const std::shared_ptr<void>& data, Stream s);
  void (*empty_cache)();
  AllocatorStats (*allocator_stats)(Device d);
  /// `nbytes` bytes at `dst` (memory of s.device) set to `value`.
  void (*memset_async)(Stream s, void* dst, int value, std::size_t nbytes);
  /// `nbytes` bytes from `src` to `dst`, on s.device; host memory is pageable.
  void (*copy_async)(Stream s, void* dst, const void* src, std::size_t nbytes, CopyKind kind);
  /// `height` rows of `width` bytes, `spitch` apart at `src` and `dpitch`
  /// apart at `dst`, both memory of s.device.
  void (*copy_2d_async)(Stream s, void* dst, std::size_t dpitch, const void* src,
                        std::size_t spitch, std::size_t width, std::size_t height);
  /// `nbytes` from `src` (memory of s.device) to `dst` (memory of `to`), on `s`.
  void (*copy_peer_async)(Stream s, void* dst, Device to, const void* src, std::size_t nbytes);
  /// The launchers of the CUDA kernels.
  const kernels::cuda::detail::KernelTable* kernels;
};

} // namespace actorgrad::cuda

/// The plugin's one exported symbol: its table (static storage, never null).
extern "C" __attribute__((visibility("default"))) const actorgrad::cuda::Plugin*
actorgrad_cuda_plugin();
