#pragma once
/// @file stack_guard.h
/// Whether the calling thread's stack can hold one more reentrant backward. Internal.

#include <cstddef>

namespace actorgrad::detail {

/// Stack a reentrant backward call must find free before it nests on its
/// thread: more than the frames of one nested call (measured: see
/// EngineConfig::max_recursion_depth) plus the node code it runs. Below
/// it, the call is handed to a pool worker as at max_recursion_depth.
inline constexpr std::size_t reentrant_stack_reserve = 256 * 1024;

/// True when less than reentrant_stack_reserve bytes of the calling
/// thread's stack are left (false when the bounds are unknown).
bool stack_is_short();

} // namespace actorgrad::detail
