#include "actorgrad/actors/torch/detail/bridge_engine.h"

#include <ATen/core/grad_mode.h>
#include <ATen/record_function.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/anomaly_mode.h>
#include <torch/csrc/autograd/utils/warnings.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include "actorgrad/actors/engine.h"
#include "actorgrad/actors/torch/detail/nodes_in_graph.h"
#include "actorgrad/libengine/autograd/grad_mode.h"
#include "actorgrad/libengine/engine/detail/current_graph_task.h"
#include "actorgrad/libengine/torch/torch_graph.h"
#include "actorgrad/libengine/torch/validate_outputs.h"

namespace actorgrad::torch::detail {

using ::torch::autograd::edge_list;
using ::torch::autograd::GraphTask;
using ::torch::autograd::ReadyQueue;
using ::torch::autograd::variable_list;

namespace {

class Trampoline;

/// The Trampoline (and so the libtorch GraphTask) that runs on this thread
/// now (null: none). Written and read by this thread only.
thread_local Trampoline* innermost = nullptr;

/// This thread's libtorch ready queue for the calls it starts (libtorch's
/// engine pops the Trampoline from the thread's local_ready_queue, which we
/// can set but not read). Only this thread touches it.
thread_local std::shared_ptr<ReadyQueue> thread_queue;

/// Runs the call's graph on the actor engine on this thread and finishes it
/// (final callbacks, captured gradients); `trampoline` runs it in its
/// libtorch GraphTask (null: none, Note [Calls without a libtorch
/// GraphTask]).
variable_list run_graph(Engine& engine, const std::shared_ptr<TorchGraphTask>& task,
                        actorgrad::detail::ReadyTask&& first, Trampoline* trampoline) {
  struct Innermost {
    Trampoline* prev = innermost;
    explicit Innermost(Trampoline* t) { innermost = t; }
    ~Innermost() { innermost = prev; }
  } scope(trampoline);
  {
    TorchGraph::call_scope state; // Note [Per-thread call state]
    engine.run(task, std::move(first));
  }
  // Capture hooks ran when each gradient was captured (TorchGraph::capture).
  return task->finish();
}

// Note [Nodes in graph on demand]
// torch._C._will_engine_execute_node, which a hook may call during a
// backward, looks a node up in the current libtorch GraphTask's
// nodes_in_graph_ (and its exec_info), which libtorch's compute_dependencies
// fills with every node it reaches. The bridge's calls compute their
// dependencies in the actor engine, so that set stays empty. Filling it in
// every call whose graph runs user code costs a hash-set insertion and an
// allocation a node: on a chain of 1,000 adds with one hook (Python, thread
// CPU time of backward, median of 400, the module with and without it, on
// this loaded 2-core VM) 30-70 ns a node more, on 120-170 ns. So install()
// puts a wrapper of torch's function in its place
// (tools/python/actorgrad/torch.py) that first fills the set of the call
// running on this thread, once a call, with libtorch's walk
// (fill_nodes_in_graph): calls nobody asks about pay nothing.

/// Fills libtorch's GraphTask's nodes_in_graph_ as libtorch's
/// compute_dependencies does: every node reached along an edge from the
/// roots, without expanding those below the inputs' lowest topological_nr.
/// `reached`: how many nodes the actor engine's walk of the call found
/// (about as many).
void fill_nodes_in_graph(GraphTask& stock, const edge_list& roots, const edge_list& outputs,
                         std::size_t reached) {
  stock.nodes_in_graph_.reserve(reached);
  std::uint64_t min_topo_nr = outputs.empty() ? 0 : std::numeric_limits<std::uint64_t>::max();
  for (const auto& e : outputs)
    min_topo_nr = std::min(min_topo_nr, e.function->topological_nr());
  // Several roots hang below a GraphRoot, of which they are next nodes.
  std::vector<::torch::autograd::Node*> queue;
  for (const auto& e : roots)
    if (roots.size() == 1 || stock.nodes_in_graph_.insert(e.function.get()).second)
      queue.push_back(e.function.get());
  while (!queue.empty()) {
    ::torch::autograd::Node* fn = queue.back();
    queue.pop_back();
    if (fn->topological_nr() < min_topo_nr)
      continue;
    for (const auto& e : fn->next_edges())
      if (auto* next = e.function.get(); next && stock.nodes_in_graph_.insert(next).second)
        queue.push_back(next);
  }
}

/// The one node libtorch's engine runs for a call: its apply runs the call's
/// real graph on the actor engine (Note [The bridge runs inside one libtorch
/// GraphTask]).
class Trampoline final : public ::torch::autograd::Node {
public:
  /// `roots` and `outputs`: the call's, alive while it runs.
  Trampoline(Engine& engine, std::shared_ptr<TorchGraphTask> task,
             actorgrad::detail::ReadyTask first, GraphTask& stock, const edge_list& roots,
             const edge_list& outputs)
    : Node(std::numeric_limits<std::uint64_t>::max()), engine_(engine), task_(std::move(task)),
      first_(std::move(first)), stock_(stock), roots_(roots), outputs_(outputs),
      reached_(task_->num_nodes()) {}

