#pragma once
/// @file actor_thread.h
/// Engine actors on threads the engine starts and joins. Internal.

#include <atomic>
#include <thread>
#include <utility>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/make_actor.hpp>

namespace actorgrad::detail {

// Note [Engine threads are joined]
// CAF 0.17.6 runs a blocking actor on a std::thread that it detaches
// (blocking_actor::launch), and an actor system counts such a thread only
// until just before it ends; an Engine on the application's actor system
// did not wait even for that. So ~Engine could return while hundreds of
// the threads it started were still running (after a burst of async calls:
// 637 of them once), touching whatever they still held, and nothing could
// wait for them. So every thread of the engine is started here instead,
// as a std::thread of ours that runs what CAF's launch runs (initialize,
// act, on_exit, cleanup with the exit reason) and that its owner joins:
// ~Engine joins the pool's, the request actor's and the device workers'
// (EngineCore::threads), the CoordinatorPool joins its coordinators'. The
// actor is made hidden, as caf::scoped_actor makes its own: the engine, not
// the actor system, waits for it. A thread that is joined has ended, so
// once ~Engine returns the process has the threads it had before the
// engine was made (tests/actors/test_engine_threads.cpp counts them).
//
// Note [~Engine hung in CAF's cleanup]
// The hang this fixes (tests/stress/test_stress_async_burst.cpp; it took
// 24 repetitions of a 1,000-call burst on the code before): a blocking
// actor's cleanup (local_actor::cleanup) first runs its attachables, which
// is where caf::blocking_actor::wait_for learns that it terminated, and
// only then cancels its timeouts by pushing an event into the actor
// clock's queue, a ring buffer of 64 that the clock's own thread drains and
// whose push waits while it is full. So the pool's wait_for returned while
// hundreds of coordinator threads had not yet reached that push (on 2
// cores, 1,000 threads that end together take a while), ~Engine went on,
// and ~actor_system stopped the clock's thread before waiting for its
// detached threads. From then on, the 65th thread to push waited forever
// for room in the queue, and ~actor_system forever for that thread (gdb:
// 395 threads in thread_safe_actor_clock::push under local_actor::cleanup,
// one in actor_system::await_detached_threads). A joined thread has
// finished its cleanup, and every engine thread is joined while the actor
// system, its clock included, still runs.

/// A blocking engine actor and the thread that runs it; its owner joins the
/// thread (once the actor terminated: ~ActorThread joins too).
class ActorThread {
public:
  ActorThread() = default;
  ActorThread(ActorThread&&) noexcept = default;
  ActorThread& operator=(ActorThread&& other) noexcept {
    join();
    actor_ = std::move(other.actor_);
    thread_ = std::move(other.thread_);
    return *this;
  }
  ~ActorThread() { join(); }

  /// Makes an actor of type `A` (constructed from an actor_config and
  /// `args`) in `sys` and starts its thread, named `thread_name` (at most
  /// 15 characters, as `top -H` shows it). Throws std::system_error when
  /// the thread cannot be started (the actor is then destroyed unstarted).
  template <class A, class... Ts>
  static ActorThread start(caf::actor_system& sys, const char* thread_name, Ts&&... args) {
    caf::actor_config cfg{sys.dummy_execution_unit()};
    cfg.flags |= caf::abstract_actor::is_hidden_flag;
    return ActorThread(caf::make_actor<A, caf::actor>(sys.next_actor_id(), sys.node(), &sys, cfg,
                                                      std::forward<Ts>(args)...),
                       thread_name);
  }

  /// The actor (valid until moved from).
  const caf::actor& actor() const { return actor_; }
  /// Waits until the thread ended, if it was started and not joined yet.
  /// Not from the thread itself.
  void join() {
    if (thread_.joinable())
      thread_.join();
  }

private:
  ActorThread(caf::actor actor, const char* thread_name);

  caf::actor actor_;
  std::thread thread_;
};

/// Threads joined together at the end (the device workers', the pool's,
/// the request actor's: EngineCore::threads). Any thread may add one while
/// the engine runs, without a lock (a worker is replaced by whichever
/// thread finds it dead); ~Engine joins them all once their actors stopped.
class ThreadList {
public:
  ThreadList() = default;
  ThreadList(const ThreadList&) = delete;
  ThreadList& operator=(const ThreadList&) = delete;
  ~ThreadList() { join_all(); }

  /// Keeps `t` until join_all. Any thread.
  void add(ActorThread&& t);
  /// Joins every thread added so far. One thread at a time (~Engine).
  void join_all();

private:
  struct Entry {
    ActorThread thread;
    Entry* next = nullptr;
  };
  /// A stack that any thread pushes onto (compare-exchange) and join_all
  /// empties at once (exchange): nothing is ever popped alone, so no node
  /// is reused under a pusher's feet.
  std::atomic<Entry*> head_{nullptr};
};

} // namespace actorgrad::detail
