#include "actorgrad/actors/parallel_forward.h"

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <vector>

#include "actorgrad/actors/engine.h"
#include "actorgrad/libengine/graph/graph.h"

namespace actorgrad {

namespace {

using define_once::Graph;
using define_once::RecomputePlan;

// Values of ForwardRun::cpu_ready besides a plan index.
constexpr std::int64_t kNoneReady = -1;
constexpr std::int64_t kAllDone = -2;

// The shared state of one parallel re-forward. Owned jointly by the caller
// and every posted job, so a worker that finishes the last node may still
// touch it after the caller has returned.
//
// Note: no lock anywhere. A node is recomputed by exactly one task; its
// parents finished before it started, because the task that takes a node's
// `pending` count to zero (acq_rel) is the one that dispatches it, and the
// post to a worker (or the push to `cpu_ready`, release/acquire) orders the
// dispatch before the run. So Graph::recompute reads finished parents and
// writes only its own node.
struct ForwardRun {
  ForwardRun(Graph& g, const RecomputePlan& p, Engine& e)
    : graph(g), plan(p), engine(e), pending(p.size()), next_ready(p.size(), kNoneReady),
      remaining(p.size()) {
    for (std::size_t i = 0; i < p.size(); ++i)
      pending[i].store(p.dirty_parents[i], std::memory_order_relaxed);
  }

  Graph& graph;
  const RecomputePlan& plan;
  Engine& engine;
  /// Per plan entry: dirty parents not finished yet.
  std::vector<std::atomic<std::uint32_t>> pending;
  /// CPU entries ready to run on the caller: a lock-free stack linked
  /// through next_ready (each entry is pushed once; the caller takes the
  /// whole stack at a time, so there is no ABA), or kAllDone.
  std::atomic<std::int64_t> cpu_ready{kNoneReady};
  std::vector<std::int64_t> next_ready;
  /// Plan entries not finished; the task that takes it to zero ends the run.
  std::atomic<std::size_t> remaining;
  /// Set once by the first failure (which writes `error` before setting it);
  /// later entries are skipped, not run, but still counted.
  std::atomic<bool> failed{false};
  std::atomic<bool> error_claimed{false};
  std::exception_ptr error;

  void fail(std::exception_ptr e) {
    if (!error_claimed.exchange(true, std::memory_order_acq_rel)) {
      error = std::move(e);
      failed.store(true, std::memory_order_release);
    }
  }
};

void execute(const std::shared_ptr<ForwardRun>& run, std::uint32_t entry);

// Sends a ready entry to the actor of its device, or to the caller's stack.
void dispatch(const std::shared_ptr<ForwardRun>& run, std::uint32_t entry) {
  Device device = Device::cpu();
  try {
    device = run->graph.compute_device(run->plan.order[entry]);
    if (!device.is_cpu()) {
      run->engine.post(device, [run, entry] { execute(run, entry); });
      return;
    }
  } catch (...) {
    run->fail(std::current_exception()); // e.g. a device the engine does not serve
  }
  std::int64_t head = run->cpu_ready.load(std::memory_order_relaxed);
  do
    run->next_ready[entry] = head;
  while (!run->cpu_ready.compare_exchange_weak(head, entry, std::memory_order_release,
                                               std::memory_order_relaxed));
  run->cpu_ready.notify_one();
}

// Runs one entry (unless the run failed), releases its dependents and
// counts it done. Never throws: it runs inside posted jobs.
void execute(const std::shared_ptr<ForwardRun>& run, std::uint32_t entry) {
  if (!run->failed.load(std::memory_order_acquire)) {
    try {
      run->graph.recompute(run->plan.order[entry], run->plan.record_history);
    } catch (...) {
      run->fail(std::current_exception());
    }
  }
  for (std::uint32_t d : run->plan.dependents[entry])
    if (run->pending[d].fetch_sub(1, std::memory_order_acq_rel) == 1)
      dispatch(run, d);
  if (run->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    run->cpu_ready.store(kAllDone, std::memory_order_release);
    run->cpu_ready.notify_one();
  }
}

} // namespace

void ParallelForward::run(Graph& graph, const RecomputePlan& plan) {
  if (plan.size() == 0)
    return;
  auto run = std::make_shared<ForwardRun>(graph, plan, engine_);
  for (std::uint32_t i = 0; i < plan.size(); ++i)
    if (plan.dirty_parents[i] == 0)
      dispatch(run, i);
  // The caller runs the CPU entries until the last entry anywhere is done.
  for (;;) {
    std::int64_t head = run->cpu_ready.exchange(kNoneReady, std::memory_order_acq_rel);
    if (head == kAllDone)
      break;
    if (head == kNoneReady) {
      run->cpu_ready.wait(kNoneReady, std::memory_order_acquire);
      continue;
    }
    while (head != kNoneReady) {
      const auto entry = static_cast<std::uint32_t>(head);
      head = run->next_ready[entry];
      execute(run, entry);
    }
  }
  if (run->error)
    std::rethrow_exception(run->error);
}

} // namespace actorgrad
