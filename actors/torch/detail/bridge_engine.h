#pragma once
/// @file bridge_engine.h
/// The libtorch Engine that runs libtorch's backward calls on an actorgrad
/// Engine (install.h makes it libtorch's default engine).

#include <torch/csrc/autograd/engine.h>

#include <atomic>
#include <cstdint>
#include <memory>

#include "actorgrad/libengine/torch/torch_graph.h"

namespace actorgrad {
class Engine;
}

namespace actorgrad::torch::detail {

// Note [The bridge runs inside one libtorch GraphTask]
// libtorch keeps in its engine's thread-locals, which it does not export,
// what nodes and user code read during a backward call: the current
// GraphTask (Engine::queue_callback, needs_input_grad through
// task_should_compute_output and its exec_info), checkpoint validity
// (is_checkpoint_valid()), the thread-local state (grad mode, dispatch
// keys, ...), the warning handler and the reentrant depth. So each call
// (but one that needs none of it: Note [Calls without a libtorch
// GraphTask] in bridge_engine.cpp) builds a libtorch GraphTask holding the
// call's exec_info and runs one node, a Trampoline, through libtorch's own
// execute_with_graph_task: libtorch sets all of that once, as for any
// node, and the Trampoline's apply runs the call's real graph on the actor
// engine (a TorchGraphTask over libtorch's own Nodes:
// libengine/torch/torch_graph.h). Its final callbacks,
// captured gradients and error travel through the libtorch GraphTask as
// they would with the stock engine. A reentrant call (a node calling
// grad()) nests a Trampoline the same way, so libtorch counts the depth and
// hands a call past max_recursion_depth to its own reentrant thread, where
// the actor engine coordinates it; below that depth the actor engine runs
// it as its reentrant call (Engine::run inside a node). The cost is one
// libtorch GraphTask and one node call per backward call, not per node:
// measured with callgrind (a program linked only to libtorch, run with
// LD_PRELOAD=libactorgrad_torch_preload.so, --toggle-collect='*Engine::execute(*'),
// libtorch's thread_main around the Trampoline costs about 18,000
// instructions per call; a whole call of a 2-node graph (x + 1, backward)
// costs 35,100 against the stock engine's 40,400 (wall, best of 2,000:
// 7.5 us against 6.8 us), and an add chain of 1,000 costs 2,500
// instructions per node, node bodies included, against 12,270 (wall, best
// of 200: 0.35 ms against 1.59 ms).

/// Process-wide counters (written by every call with relaxed increments,
/// read by stats()).
struct Counters {
  std::atomic<std::uint64_t> calls{0};
  std::atomic<std::uint64_t> delegated{0};
  /// Parts of distributed backward passes run here (dist_engine.h).
  std::atomic<std::uint64_t> distributed_parts{0};
  /// Distributed passes listed here now: incremented by list_pass,
  /// decremented by end_pass (dist_pass.cpp, under its table's lock).
  std::atomic<std::int64_t> distributed_running{0};
};
Counters& counters();

/// A libtorch Engine whose execute() runs on `engine`. One per install();
/// never destroyed (calls that fetched it may still arrive after uninstall:
/// they go to libtorch's base engine once retire() has run).
class BridgeEngine final : public ::torch::autograd::Engine {
public:
  /// `fallback`: libtorch's default engine before (its anomaly metadata
  /// and saved-tensor hooks are kept: torch's Python engine supplies Python
  /// tracebacks and `saved_tensors_hooks`).
  BridgeEngine(std::unique_ptr<actorgrad::Engine> engine, ::torch::autograd::Engine& fallback);
  ~BridgeEngine() override;

  ::torch::autograd::variable_list execute(const ::torch::autograd::edge_list& roots,
                                           const ::torch::autograd::variable_list& inputs,
                                           bool keep_graph, bool create_graph, bool accumulate_grad,
                                           const ::torch::autograd::edge_list& outputs) override;

