#pragma once
/// @file current_exception_or_unwind.h
/// How the engine keeps a node's error without stopping a thread that exits.
/// Internal (libengine/engine/detail/, not installed).

#include <exception>

namespace actorgrad::detail {

// Note [A thread that exits inside a node]
// A node may end the thread it runs on: pthread_exit, or a cancellation
// acted on at a cancellation point. CPython does the first to a thread that
// wants the GIL once the interpreter is shutting down, so a Python hook or
// function in a daemon thread's backward ends that thread (PyTorch issues
// 38228, 38230). glibc ends the thread by unwinding its stack with an
// exception that is not a C++ one (abi::__forced_unwind), and a `catch
// (...)` that keeps it, as the engine keeps a node's error for the caller,
// makes glibc abort the process ("FATAL: exception not rethrown"). So every
// place that keeps a node's error takes it with current_exception_or_unwind(), which rethrows
// an exception that std::exception_ptr cannot hold: the thread unwinds, its
// destructors run, and it ends with its exit value. (A handler of type
// abi::__forced_unwind would do the same, but it binds a reference to a
// null object, which UBSan rightly reports.) A task that has devices loses
// its coordinator; its nodes on other actors finish, their messages are
// dropped with the thread's mailbox, and the engine serves other calls as
// before (tests/actors/test_thread_exit.cpp). A thread that ends on a fresh
// stack (Note [A fresh stack past the depth limit]) cannot unwind across
// the switch back to its own stack, so that case stops the process with a
// message that says so.

/// Inside a `catch (...)` that keeps a node's error: the exception being
/// handled, or, when it is not a C++ exception (glibc's thread-exit unwind),
/// rethrows it (Note [A thread that exits inside a node]).
inline std::exception_ptr current_exception_or_unwind() {
  std::exception_ptr error = std::current_exception();
  if (!error)
    throw;
  return error;
}

} // namespace actorgrad::detail
