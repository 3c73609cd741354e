#pragma once
/// @file parallel_plan.h
/// The machine's own bound for a multi-device graph: what plain threads,
/// with no engine at all, make of its busy nodes on this machine.

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "bench/common/workloads.h"

namespace actorgrad::bench {

/// One plain thread per non-CPU device (the caller runs the CPU nodes), each
/// calling its device's nodes in ready order. A node waits for its inputs on
/// an atomic count (`std::atomic::wait`, a futex: the cheapest blocking
/// hand-off there is); its gradients go to plain InputBuffers as in
/// SequentialPlan. No queue, no GraphTask, no streams.
///
/// The critical-path bound assumes a core per device. On a machine with
/// fewer cores than busy devices, or whose idle cores take long to wake, no
/// engine can reach it: this plan measures how close the machine itself
/// gets, so that `engine makespan / this plan's` is the engine's share.
class ParallelPlan {
public:
  /// Throws std::invalid_argument if two devices' nodes feed the same input
  /// of a node (their accumulations would race: busy graphs never do).
  explicit ParallelPlan(const Graph& g);
  ~ParallelPlan();
  ParallelPlan(const ParallelPlan&) = delete;
  ParallelPlan& operator=(const ParallelPlan&) = delete;

  /// One backward pass; returns when every node has run.
  void run();

private:
  using Step = PlannedStep<Node>;

  void run_lane(const std::vector<std::int32_t>& lane);
  void lane_thread(std::size_t lane);

  std::vector<Step> order_;
  std::vector<detail::InputBuffer> buffers_;
  std::vector<int> in_degree_;
  std::unique_ptr<std::atomic<int>[]> pending_;
  /// Step indices per lane in ready order; lane 0 is the CPU's (the caller).
  std::vector<std::vector<std::int32_t>> lanes_;
  std::vector<std::thread> threads_;
  const Graph* graph_;
  /// Bumped by run() to start the device lanes; -1 stops them.
  std::atomic<std::int64_t> generation_{0};
  /// Device lanes done with the current pass.
  std::atomic<int> done_{0};
};

} // namespace actorgrad::bench