  std::string name() const override { return "actorgrad::TorchBridge"; }

  // Note [Nothing of a call left on libtorch's threads]
  // Past its depth limit libtorch runs a nested call's GraphTask, and so
  // this node, on one of its reentrant threads, which may drop them only
  // after the caller returned. Whatever they still hold is then freed on
  // that thread; a tensor or node with a Python object needs the GIL there,
  // and if the interpreter is finalizing by then, taking it ends the thread
  // with pthread_exit, whose unwind through a noexcept frame terminates the
  // process (stock torch 1.13 does that to a nested grad()'s result, which
  // its GraphTask's future keeps). So the call's gradients go back through
  // result_, not libtorch's future (captured_vars_ stays empty), and the
  // call's TorchGraphTask leaves this node when it has run: the caller's
  // references are the last ones.
  variable_list apply(variable_list&&) override {
    const std::shared_ptr<TorchGraphTask> task = std::move(task_);
    result_ = run_graph(engine_, task, std::move(first_), this);
    return {};
  }

  /// The libtorch GraphTask it runs in.
  const GraphTask& stock() const { return stock_; }
  /// Fills stock()'s nodes_in_graph_ unless done (Note [Nodes in graph on demand]).
  void fill_nodes_in_graph() {
    if (!nodes_in_graph_filled_)
      detail::fill_nodes_in_graph(stock_, roots_, outputs_, reached_);
    nodes_in_graph_filled_ = true;
  }

