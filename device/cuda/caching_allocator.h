#pragma once
/// @file caching_allocator.h
/// Device memory of CUDA tensors, cached for reuse (in the spirit of
/// PyTorch's CUDACachingAllocator, without its block splitting).
///
/// - Sizes are rounded up: to 512 B below 1 MiB, to 2 MiB above. A request
///   takes the smallest cached block of at least its rounded size and at
///   most twice that; otherwise cudaMalloc. On out-of-memory the cache is
///   emptied and cudaMalloc retried once.
/// - A block belongs to the stream current on its device when it was
///   allocated. Freeing it (its last shared_ptr dropping) records an event
///   on that stream and one on every stream named by record_stream. The
///   block is reused at once by allocations on its own stream (stream order
///   makes that safe) once the record_stream events completed, and by
///   allocations on any other stream only once all its events completed;
///   it then belongs to the new stream.
/// - Served by the CUDA plugin (plugin.h), which the first call loads;
///   std::runtime_error naming the device when it cannot be loaded.
/// - Thread-safe: one mutex per device (device/ is off the actor scheduling
///   path). Freeing never throws: a block whose events cannot be recorded
///   (the runtime shutting down) is released with cudaFree.

#include <cstddef>
#include <cstdint>
#include <memory>

#include "actorgrad/device/stream.h"

namespace actorgrad::cuda {

/// Counters of one device's cache.
struct AllocatorStats {
  std::size_t bytes_in_use = 0;         ///< rounded sizes of the blocks handed out
  std::size_t bytes_cached = 0;         ///< rounded sizes of the free blocks kept
  std::uint64_t device_allocations = 0; ///< successful cudaMalloc calls
  std::uint64_t reuses = 0;             ///< allocations served from the cache
};

/// `nbytes` (rounded up; at least 512) of memory on CUDA device `d`, tied
/// to `current_stream(d)`; dropping the last copy returns it to the cache.
/// Throws std::invalid_argument for a device that is not a visible CUDA
/// device, std::runtime_error when out of memory (naming the device, the
/// size and what is in use and cached) or when the runtime fails.
std::shared_ptr<void> allocate(std::size_t nbytes, Device d);

/// Marks memory from allocate() as used by work on `s` (a stream of its
/// device), so that after it is freed it is not reused before that work
/// completes (PyTorch's recordStream). Throws std::invalid_argument for
/// memory not from allocate() or a stream of another device.
void record_stream(const std::shared_ptr<void>& data, Stream s);

/// Waits for the events of every cached block and releases it with
/// cudaFree (all devices). Memory in use is untouched.
void empty_cache();

/// The counters of `d` (zeros for a device never allocated on).
AllocatorStats allocator_stats(Device d);

} // namespace actorgrad::cuda
