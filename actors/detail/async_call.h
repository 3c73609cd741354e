#pragma once
/// @file async_call.h
/// Asynchronous calls: a pooled coordinator actor runs the backward call and
/// reports its outcome (to a future, or as a reply to a request). Internal.

#include <future>
#include <memory>
#include <utility>

#include "actorgrad/actors/detail/call_done.h"
#include "actorgrad/actors/detail/engine_core.h"
#include "actorgrad/actors/detail/runner.h"
#include "actorgrad/actors/messages.h"
#include "actorgrad/libengine/engine/detail/call_args.h"

namespace actorgrad::detail {

// Note [Pooled async coordinators]
// An asynchronous call needs an actor of its own to coordinate it: its
// dispatch loop blocks until the task is done, and the caller must not.
// Spawning a blocking actor per call started an OS thread per call (about
// 26,000 instructions and 57-100 us). So the CoordinatorPool keeps async
// coordinators (AsyncCoordinator): a call goes
// to it as msg::AsyncCall and on to an idle coordinator (a new one only
// when all are busy; how many, and for how long: Note [Coordinator threads
// come and go] in coordinator_pool.cpp), which runs it with its long-lived
// Runner and reports Idle. It reports Idle *before* calling `done`: whatever the caller sends
// once `done` woke it (the next call) then reaches the pool after the Idle,
// so a loop of calls reuses one coordinator instead of racing the pool into
// spawning more. A message of a finished call that arrives later (a WakeUp,
// a gradient of a call a dead worker aborted) is handled by that Runner as
// any straggler; the task it belongs to is kept alive by the message.
//
// Note [Idle coordinator slot]
// The pool is an actor on a thread of its own, so a call through it waits
// for two thread wake-ups before its first node runs (the pool's, then the
// coordinator's) and costs a third message (Idle) after. So a coordinator
// that finished a call first tries to park itself in
// EngineCore::idle_coordinator (compare-exchange from null), and a call
// takes the parked one (exchange with null) and hands itself to it (below). Only
// when the slot is empty does a call go through the pool, and only when it
// was taken does a coordinator report Idle. A coordinator is therefore
// parked, in the pool's idle list or busy, never two of these at once, so
// two calls never share one. It parks before calling `done`, for the reason
// above. The slot holds a strong reference, which the pool drops after
// every coordinator stopped (none can park again then).
//
// Note [A call handed to a parked coordinator]
// A call that takes the parked coordinator owns it until it parks again,
// so it needs no mailbox to reach it: AsyncCoordinator::hand writes the call into
// the coordinator's hand-over place, sets a flag and rings its doorbell.
// That saves the message's element, allocated on the caller's thread and
// freed on the coordinator's, and CAF's enqueue and dequeue. Between calls
// the coordinator waits for its mailbox or the flag (Note [Doorbell] covers
// the flag as it covers a wake-up: set before the ring, checked after the
// sleep is announced), then moves the call out and clears the flag before
// running it, so both are empty again before it parks; the park (release)
// and the next take (acquire) order the next caller's write after that. A
// handed call comes before a message that waits beside it, as a Shutdown
// waits for a call in progress (Note [Shutdown during a frame]). A call
// handed to a coordinator that stopped meanwhile is destroyed with it, as
// a message to it would be: its future reports a broken promise.

//
// Note [Async calls made inside a node]
// An asynchronous call made while a node runs on this thread (a node that
// starts a backward_async, or waits for one) is a reentrant call. Sent to
// the pool, it could wait there for a coordinator while every coordinator
// runs a call whose node waits for it (the cap of Note [Coordinator threads
// come and go]): a deadlock. So unless a coordinator is parked, free at
// once, such a call runs on the calling thread as a synchronous reentrant
// call would (depth + 1, the depth limit and handoff included), and its
// future is ready when the call returns; its outcome reaches the future as
// it would from a coordinator. PyTorch runs a reentrant call on the thread
// of its parent as well. EngineStats::async_calls_run_inline counts them.

// Note [Jobs that wait outside the engine]
// Engine::run_on_coordinator runs a job, not a call, on a pooled
// coordinator: code outside the engine (a process's part of a distributed
// backward: Note [Distributed autograd on actors] in
// actors/torch/detail/dist_engine.cpp) whose task takes roots that arrive later,
// from other processes, and whose coordinator must therefore be no thread
// that those roots need (an RPC agent's). A call of Engine::run the job
// makes is coordinated by its coordinator (Runner::current). Such a job may
// wait for another process's job, which may wait for one of this process's
// jobs still to start: a job that found every coordinator busy and waited
// in the pool, past max_async_coordinators, could close that circle (N
// contexts crossing two processes, N past the cap, each side's running jobs
// waiting for the other side's waiting ones), where libtorch, whose
// DistEngine holds no thread while it waits, goes on. So a job never waits
// for a coordinator: the pool starts one past the cap when none is idle.
// Coordinators stay bounded by the jobs in progress (for the distributed
// case, the contexts whose part runs in this process at once, each started
// by an application thread that waits for it), and those past the cap stop
// once idle, as any (Note [Coordinator threads come and go] in
// coordinator_pool.cpp). A job is never run on the calling thread: the
// thread that starts one (an RPC agent's) is the one it must not hold.

/// Runs `job` on a pooled async coordinator, never on this thread and never
/// waiting for one (Note [Jobs that wait outside the engine]): `job(null)`
/// there, or `job(error)` on the pool's thread when no coordinator could
/// be started or the engine is going away.
void spawn_job(const std::shared_ptr<EngineCore>& core, std::shared_ptr<CallDone> job);

/// Runs `call` on a pooled async coordinator, or on this thread when it is
/// made inside a node and none is parked (Note [Async calls made inside a
/// node]); `done` is called once (CallDone).
void spawn_call(Executor* engine, const std::shared_ptr<EngineCore>& core, BackwardCall call,
                std::shared_ptr<CallDone> done);

/// Runs `call` on `engine` on this thread and reports its outcome to `done`.
void run_here(Executor* engine, BackwardCall&& call, CallDone& done);

/// A pooled async coordinator's handling of `call` (Note [Pooled async
/// coordinators]): makes its task and coordinates it with `runner`, parks
/// `self` for the next call or tells the pool that it is idle, then calls
/// its `done`.
void run_call(Runner& runner, msg::AsyncCall&& call, const caf::actor& self);

/// Runs `call` on a pooled async coordinator and fulfils the future with
/// `finish(captured gradients)`: errors of the call, from making its task
/// to its nodes and `finish`, arrive through the future.
template <class R, class Finish>
std::future<R> run_async(Executor* engine, const std::shared_ptr<EngineCore>& core,
                         BackwardCall call, Finish finish) {
  auto done = std::make_shared<PromiseDone<R, Finish>>(std::move(finish));
  std::future<R> result = done->future();
  spawn_call(engine, core, std::move(call), std::move(done));
  return result;
}

} // namespace actorgrad::detail
