#pragma once
/// @file workloads.h
/// The graphs the engine benchmarks run, the engines they run on, and the
/// sequential lower bound (the same nodes called in a precomputed order).

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actorgrad/actors/engine_config.h"
#include "actorgrad/libengine/autograd/node.h"
#include "actorgrad/libengine/engine/detail/input_buffer.h"
#include "actorgrad/libengine/engine/executor.h"
#include "actorgrad/libengine/tensor/tensor.h"
#include "bench/common/ready_order.h"

namespace actorgrad {
class Engine; // actors/engine.h
} // namespace actorgrad

namespace actorgrad::bench {

/// One backward graph, built once and run many times (retain_graph).
struct Graph {
  variable_list keep;       ///< leaves and outputs kept alive
  edge_list roots;          ///< one root edge
  variable_list root_grads; ///< its gradient
  std::size_t nodes = 0;    ///< nodes the backward runs (GraphTask::num_nodes)
  /// Multi-device cases: busy time of the longest path and of all nodes (ns).
  double critical_path_ns = 0;
  double total_work_ns = 0;
};

/// Adds `out` to `g.keep` and makes it the root, with a gradient of ones.
Graph finish_graph(Graph g, const Tensor& out);

/// `y = y + 1`, n times, from a leaf of shape [1]: every backward node
/// returns its gradient unchanged, so the time is the engine's.
Graph chain_passthrough(int n);
/// `y = y * 1.0001`, n times (each backward allocates a [1] tensor).
Graph chain_mul(int n);
/// h = x + 1; b_i = h * c_i (i < w); s = b_0 + ... + b_{w-1}: w-wide fan-out
/// at h (w gradients accumulate in its InputBuffer) and a chain of adds.
Graph fan(int w);
/// 4 layers h = tanh(h @ W + b), batch 32, width 64, loss = sum(h).
Graph mlp(int layers = 4, int batch = 32, int width = 64);
/// n random ops (x + 1, x * c, x + y) on [1] tensors picking inputs among
/// the 8 most recent, seeded.
Graph random_dag(int n, std::uint64_t seed = 42);
/// `branches` independent chains of `depth` products y = y @ W_b (W_b a
/// constant [size, size] near the identity, one per branch) from one leaf
/// x of shape [size, size], each summed, the sums joined by a chain of adds:
/// a wide graph of real work (one [size, size] matrix product per MmBackward).
Graph wide_dag(int branches, int depth, int size);

/// A node whose backward spins for a fixed time and returns prebuilt
/// gradients (already on the consumers' devices).
class BusyNode final : public Node {
public:
  BusyNode(std::chrono::nanoseconds spin, Tensor input_like);
  void connect(const std::shared_ptr<Node>& next, Tensor grad_for_next);
  variable_list apply(variable_list&& grads) override;
  std::string name() const override { return "BusyNode"; }

private:
  std::chrono::nanoseconds spin_;
  variable_list outs_;
};

/// Busy-wait for `d` of wall time.
void spin_for(std::chrono::nanoseconds d);

/// A chain of n busy nodes over `devices` sim devices in contiguous stages
/// (stage k on sim:k): one backward crosses devices-1 times.
Graph busy_pipeline(int n, int devices, std::chrono::nanoseconds spin);
/// A chain of n busy nodes dealt round-robin over `devices` sim devices
/// (node j on sim:j % devices): every gradient crosses to another device.
Graph busy_hops(int n, int devices, std::chrono::nanoseconds spin);
/// A CPU root feeding `devices` independent chains of n busy nodes, chain k on sim:k.
Graph busy_branches(int n, int devices, std::chrono::nanoseconds spin);

/// Runs the graph's backward with retain_graph on `e`.
void run_backward(Executor& e, const Graph& g);
/// ... with the actor engine's execute_async, waiting for its future.
void run_backward_async(Engine& e, const Graph& g);
/// Runs grad(root, first kept leaf) with retain_graph on `e`: a call with
/// inputs (selective execution and a capture).
void run_grad(Executor& e, const Graph& g);

/// A plan's pass over `order` (ready order): resets every step's buffer and
/// adds the graph's root gradient into the first.
void start_pass(const std::vector<PlannedStep<Node>>& order,
                std::vector<detail::InputBuffer>& buffers, const Graph& g);

/// Runs step `i` of a plan (`apply`; the caller has grad mode off) and adds
/// each output into its target's buffer; calls `fed(target step)` for every
/// target, after its add (an output the node did not return adds nothing).
template <class Fed>
void run_step(const std::vector<PlannedStep<Node>>& order,
              std::vector<detail::InputBuffer>& buffers, std::size_t i, Fed&& fed) {
  const PlannedStep<Node>& s = order[i];
  variable_list out = s.fn->apply(detail::InputBuffer::variables(std::move(buffers[i])));
  for (std::size_t k = 0; k < s.targets.size(); ++k) {
    auto [step, input] = s.targets[k];
    if (step < 0)
      continue;
    if (k < out.size())
      buffers[step].add(input, std::move(out[k]));
    fed(step);
  }
}

/// The sequential lower bound: the graph's nodes in the order the reference
/// executor runs them (ready order), called directly (`apply`, grad mode
/// off) with their gradients accumulated in plain InputBuffers. No
/// dependency counting, no queue, no validation or hooks.
class SequentialPlan {
public:
  explicit SequentialPlan(const Graph& g);
  void run();
  std::size_t size() const { return order_.size(); }

private:
  using Step = PlannedStep<Node>;
  std::vector<Step> order_;
  std::vector<detail::InputBuffer> buffers_;
  const Graph* graph_;
};

/// The configuration of the actor engine named `name`, serving `devices`:
/// "actor", "actor_spinN" (EngineConfig::spin_before_block of N µs) or
/// "actor_Nw" (EngineConfig::cpu_workers N); nullopt for any other name.
std::optional<EngineConfig> actor_config(const std::string& name, std::vector<Device> devices);

/// Engines by name: "actor" (or "actor_spinN", "actor_Nw": see actor_config),
/// "baseline", "reference". Built on first use, each serving sim:0..sim:3,
/// shared by the whole process.
Executor& engine(const std::string& name);
/// The names engine() knows, in report order.
const std::vector<std::string>& engine_names();

/// Peak resident set size of this process so far, in bytes.
std::size_t peak_rss_bytes();

} // namespace actorgrad::bench
