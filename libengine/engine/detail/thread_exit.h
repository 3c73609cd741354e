#pragma once
/// @file thread_exit.h
/// Clean-up a thread runs when it ends, for state kept in a trivial
/// thread_local. Internal.

namespace actorgrad::detail {

/// Has the calling thread call `Close` when it ends (once however many
/// times the thread calls this). For the per-thread caches kept in trivial
/// thread_locals, which are reached with one load and no initialisation
/// check and so can have no destructor of their own: the object declared
/// here is made on the thread's first call, and its destructor, registered
/// then, runs at the thread's exit.
template <void (*Close)() noexcept>
void close_at_thread_exit() noexcept {
  struct Closer {
    ~Closer() { Close(); }
  };
  thread_local Closer closer;
  static_cast<void>(closer);
}

} // namespace actorgrad::detail
