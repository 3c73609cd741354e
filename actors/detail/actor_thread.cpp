#include "actorgrad/actors/detail/actor_thread.h"

#include <pthread.h>

#include <caf/actor_cast.hpp>
#include <caf/blocking_actor.hpp>
#include <caf/exit_reason.hpp>

namespace actorgrad::detail {

namespace {

/// What CAF's blocking_actor::launch runs on its thread, less the actor
/// system's detached-thread count (Note [Engine threads are joined]).
void run_actor(const caf::strong_actor_ptr& ptr) {
  auto* self = static_cast<caf::blocking_actor*>(caf::actor_cast<caf::abstract_actor*>(ptr));
  self->initialize();
  caf::error reason;
  try {
    self->act();
    reason = self->caf::local_actor::fail_state(); // blocking_actor hides the getter
  } catch (...) {
    reason = caf::exit_reason::unhandled_exception;
  }
  try {
    self->on_exit();
  } catch (...) { // as CAF's launch: an exit handler's error changes nothing
  }
  self->cleanup(std::move(reason), self->context());
}

} // namespace

ActorThread::ActorThread(caf::actor actor, const char* thread_name)
  : actor_(std::move(actor)),
    thread_([ptr = caf::actor_cast<caf::strong_actor_ptr>(actor_), thread_name] {
      pthread_setname_np(pthread_self(), thread_name);
      run_actor(ptr);
    }) {}

void ThreadList::add(ActorThread&& t) {
  auto* e = new Entry{std::move(t), head_.load(std::memory_order_relaxed)};
  while (!head_.compare_exchange_weak(e->next, e, std::memory_order_release,
                                      std::memory_order_relaxed)) {
  }
}

void ThreadList::join_all() {
  Entry* e = head_.exchange(nullptr, std::memory_order_acquire);
  while (e) {
    Entry* next = e->next;
    delete e; // ~ActorThread joins
    e = next;
  }
}

} // namespace actorgrad::detail