  /// Records a call's error in its libtorch GraphTask. For the Trampoline,
  /// the node named in anomaly mode's warning is the failing node itself
  /// (TorchGraph::rethrow_in_node warns), not the Trampoline.
  void thread_on_exception(std::shared_ptr<::torch::autograd::GraphTask> graph_task,
                           const std::shared_ptr<::torch::autograd::Node>& fn,
                           std::exception& e) override;

  std::unique_ptr<::torch::autograd::AnomalyMetadata> make_anomaly_metadata() override {
    return fallback_.make_anomaly_metadata();
  }
  std::unique_ptr<::torch::autograd::SavedVariableHooks>
  get_default_saved_variable_hooks() override {
    return fallback_.get_default_saved_variable_hooks();
  }

  /// Runs `task`, built by the caller (a distributed pass, dist_engine.cpp),
  /// from `first` as an outermost call of the actor engine inside a
  /// libtorch GraphTask, and returns its captured gradients. `roots` and
  /// `outputs`: the edges libtorch's nodes_in_graph is filled from. Throws
  /// when actorgrad was uninstalled meanwhile.
  ::torch::autograd::variable_list run_task(const std::shared_ptr<TorchGraphTask>& task,
                                            actorgrad::detail::ReadyTask&& first,
                                            const ::torch::autograd::edge_list& roots,
                                            const ::torch::autograd::edge_list& outputs,
                                            bool keep_graph);

  /// The actor engine (valid until retire() and the calls in flight end).
  actorgrad::Engine& engine() { return *engine_; }
  /// Drops the installation's use of the actor engine: it is destroyed when
  /// the last call in flight ends (or now, when none is).
  void retire();

  /// The engine made by an earlier install (a chain, to keep them reachable).
  BridgeEngine* const previous;

private:
  /// Takes a use of engine_ unless it was retired (see Note [Bridge uses]).
  bool acquire();
  void release();
  /// Releases an acquired use when it goes.
  struct Use {
    BridgeEngine* self;
    ~Use() { self->release(); }
  };
  /// Gives the call to libtorch's stock engine (counted as delegated).
  ::torch::autograd::variable_list run_on_stock(const ::torch::autograd::edge_list& roots,
                                                const ::torch::autograd::variable_list& inputs,
                                                bool keep_graph, bool create_graph,
                                                bool accumulate_grad,
                                                const ::torch::autograd::edge_list& outputs);
  /// Runs the call on the actor engine, inside one libtorch GraphTask
  /// unless it needs none (Note [Calls without a libtorch GraphTask]).
  ::torch::autograd::variable_list run(const ::torch::autograd::edge_list& roots,
                                       const ::torch::autograd::variable_list& inputs,
                                       bool keep_graph, bool create_graph, bool accumulate_grad,
                                       const ::torch::autograd::edge_list& outputs);
  /// Runs `task` (the call of `roots` and `outputs`) in a Trampoline of a
  /// libtorch GraphTask of depth `depth`.
  ::torch::autograd::variable_list run_in_graph_task(const std::shared_ptr<TorchGraphTask>& task,
                                                     actorgrad::detail::ReadyTask&& first,
                                                     const ::torch::autograd::edge_list& roots,
                                                     const ::torch::autograd::edge_list& outputs,
                                                     bool keep_graph, bool create_graph, int depth);

  std::unique_ptr<actorgrad::Engine> engine_;
  ::torch::autograd::Engine& fallback_;
  /// The installation's use plus one per call in flight; 0: engine_ is gone
  /// (see Note [Bridge uses]). Changed by install/uninstall and every call.
  std::atomic<std::int64_t> uses_{1};
};

/// The BridgeEngine install() put in place (null: none; install.cpp). Not
/// always libtorch's default engine: torch's Python module sets its own
/// stub when imported after the preload library installed actorgrad.
BridgeEngine* installed_bridge_engine();

/// The head of the chain of every BridgeEngine made (see `previous`).
std::atomic<BridgeEngine*>& all_bridge_engines();

} // namespace actorgrad::torch::detail
