#pragma once
/// @file graph_task_base.h
/// What every GraphTask has, whatever its graph type: the part the
/// schedulers see (see Note [Graph interface]), and the one observers are
/// handed (actors/observer.h). What runs a task's nodes is internal
/// (libengine/engine/detail/).

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "actorgrad/device/device.h"
#include "actorgrad/libengine/engine/execute_options.h"
#include "actorgrad/libengine/engine/node_info.h"

namespace actorgrad {

// The executor's side, internal (libengine/engine/detail/): what a task is
// handed when it runs (references only, so declared here).
namespace detail {
class Dispatch;
struct FinalCallback;
class ReadyHeap;
struct ReadyTask;
struct SentGrad;
} // namespace detail

/// Names the ready queue that runs a GraphTask's CPU nodes (a number, so a
/// queue keeps its identity when an actor hands it to another; 0: none).
using QueueId = std::uint64_t;

/// The devices of one task: nearly always none or a few, so kept inline (a
/// call rooted on a device allocates nothing for them).
using DeviceList = boost::container::small_vector<Device, 2>;

/// One backward()/grad() call (PyTorch's GraphTask), as the schedulers see
/// it: identity, completion count, first error, final callbacks, and one
/// virtual call per node into the graph-typed part (BasicGraphTask).
class GraphTaskBase : public std::enable_shared_from_this<GraphTaskBase> {
public:
  GraphTaskBase(ExecuteOptions options, int reentrant_depth);
  GraphTaskBase(const GraphTaskBase&) = delete;
  GraphTaskBase& operator=(const GraphTaskBase&) = delete;
  virtual ~GraphTaskBase();

  /// Unique id of this call, for messages and traces.
  const std::uint64_t id;
  const ExecuteOptions options;
  const int reentrant_depth;
  /// Anomaly mode of the caller when the task was created.
  const bool anomaly;

  // -- the graph-typed part ---------------------------------------------------

  /// Runs the node of ready task `t`: evaluates it and routes each output
  /// through `to`. Throws what the node threw, as an error naming it.
  virtual void run(detail::ReadyTask& t, detail::Dispatch& to) = 0;
  /// Runs this task on the calling thread from `first` until no node is
  /// ready, in the ready order (the one-thread executors); the first error
  /// is recorded and the nodes still ready after it are skipped.
  virtual void run_all_here(detail::ReadyTask&& first) = 0;
  /// run_all_here until two ready nodes each head `branch` nodes or more of
  /// their own, which only their path reaches (Note [Spreading a call where
  /// it branches] in actors/detail/cpu_lanes.h). Returns true when the task
  /// ran to its end; false with its ready tasks left in `rest` (the empty
  /// heap given), which hold no task.
  virtual bool run_here_until_branched(detail::ReadyTask&& first, detail::ReadyHeap& rest,
                                       std::size_t branch) = 0;
  /// Owner side of `g` (sent by another actor): accumulates it and hands the
  /// node to `to.ready` when its inputs are complete.
  virtual void accept_sent(detail::SentGrad& g, detail::Dispatch& to) = 0;
  /// The device whose actor runs `node` (a node handle of this task).
  virtual Device device_of(const void* node) const = 0;
  /// Describes `node` (null: none) for observers.
  virtual NodeInfo describe(const void* node) const = 0;
  /// Lets the CPU nodes of this CPU-only task run on several threads (Note
  /// [Parallel CPU nodes] in actors/detail/cpu_lanes.h): marks the nodes
  /// whose inputs join, prepares the node table for lookups from several
  /// threads and keeps the caller's thread-local state for the others.
  /// Call on the coordinator's thread before a node runs on another (Note
  /// [Spreading a call where it branches]).
  virtual void spread_cpu_nodes() = 0;
  /// Whether this CPU-only task may spread at all: not a call with inputs
  /// (grad(inputs=), backward(inputs=)) of a graph type whose nodes need
  /// their call's thread (Note [Nodes that need their call's thread] in
  /// actors/detail/cpu_lanes.h).
  virtual bool may_spread() const = 0;
  /// Whether spread_cpu_nodes was called.
  bool spread() const { return spread_; }
  /// Whether ready task `t` of this spread task runs on the task's
  /// coordinator only, which no lane hands it away from (Note [Nodes that
  /// need their call's thread] in actors/detail/cpu_lanes.h).
  virtual bool runs_on_coordinator(const detail::ReadyTask& t) const = 0;
  /// The CPU lane that last ran ready task `t`'s node in a spread call, plus
  /// one; 0 when none did or the graph type keeps no such hint (Note [Lanes
  /// that stay] in actors/detail/cpu_lanes.h).
  virtual unsigned last_lane(const detail::ReadyTask& t) const = 0;
  /// Records that CPU lane `lane` runs `t`'s node now; returns whether
  /// another lane ran it last.
  virtual bool set_last_lane(const detail::ReadyTask& t, unsigned lane) = 0;

