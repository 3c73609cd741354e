#pragma once
/// @file stack_guard.h
/// Whether the stack the calling thread runs on can hold one more reentrant
/// backward. Internal.

#include <cstddef>
#include <cstdint>

namespace actorgrad::detail {

/// Stack a reentrant backward call must find free before it nests on its
/// thread: more than the frames of one nested call (measured: see
/// EngineConfig::max_recursion_depth) plus the node code it runs. Below
/// it, the call moves to a fresh stack as at max_recursion_depth
/// (fresh_stack.h).
inline constexpr std::size_t reentrant_stack_reserve = 256 * 1024;

/// True when less than reentrant_stack_reserve bytes are left on the stack
/// the calling thread runs on (false when its bounds are unknown).
bool stack_is_short();

/// Tells stack_is_short that the calling thread now runs on the stack whose
/// lowest usable address is `low` (0: the thread's own stack); returns the
/// value it replaces. Called by run_on_fresh_stack around each switch.
std::uintptr_t enter_stack(std::uintptr_t low);

} // namespace actorgrad::detail
