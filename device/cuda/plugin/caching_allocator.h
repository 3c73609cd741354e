#pragma once
/// @file caching_allocator.h
/// The CUDA plugin's caching allocator (the behaviour is described in
/// cuda/caching_allocator.h), on the CUDA runtime.

#include <cstddef>
#include <memory>

#include "actorgrad/device/cuda/caching_allocator.h"

namespace actorgrad::cuda::plugin {

/// `nbytes` (rounded up; at least 512) of memory on s.device, tied to `s`.
std::shared_ptr<void> allocate(std::size_t nbytes, Stream s);

/// As cuda::record_stream.
void record_stream(const std::shared_ptr<void>& data, Stream s);

/// As cuda::empty_cache.
void empty_cache();

/// As cuda::allocator_stats.
AllocatorStats allocator_stats(Device d);

} // namespace actorgrad::cuda::plugin