  /// The distinct non-CPU devices whose actors run nodes of this task.
  const DeviceList& devices() const { return devices_; }

  // -- where the task runs (set by the executor before the first node runs,
  // read-only afterwards) ------------------------------------------------------

  /// The ready queue that runs this task's CPU nodes.
  QueueId cpu_queue = 0;
  /// The executor running this task: a backward call made inside one of
  /// its nodes (a reentrant call) defaults to it.
  class Executor* executor = nullptr;
  /// Opaque state of the executor running this task (the actor engine keeps
  /// the coordinator's and workers' handles here).
  std::shared_ptr<void> executor_data;

  // -- completion -------------------------------------------------------------

  /// Counts `n` more units of outstanding work: ready tasks and gradients in
  /// flight between actors (see Note [Completion without a lock]). Call
  /// before the task or message exists.
  void hold(std::int64_t n = 1) { outstanding_.fetch_add(n, std::memory_order_relaxed); }
  /// Ends one unit, after it was handled and what it produced was held.
  /// Returns true for the call that took the count to zero.
  bool release() { return outstanding_.fetch_sub(1) == 1; }
  /// Whether work of this task is left anywhere.
  bool outstanding() const { return outstanding_.load() != 0; }

  // -- roots that arrive later (Note [Roots that arrive later] in
  // basic_graph_task_impl.h) --------------------------------------------------

  /// Whether the task takes roots after it started (its coordinator then has
  /// a mailbox and serves it until the last one came and ran).
  bool takes_later_roots() const { return takes_later_roots_; }
  /// Roots still to come. Each is counted in the outstanding work from the
  /// task's creation until it ran; decremented (by the thread that hands the
  /// root over, before it sends it) as each comes.
  std::int64_t later_roots_pending() const { return later_roots_.load(); }
  /// Whether the task failed and only roots that will not come are left:
  /// its coordinator stops waiting (read by the coordinator's loop).
  bool stranded() const { return has_error() && outstanding_.load() == later_roots_.load(); }
  /// Notes that one of the roots still to come came (call before its ready
  /// task is sent to the coordinator).
  void later_root_came() { later_roots_.fetch_sub(1); }
  /// Called by the coordinator once the task's context is set, before its
  /// first node runs: from then on roots may be sent to it
  /// (Engine::add_root). Set before the task runs; null: nothing to call.
  std::function<void()> on_coordinated;

  /// Records `e` if it is the first error (first error wins). Returns true if it was.
  bool set_error(std::exception_ptr e);
  bool has_error() const { return has_error_.load(std::memory_order_acquire); }
  /// The first error (read after completion).
  std::exception_ptr error() const { return error_; }

  /// Queues `fn` to run when the task completes (lock-free; any actor).
  void queue_callback(std::function<void()> fn);
  /// Runs the queued callbacks in order, including ones they queue.
  void run_final_callbacks();

protected:
  /// Marks the task as taking `n` roots later (at creation, before it runs):
  /// they count as outstanding work.
  void expect_later_roots(std::int64_t n) {
    takes_later_roots_ = true;
    later_roots_.store(n);
    hold(n);
  }

  DeviceList devices_;
  /// Set by spread_cpu_nodes before the first node runs; read-only after.
  bool spread_ = false;

private:
  // Note [Outstanding work memory order]
  // Written by every actor that runs a node of the task or handles one of its
  // messages; read by its coordinator. An increment happens before the task
  // or message it counts is published (its push or send, which synchronize
  // through the heap's owner or CAF's mailbox), so relaxed suffices. The
  // decrement's release publishes what the finished work wrote (gradients,
  // captures, the error) and the acquire of the decrement (or of
  // outstanding()) that sees zero makes it visible to the coordinator,
  // which then reads the results. Both are sequentially consistent, not
  // just acq_rel: the actor engine's coordinator sleeps on a doorbell until
  // the count is zero, and the ringer's decrement and the sleeper's read
  // must take part in the doorbell's single total order (Note [Wake-up
  // without a message] in actors/detail/runner.cpp). On x86 they are the
  // same instructions.
  std::atomic<std::int64_t> outstanding_{0};
  /// Set at creation (expect_later_roots), read-only afterwards.
  bool takes_later_roots_ = false;
  /// Roots still to come: decremented by the threads that hand them over
  /// (later_root_came), read by the coordinator (stranded). Sequentially
  /// consistent, as outstanding_, with which it is compared.
  std::atomic<std::int64_t> later_roots_{0};
  /// Claimed once by the first set_error (any actor); error_ is written only
  /// by the claimer, then has_error_ is released for readers.
  std::atomic<bool> first_error_claimed_{false};
  std::atomic<bool> has_error_{false};
  std::exception_ptr error_;
  /// Lock-free push list (any actor pushes; the coordinator takes it at the end).
  std::atomic<detail::FinalCallback*> callbacks_{nullptr};
};

} // namespace actorgrad
