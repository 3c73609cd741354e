#include "actorgrad/actors/detail/coordinator_pool.h"

#include <algorithm>
#include <system_error>
#include <vector>

#include "actorgrad/actors/detail/async_call.h"
#include "actorgrad/actors/detail/message_type.h"
#include "actorgrad/actors/detail/post.h"
#include "actorgrad/libengine/engine/errors.h"

namespace actorgrad::detail {

// Note [Coordinator threads come and go]
// Each coordinator is a thread, so the pool bounds them three ways:
// - At most EngineConfig::max_async_coordinators exist, but for those that
//   jobs need past it (Note [Jobs that wait outside the engine] in
//   async_call.h), which stop as any idle one does. A call that finds
//   none idle and the pool full waits in `waiting_` (its future not ready)
//   and goes to the next coordinator that reports Idle, oldest call first.
//   Only calls of the application wait so: one made inside a node runs on
//   its own thread instead when no coordinator is parked (Note [Async
//   calls made inside a node] in async_call.h), so no call ever waits for
//   a coordinator that its own ancestor holds.
// - A coordinator idle for longer than the idle time stops, oldest first,
//   as long as more than EngineConfig::min_async_coordinators remain: while
//   some could stop, the pool wakes every quarter of the idle time (CAF's
//   timed wait; at the minimum it sleeps until a message comes). The
//   coordinator parked in EngineCore::idle_coordinator is not in `idle_`:
//   at each such wake-up the pool takes it out of the slot into `idle_`,
//   idle from then on. Had it been used, it would have parked itself
//   again; left unused, it stops one idle time later. So after a burst the
//   pool is back at the minimum within 1.25 idle times for the coordinators
//   it held, 1.5 for the parked one.
// - The pool joins the thread of every coordinator it stops (Note [Engine
//   threads are joined] in actor_thread.h), and on Shutdown it fails the
//   waiting calls (the engine is going away), stops every coordinator and
//   joins them all before it ends itself: a busy one finishes its call
//   first (Note [Shutdown during a frame] in runner.cpp). Taking the parked
//   coordinator out of its slot before and after that drops the slot's
//   reference, also of one that parked itself meanwhile.
//
// Note [Calls that wait for a coordinator]
// A coordinator that finished a call parks itself (Note [Idle coordinator
// slot] in async_call.h) instead of reporting Idle, so a call waiting here
// would not learn of it and could wait for good. So while calls wait, the
// pool sets EngineCore::calls_waiting, then takes the parked coordinator
// for the oldest of them; a coordinator reads the flag right after it
// parked and, when it is set, takes itself out of the slot again and
// reports Idle. Both sides write first (the flag; the slot) and read
// second (the slot; the flag), all sequentially consistent, so at least
// one of them sees the other's write: the pool takes the coordinator, or
// the coordinator leaves the slot (or both try, and the one compare-exchange
// that wins decides), never neither.

namespace {

/// Reports `why` as the outcome of the msg::AsyncCall that `call` holds.
void fail(caf::mailbox_element& call, const char* why) {
  (*call.content().get_mutable_as<msg::AsyncCall>(0).done)(
    std::make_exception_ptr(EngineError(why)), {});
}

} // namespace

CoordinatorPool::CoordinatorPool(caf::actor_config& cfg, std::shared_ptr<EngineCore> core)
  : EngineActor(cfg), core_(std::move(core)) {}

void CoordinatorPool::act() {
  const auto idle_time = core_->config.async_coordinator_idle_time;
  const auto tick = std::max<Clock::duration>(idle_time / 4, std::chrono::milliseconds(1));
  auto next_check = Clock::now() + tick;
  for (;;) {
    if (can_shrink()) { // checked on time even while messages keep coming
      const auto now = Clock::now();
      if (now >= next_check) {
        retire_idle(now);
        next_check = now + tick;
        continue;
      }
      if (!await_data(std::chrono::high_resolution_clock::now() + (next_check - now)))
        continue;
    }
    auto element = dequeue();
    const MessageType type(element->content());
    if (type.is<msg::AsyncCall>()) {
      take_call(std::move(element));
    } else if (type.is<msg::Idle>()) {
      became_idle(element->content().get_as<msg::Idle>(0).coordinator);
    } else if (type.is<msg::Shutdown>()) {
      stop_all();
      return;
    }
  }
}

void CoordinatorPool::take_call(caf::mailbox_element_ptr call) {
  if (!idle_.empty()) {
    caf::actor c = std::move(idle_.back().coordinator); // the most recently used: still warm
    idle_.pop_back();
    forward(c, std::move(call));
    return;
  }
  // A job never waits (Note [Jobs that wait outside the engine] in async_call.h).
  const bool job = call->content().get_as<msg::AsyncCall>(0).job;
  if (job || threads_.size() < core_->config.max_async_coordinators) {
    if (caf::actor c = start_coordinator()) {
      forward(c, std::move(call));
      return;
    }
    if (threads_.empty()) { // nothing would ever take it
      fail(*call, "an asynchronous call could not start: no thread could be started for its "
                  "coordinator");
      return;
    }
  }
  waiting_.push_back(std::move(call)); // Note [Calls that wait for a coordinator]
  core_->counters.async_calls_waited.fetch_add(1, std::memory_order_relaxed);
  core_->calls_waiting.store(true);
  if (caf::actor parked = core_->idle_coordinator.take())
    became_idle(std::move(parked));
}

void CoordinatorPool::became_idle(caf::actor coordinator) {
  if (waiting_.empty()) {
    idle_.push_back({std::move(coordinator), Clock::now()});
    return;
  }
  forward(coordinator, std::move(waiting_.front()));
  waiting_.pop_front();
  if (waiting_.empty())
    core_->calls_waiting.store(false);
}

caf::actor CoordinatorPool::start_coordinator() {
  ActorThread t;
  try {
    t = ActorThread::start<AsyncCoordinator>(core_->system, "actorgrad.async", core_);
  } catch (const std::system_error&) { // out of threads: the call waits, or fails if none exist
    return {};
  }
  caf::actor c = t.actor();
  threads_.emplace(c->id(), std::move(t));
  publish_count();
  return c;
}

void CoordinatorPool::retire_idle(Clock::time_point now) {
  const auto idle_time = core_->config.async_coordinator_idle_time;
  const std::size_t keep = core_->config.min_async_coordinators;
  std::vector<caf::actor> leaving;
  while (threads_.size() - leaving.size() > keep && !idle_.empty() &&
         now - idle_.front().since >= idle_time) {
    leaving.push_back(std::move(idle_.front().coordinator));
    idle_.pop_front();
  }
  if (threads_.size() - leaving.size() > keep)
    if (caf::actor parked = core_->idle_coordinator.take())
      became_idle(std::move(parked)); // idle from now on, or a waiting call's
  stop(leaving);
}

void CoordinatorPool::stop(const std::vector<caf::actor>& leaving) {
  for (const auto& c : leaving)
    post<caf::message_priority::high>(c, msg::Shutdown{});
  for (const auto& c : leaving) {
    auto t = threads_.extract(c->id());
    t.mapped().join();
  }
  if (!leaving.empty())
    publish_count();
}

void CoordinatorPool::stop_all() {
  for (auto& call : waiting_)
    fail(*call, "the engine was destroyed while an asynchronous call waited for a coordinator");
  waiting_.clear();
  core_->calls_waiting.store(false);
  core_->idle_coordinator.take(); // Note [Coordinator threads come and go]
  idle_.clear();
  std::vector<caf::actor> all;
  for (const auto& [id, t] : threads_)
    all.push_back(t.actor());
  stop(all);
  core_->idle_coordinator.take();
}

void CoordinatorPool::publish_count() {
  const std::size_t n = threads_.size();
  core_->counters.async_coordinators.store(n, std::memory_order_relaxed);
  if (n > core_->counters.peak_async_coordinators.load(std::memory_order_relaxed))
    core_->counters.peak_async_coordinators.store(n, std::memory_order_relaxed);
}

AsyncCoordinator::AsyncCoordinator(caf::actor_config& cfg, std::shared_ptr<EngineCore> core)
  : EngineActor(cfg), core_(std::move(core)) {}

void AsyncCoordinator::hand(msg::AsyncCall&& call) {
  handed_.emplace(std::move(call));
  call_handed_.store(true);
  wake();
}

bool AsyncCoordinator::run_handed_call(Runner& runner, const caf::actor& self) {
  await_mail_or([this] { return call_handed_.load(); });
  if (!call_handed_.load(std::memory_order_acquire))
    return false;
  msg::AsyncCall call = std::move(*handed_);
  handed_.reset();
  call_handed_.store(false, std::memory_order_relaxed); // only hand() sets it, after a take
  run_call(runner, std::move(call), self);
  return true;
}

void AsyncCoordinator::act() {
  Runner runner(*core_, this, ObservedActor::Role::async_coordinator, ReadyQueue{});
  const auto self = caf::actor_cast<caf::actor>(this);
  for (;;) {
    if (!run_handed_call(runner, self)) {
      auto element = dequeue();
      auto& content = element->content();
      const MessageType type(content);
      if (type.is<msg::AsyncCall>())
        run_call(runner, std::move(content.get_mutable_as<msg::AsyncCall>(0)), self);
      else if (type.is<msg::Shutdown>())
        return;
      else
        runner.handle(*element); // a straggler of a call coordinated before
    }
    if (runner.shutdown_pending())
      return; // a Shutdown that arrived during the call (Note [Shutdown during a frame])
  }
}

} // namespace actorgrad::detail
