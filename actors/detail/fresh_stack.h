#pragma once
/// @file fresh_stack.h
/// Runs a function on a new stack of the calling thread: a reentrant call
/// past max_recursion_depth. Internal.

#include <cstddef>

namespace actorgrad::detail {

// Note [A fresh stack past the depth limit]
// Every reentrant backward nests a dispatch loop and a node's frames on its
// thread's stack, so the depth must be bounded. PyTorch hands a call past
// max_recursion_depth, with the thread's ready queue, to a pool thread and
// blocks until it is done; this engine did the same with actors (a pool
// worker adopted the caller's queue, and the caller forwarded its mailbox
// there meanwhile). What the call needs is a stack, not a thread: the
// caller only waits. So it now runs on the caller's own thread, on a new
// stack (ucontext), with everything else as it was: the same Runner,
// queue, mailbox and thread-locals, nothing forwarded and nothing to wake.
// The call is strictly nested: it runs to its end (or throws) before the
// caller's frames resume, as a function call would, so whatever a call
// cannot tell apart from a deep function call (Python's frames, libtorch's
// thread-local state, CAF's) is none the wiser. What it does see is
// stack_is_short() (stack_guard.h), which measures the stack it runs on.
//
// Measured against the handoff (bench/HISTORY.md, "A fresh stack in place
// of the depth handoff"): in a nest 100 deep, the 40 calls past the limit
// ran on a pool thread, with its own malloc arena, and freed each other's
// blocks across the two threads; on one thread, with the storage of 128
// nested calls kept (nested_calls_with_spares in spare_stack.h), a call there
// takes about 500 instructions fewer.
//
// Stacks are mapped once and kept by their thread for its next calls
// (SpareStack), each with a guard page below it, so an overflow faults
// instead of writing over other memory.

/// Runs `fn(arg)` on a fresh stack of this thread, as big as a new thread's,
/// and returns when it returns. An exception it throws is rethrown here.
/// Nests (a call on a fresh stack may make another).
void run_on_fresh_stack(void (*fn)(void*), void* arg);

/// Runs `f()` on a fresh stack of this thread (run_on_fresh_stack).
template <class F>
void on_fresh_stack(F& f) {
  run_on_fresh_stack([](void* p) { (*static_cast<F*>(p))(); }, &f);
}

} // namespace actorgrad::detail
