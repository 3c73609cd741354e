#pragma once
/// @file single_case.h
/// One single-device workload on one engine, ready to run repeatedly: what
/// bench_engines times and bench_chain_driver counts. Header-only, because
/// the libtorch engines exist only in binaries built with
/// ACTORGRAD_BENCH_HAVE_TORCH.

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "actorgrad/actors/engine.h"
#include "bench/common/parallel_plan.h"
#include "bench/common/reentrant.h"
#include "bench/common/workloads.h"
#if ACTORGRAD_BENCH_HAVE_TORCH
#include "bench/torch/torch_cases.h"
#endif

namespace actorgrad::bench {

/// The graph of a case by name (chain_passthrough, chain_mul, fan, mlp,
/// random_dag, wide_dag; pipeline, branches and hops: n sim devices, nodes that do
/// nothing); throws std::invalid_argument naming an unknown one.
inline Graph build_case(const std::string& kind, int n) {
  if (kind == "chain_passthrough")
    return chain_passthrough(n);
  if (kind == "chain_mul")
    return chain_mul(n);
  if (kind == "fan")
    return fan(n);
  if (kind == "mlp")
    return mlp();
  if (kind == "random_dag")
    return random_dag(n);
  // 64 independent chains of n [28, 28] matrix products (one product's
  // backward: about 5 us), joined at the end: work for CPU workers.
  if (kind == "wide_dag")
    return wide_dag(64, n, 28);
  // The multi-device graphs of bench_engines with no busy work (n = devices):
  // what is left is the engines' own cost of running nodes on device workers.
  if (kind == "pipeline")
    return busy_pipeline(64, n, std::chrono::nanoseconds(0));
  if (kind == "branches")
    return busy_branches(32, n, std::chrono::nanoseconds(0));
  // Every node on another device than the next: the cost of a device hop.
  if (kind == "hops")
    return busy_hops(64, n, std::chrono::nanoseconds(0));
  // A call whose root is on a device: n nodes that do nothing, all on sim:0.
  if (kind == "sim_root")
    return busy_pipeline(n, 1, std::chrono::nanoseconds(0));
  throw std::invalid_argument("unknown case '" + kind + "'");
}

/// A case on an engine: sequential (the lower bound), threads (the bound of
/// a graph with device nodes: one plain thread per device, ParallelPlan),
/// reference, baseline, actor, or (with libtorch) torch_seq, torch and
/// torch_actor (libtorch's nodes on the actor engine through the bridge,
/// installed for the rest of the process). Kind "reentrant" (n = the
/// depth, see ReentrantCase) has no torch variant; kind "async_K" runs case
/// K with the actor engine's execute_async and waits for it (actor only);
/// kind "grad_K" runs case K as a grad call with respect to its first leaf
/// (no sequential bound).
/// Not movable: run() refers to the members.
class SingleCase {
public:
  /// Throws std::runtime_error for a torch engine in a build without
  /// libtorch, or for a case without a torch variant.
  SingleCase(const std::string& engine_name, const std::string& kind, int n) {
    if (kind == "reentrant") {
      if (engine_name.rfind("torch", 0) == 0)
        throw std::runtime_error("reentrant: no libtorch variant");
      reentrant_ = std::make_unique<ReentrantCase>(
        n, engine_name == "sequential" ? nullptr : &engine(engine_name));
      nodes_ = reentrant_->nodes();
      run_ = [this] { reentrant_->run(); };
      return;
    }
    if (engine_name == "torch" || engine_name == "torch_seq" || engine_name == "torch_actor") {
#if ACTORGRAD_BENCH_HAVE_TORCH
      if (engine_name == "torch_actor")
        torchb::install_bridge();
      torch_ = torchb::make(kind, n);
      nodes_ = torchb::nodes(*torch_);
      if (engine_name != "torch_seq")
        run_ = [this] { torchb::backward(*torch_); };
      else
        run_ = [this] { torchb::sequential(*torch_); };
      return;
#else
      throw std::runtime_error("built without libtorch");
#endif
    }
    const bool async = kind.rfind("async_", 0) == 0;
    const bool grad = kind.rfind("grad_", 0) == 0;
    graph_ = build_case(async ? kind.substr(6) : grad ? kind.substr(5) : kind, n);
    nodes_ = graph_.nodes;
    if (grad) {
      if (engine_name == "sequential")
        throw std::runtime_error(kind + ": no sequential bound (the call may prune nodes)");
      Executor& e = engine(engine_name);
      run_ = [this, &e] { run_grad(e, graph_); };
    } else if (async) {
      auto* actor =
        engine_name == "sequential" ? nullptr : dynamic_cast<Engine*>(&engine(engine_name));
      if (actor == nullptr)
        throw std::runtime_error(kind + ": the actor engine only");
      run_ = [this, actor] { run_backward_async(*actor, graph_); };
    } else if (engine_name == "sequential") {
      plan_ = std::make_unique<SequentialPlan>(graph_);
      run_ = [this] { plan_->run(); };
    } else if (engine_name == "threads") {
      threads_ = std::make_unique<ParallelPlan>(graph_);
      run_ = [this] { threads_->run(); };
    } else {
      Executor& e = engine(engine_name);
      run_ = [this, &e] { run_backward(e, graph_); };
    }
  }
  SingleCase(const SingleCase&) = delete;
  SingleCase& operator=(const SingleCase&) = delete;

  /// One backward pass.
  void run() const { run_(); }
  std::size_t nodes() const { return nodes_; }

private:
  Graph graph_;
  std::unique_ptr<SequentialPlan> plan_;
  std::unique_ptr<ParallelPlan> threads_;
  std::unique_ptr<ReentrantCase> reentrant_;
#if ACTORGRAD_BENCH_HAVE_TORCH
  std::shared_ptr<torchb::TorchGraph> torch_;
#endif
  std::size_t nodes_ = 0;
  std::function<void()> run_;
};

} // namespace actorgrad::bench