  /// The call's captured gradients, once libtorch's future completed without error.
  variable_list take_result() { return std::move(result_); }

private:
  Engine& engine_;
  std::shared_ptr<TorchGraphTask> task_;
  actorgrad::detail::ReadyTask first_;
  GraphTask& stock_;
  const edge_list& roots_;
  const edge_list& outputs_;
  std::size_t reached_;
  /// Written and read by the thread running the call only.
  bool nodes_in_graph_filled_ = false;
  variable_list result_;
};

// Note [Calls without a libtorch GraphTask]
// Of what libtorch's GraphTask and thread_main give a call (Note [The
// bridge runs inside one libtorch GraphTask]), an outermost call that
// computes every node (backward() without inputs=) needs nothing when its
// graph holds only libtorch's own formulas (generated nodes,
// AccumulateGrad, GraphRoot) and no hooks: such nodes never call
// queue_callback, is_checkpoint_valid or a nested backward; their
// needs_input_grad finds no exec_info, as in a GraphTask that computes
// every node; checkpoint validity and the depth would stay as they are;
// and the thread-local state libtorch sets is the caller's own but for the
// grad mode. So such a call, not in anomaly mode and without RecordFunction
// callbacks (a profiler sees a call's nodes inside the Trampoline's event),
// runs straight on this thread, with the grad mode create_graph as
// libtorch's GraphTask sets it and its warnings delayed and replayed as
// libtorch's warning handler does. That saves libtorch's GraphTask, its
// thread_main around the Trampoline and its post-processing, which set and
// restore the whole thread-local state twice each (bench/HISTORY.md,
// "Python bridge": the costs of a one-node call). Code that is not a node can still run inside such
// a call (a saved tensor's unpack hook, a tensor subclass's __torch_dispatch__): a nested backward
// there is an outermost call for libtorch's depth count (the actor engine still counts it,
// Runner::coordinate), and the Python queue_callback queues on the actor engine's call instead
// (actors/torch/python/run_backward.cpp).

/// Runs `task` on this thread without a libtorch GraphTask.
variable_list run_directly(Engine& engine, const std::shared_ptr<TorchGraphTask>& task,
                           actorgrad::detail::ReadyTask&& first, bool create_graph) {
  ::torch::autograd::utils::DelayWarningHandler warnings;
  variable_list result;
  {
    c10::Warning::WarningHandlerGuard delay(&warnings);
    at::AutoGradMode grad_mode(create_graph);
    result = run_graph(engine, task, std::move(first), nullptr);
  }
  warnings.replay_warnings();
  return result;
}

/// Copies the call's exec_info into libtorch's GraphTask, where
/// task_should_compute_output (needs_input_grad) and checkpoint validity
/// read it; the Trampoline itself must run.
void copy_exec_info(const TorchGraphTask& task, GraphTask& stock, const Trampoline& trampoline) {
  using Capture = GraphTask::ExecInfo::Capture;
  task.for_each_exec_info([&stock](const ::torch::autograd::Node& fn, bool needed,
                                   std::span<const actorgrad::detail::ExecInfo::Capture> captures) {
    auto& theirs = stock.exec_info_[const_cast<::torch::autograd::Node*>(&fn)];
    theirs.needed_ = needed;
    if (captures.empty())
      return;
    theirs.captures_ = std::make_unique<std::vector<Capture>>();
    for (const auto& c : captures)
      theirs.captures_->emplace_back(static_cast<int>(c.input_idx), static_cast<int>(c.output_idx));
  });
  stock.exec_info_[const_cast<Trampoline*>(&trampoline)].needed_ = true;
}

} // namespace

Counters& counters() {
  static Counters c;
  return c;
}

void fill_current_nodes_in_graph() {
  if (innermost &&
      ::torch::autograd::get_current_graph_task_exec_info() == &innermost->stock().exec_info_)
    innermost->fill_nodes_in_graph();
}

std::atomic<BridgeEngine*>& all_bridge_engines() {
  static std::atomic<BridgeEngine*> head{nullptr};
  return head;
}

BridgeEngine::BridgeEngine(std::unique_ptr<actorgrad::Engine> engine,
                           ::torch::autograd::Engine& fallback)
  : previous(all_bridge_engines().exchange(this)), engine_(std::move(engine)), fallback_(fallback) {
  // libtorch's check comes first in a nested call (execute_with_graph_task
  // runs before the actor engine sees the call), so it applies the limit.
  max_recursion_depth_ = engine_->config().max_recursion_depth;
}

BridgeEngine::~BridgeEngine() { stop(); }

// Note [Bridge uses]
// A call takes a use of the actor engine for as long as it runs (acquire,
// release); the installation holds one until uninstall (retire). Whoever
// drops the last use destroys the actor engine, when no call runs on it. A
// call that fetched this libtorch Engine before uninstall but arrives after
// the last use was dropped finds 0 and goes to libtorch's base engine; the
// count never rises from 0 again, so the engine is destroyed once.
bool BridgeEngine::acquire() {
  std::int64_t n = uses_.load(std::memory_order_acquire);
  while (n > 0)
    if (uses_.compare_exchange_weak(n, n + 1, std::memory_order_acq_rel, std::memory_order_acquire))
      return true;
  return false;
}

void BridgeEngine::release() {
  if (uses_.fetch_sub(1, std::memory_order_acq_rel) == 1)
    engine_.reset();
}

void BridgeEngine::retire() { release(); }

variable_list BridgeEngine::execute(const edge_list& roots, const variable_list& inputs,
                                    bool keep_graph, bool create_graph, bool accumulate_grad,
                                    const edge_list& outputs) {
  if (!acquire())
    return run_on_stock(roots, inputs, keep_graph, create_graph, accumulate_grad, outputs);
  const Use use{this};
  return run(roots, inputs, keep_graph, create_graph, accumulate_grad, outputs);
}

variable_list BridgeEngine::run_task(const std::shared_ptr<TorchGraphTask>& task,
                                     actorgrad::detail::ReadyTask&& first, const edge_list& roots,
                                     const edge_list& outputs, bool keep_graph) {
  TORCH_CHECK(acquire(), "actorgrad was uninstalled while a distributed backward pass started");
  const Use use{this};
  counters().calls.fetch_add(1, std::memory_order_relaxed);
  return run_in_graph_task(task, std::move(first), roots, outputs, keep_graph,
                           /*create_graph=*/false, /*depth=*/0);
}

void BridgeEngine::thread_on_exception(std::shared_ptr<GraphTask> graph_task,
                                       const std::shared_ptr<::torch::autograd::Node>& fn,
                                       std::exception& e) {
  const bool trampoline = dynamic_cast<const Trampoline*>(fn.get()) != nullptr;
  Engine::thread_on_exception(std::move(graph_task), trampoline ? nullptr : fn, e);
}

variable_list BridgeEngine::run_on_stock(const edge_list& roots, const variable_list& inputs,
                                         bool keep_graph, bool create_graph, bool accumulate_grad,
                                         const edge_list& outputs) {
  counters().delegated.fetch_add(1, std::memory_order_relaxed);
  return fallback_.execute(roots, inputs, keep_graph, create_graph, accumulate_grad, outputs);
}

variable_list BridgeEngine::run(const edge_list& roots, const variable_list& inputs,
                                bool keep_graph, bool create_graph, bool accumulate_grad,
                                const edge_list& outputs) {
  // Inside a node of a call libtorch's engine runs (a delegated one): its
  // reentrant calls stay there, on that call's ready queue.
  const auto* current = ::torch::autograd::get_current_graph_task_exec_info();
  if (current && (!innermost || current != &innermost->stock().exec_info_))
    return run_on_stock(roots, inputs, keep_graph, create_graph, accumulate_grad, outputs);

  // libtorch's argument checks, with its texts.
  variable_list root_grads = inputs;
  detail::validate_outputs(roots, root_grads, nullptr);
  if (accumulate_grad && create_graph) {
    TORCH_WARN_ONCE(
      "Using backward() with create_graph=True will create a reference cycle between the "
      "parameter and its gradient which can cause a memory leak. We recommend using "
      "autograd.grad when creating the graph to avoid this. If you have to use this function, "
      "make sure to reset the .grad fields of your parameters to None after use to break the "
      "cycle and avoid the leak.");
  }
  TORCH_CHECK_VALUE(accumulate_grad || !outputs.empty(), "grad requires non-empty inputs.");
  if (roots.empty()) {
    // libtorch's engine runs a GraphRoot without edges: no node, no
    // callback, and for grad() one undefined gradient per input (Python
    // then returns None for each, or raises its allow_unused error).
    counters().calls.fetch_add(1, std::memory_order_relaxed);
    return variable_list(accumulate_grad ? 0 : outputs.size());
  }

  GraphTaskBase* parent = actorgrad::detail::current_graph_task();
  const int depth = parent ? parent->reentrant_depth + 1 : 0;
  const ExecuteOptions options{keep_graph, create_graph, accumulate_grad};
  auto [task, first] = [&] {
    // libtorch's anomaly mode turns on the task's NaN check.
    std::optional<DetectAnomalyGuard> anomaly;
    if (::torch::autograd::AnomalyMode::is_enabled() &&
        ::torch::autograd::AnomalyMode::should_check_nan())
      anomaly.emplace();
    return TorchGraphTask::create(roots, std::move(root_grads), options, outputs, depth);
  }();
  // A node on another device (CUDA): libtorch's engine runs the whole call.
  if (!task->devices().empty())
    return run_on_stock(roots, inputs, keep_graph, create_graph, accumulate_grad, outputs);

  counters().calls.fetch_add(1, std::memory_order_relaxed);
  // See Note [Calls without a libtorch GraphTask].
  if (!current && !parent && !task->selective() && !task->runs_user_code() &&
      !::torch::autograd::AnomalyMode::is_enabled() && !at::hasCallbacks())
    return run_directly(*engine_, task, std::move(first), create_graph);
  return run_in_graph_task(task, std::move(first), roots, outputs, keep_graph, create_graph, depth);
}

variable_list BridgeEngine::run_in_graph_task(const std::shared_ptr<TorchGraphTask>& task,
                                              actorgrad::detail::ReadyTask&& first,
                                              const edge_list& roots, const edge_list& outputs,
                                              bool keep_graph, bool create_graph, int depth) {
  std::shared_ptr<ReadyQueue> queue;
  if (innermost) {
    queue = innermost->stock().cpu_ready_queue_; // the thread's local_ready_queue
  } else {
    if (!thread_queue)
      thread_queue = std::make_shared<ReadyQueue>();
    queue = thread_queue;
    init_local_ready_queue(queue);
  }
  auto stock = std::make_shared<GraphTask>(keep_graph, create_graph, depth, queue);
  auto trampoline =
    std::make_shared<Trampoline>(*engine_, task, std::move(first), *stock, roots, outputs);
  if (task->selective())
    copy_exec_info(*task, *stock, *trampoline);
  auto future =
    execute_with_graph_task(stock, trampoline, ::torch::autograd::InputBuffer(variable_list()));
  future->wait();
  stock->warning_handler_.replay_warnings();
  if (future->hasError())
    std::rethrow_exception(future->exception_ptr());
  return trampoline->take_result(); // Note [Nothing of a call left on libtorch's threads]
}

} // namespace actorgrad::torch::detail
