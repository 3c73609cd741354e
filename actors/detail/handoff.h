#pragma once
/// @file handoff.h
/// Reentrant calls past max_recursion_depth: the actor hands its ready queue
/// to a pool worker and back. Internal.

#include <memory>

#include "actorgrad/actors/detail/runner.h"

namespace actorgrad::detail {

// Note [Depth handoff]
// A node that calls backward runs inside Runner::run, inside its actor's
// dispatch loop; the nested GraphTask is coordinated by the same runner
// (coordinate is simply called again), which keeps serving everything its
// queue holds, other tasks included; the nested task's tasks run first
// because they are deeper. Each such frame costs stack, so at
// max_recursion_depth nested frames on one thread (or when the thread's
// stack runs short: stack_guard.h), the runner hands its queue and the
// nested task to a pool worker and waits:
//
//  1. requester: msg::Handoff{task, first, queue (moved out), requester}
//     to the ReentrantPool, which gives it to an idle (or new) PoolWorker.
//     From now on the requester runs nothing.
//  2. pool worker: adopts the queue (its id says which CPU nodes are its,
//     its device which device nodes) and answers msg::Serving.
//  3. requester: every message that reaches its mailbox meanwhile belongs
//     to the queue: it keeps them until Serving arrives, then forwards them
//     (and all later ones) to the pool worker, in arrival order. Down and
//     exit messages are handled by the requester itself: the frames they
//     abort are its own.
//  4. pool worker: coordinates the nested task on the adopted queue until
//     it completes, drains its mailbox into the queue (what was forwarded
//     so far), and answers msg::HandBack{queue}.
//  5. requester: adopts the queue back and returns from coordinate.
//
// A message the requester forwards after the pool worker's final drain
// reaches the pool worker when it no longer serves the queue: Runner::handle
// routes it by ownership to the task's coordinator or worker, which is the
// requester again. Messages between two actors keep their order, so Serving
// precedes HandBack and the requester always knows who holds its queue.
// No thread's stack ever holds more than max_recursion_depth frames: the
// pool worker's handed-off call counts as one frame on its own thread.

/// Requester side: hands `task` (and `r`'s whole queue) to a pool worker
/// and waits for the queue to come back.
void hand_off(Runner& r, const std::shared_ptr<GraphTaskBase>& task, ReadyTask&& first);

/// Pool worker side: adopts the queue of `h`, coordinates its task, then
/// hands the queue back to the requester.
void serve_handoff(Runner& r, msg::Handoff&& h);

} // namespace actorgrad::detail
