#pragma once
/// @file graph_task.h
/// The state of one backward()/grad() call, and the pure algorithms on it.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <memory_resource>
#include <optional>
#include <unordered_map>
#include <vector>

#include "libengine/autograd/edge.h"
#include "libengine/engine/input_buffer.h"
#include "libengine/engine/node_task.h"

namespace actorgrad {

/// How a backward call runs (from the public API's arguments).
struct ExecuteOptions {
  /// retain_graph: keep saved tensors so the graph can run again.
  bool keep_graph = false;
  /// create_graph: run nodes in grad mode so gradients have graphs.
  bool create_graph = false;
  /// backward() (true: leaves accumulate into .grad) or grad() (false: the
  /// gradients of `outputs` are captured and returned).
  bool accumulate_grad = true;
};

/// Selective execution info of one node (PyTorch's ExecInfo), built by
/// init_to_execute and read-only while the task runs.
struct ExecInfo {
  /// Captures the gradient arriving on input `input_idx` as result `output_idx`.
  struct Capture {
    std::uint32_t input_idx;
    std::uint32_t output_idx;
  };
  bool needed = false;
  std::vector<Capture> captures;
  bool should_execute() const { return needed || !captures.empty(); }
};

/// A final callback (queue_callback) waiting for its GraphTask to finish.
/// Pushed lock-free by whichever actor runs the node that queues it.
struct FinalCallback {
  std::function<void()> fn;
  FinalCallback* next = nullptr;
};

/// One backward()/grad() call (PyTorch's GraphTask).
///
/// Note [Node state ownership]
/// The per-node state (dependency count and InputBuffer) is created for
/// every node of the graph by compute_dependencies, before any task runs,
/// and the map is never inserted into afterwards. From then on the state of
/// a node is read and written only by the actor that runs that node (the
/// worker of `node->device()`, or the GraphTask's coordinator for CPU
/// nodes), so no two actors touch the same entry and the map needs no lock.
/// A gradient for a node owned by another actor travels to it as a message.
class GraphTask : public std::enable_shared_from_this<GraphTask> {
public:
  GraphTask(ExecuteOptions options, int reentrant_depth);
  GraphTask(const GraphTask&) = delete;
  GraphTask& operator=(const GraphTask&) = delete;
  ~GraphTask();

  /// Builds a task for `roots` (one edge per root tensor) with `root_grads`,
  /// computing dependencies and, when `outputs` is non-empty, the exec info
  /// for grad(inputs=...) / backward(inputs=...). Returns the task and its
  /// first NodeTask (the single root node, or a GraphRoot). Throws when the
  /// graph has a cycle, naming a node on it.
  static std::pair<std::shared_ptr<GraphTask>, NodeTask>
  create(const edge_list& roots, variable_list root_grads, ExecuteOptions options,
         const edge_list& outputs, int reentrant_depth);

  /// Unique id of this call, for messages and traces.
  const std::uint64_t id;
  const ExecuteOptions options;
  const int reentrant_depth;
  /// Anomaly mode of the caller when the task was created.
  const bool anomaly;

  /// Owner side of a dispatch: adds `grad` into the InputBuffer of
  /// `next.function` at `next.input_nr` and decrements its dependency count.
  /// Returns the node's NodeTask when that count reaches zero and the node
  /// is to run. Call only from the actor that owns `next.function`.
  /// `producer` is the stream of the node that produced `grad` and `ready`
  /// an event recorded there after it (see InputBuffer::add).
  std::optional<NodeTask> accept(const Edge& next, Tensor&& grad,
                                 const std::optional<Stream>& producer = std::nullopt,
                                 const Event* ready = nullptr);

  /// Whether compute_dependencies reached `fn`. Selective execution does
  /// not expand nodes below the inputs' lowest topological_nr, so the root
  /// (when no input is reachable from it) can have next nodes that are not
  /// in the graph; they lead to no input. Read-only: any actor may ask.
  bool in_graph(const Node* fn) const { return state_.count(fn) != 0; }

  /// Exec info of `fn`, or null when every node executes.
  const ExecInfo* exec_info(const Node* fn) const;
  bool selective() const { return !exec_info_.empty(); }

  /// Stores a captured gradient (slots are disjoint: no two nodes write one).
  void capture(std::uint32_t output_idx, Tensor grad) { captured_vars_[output_idx] = std::move(grad); }
  /// The grad() results, once the task completed.
  variable_list take_captured() { return std::move(captured_vars_); }

  // -- completion and errors ------------------------------------------------

  /// Ready NodeTasks plus gradients in flight between actors; the task is
  /// complete when it reaches zero. Incremented before a task or message is
  /// created, decremented after it is handled, so it never passes through
  /// zero early.
  std::atomic<std::int64_t> outstanding_tasks{0};

  /// Records `e` if it is the first error (first error wins). Returns true if it was.
  bool set_error(std::exception_ptr e);
  bool has_error() const { return has_error_.load(std::memory_order_acquire); }
  /// The first error (read after completion).
  std::exception_ptr error() const { return error_; }

  /// Queues `fn` to run when the task completes (lock-free; any actor).
  void queue_callback(std::function<void()> fn);
  /// Runs the queued callbacks in order, including ones they queue.
  void run_final_callbacks();

  /// Ends a completed task: rethrows the first error, else makes the
  /// caller's current streams wait for the leaf streams (so the gradients
  /// are safe to use on them), runs the final callbacks and returns the
  /// captured gradients (PyTorch's exec_post_processing).
  variable_list finish();

  /// The streams of the nodes that end the graph (AccumulateGrad and nodes
  /// whose input gradients are captured): where the results are written.
  const std::vector<Stream>& leaf_streams() const { return leaf_streams_; }

  /// Nodes counted by compute_dependencies (for tests and traces).
  std::size_t num_nodes() const { return state_.size(); }
  /// The distinct non-CPU devices whose actors run nodes of this task.
  const std::vector<Device>& devices() const { return devices_; }

  /// The executor running this task: a backward call made inside one of
  /// its nodes (a reentrant call) defaults to it.
  class Executor* executor = nullptr;

  /// Opaque state of the executor running this task (the actor engine keeps
  /// the coordinator's and workers' handles here). Set before the first
  /// task runs, read-only afterwards.
  std::shared_ptr<void> executor_data;

private:
  struct NodeState {
    int dependencies = 0;
    InputBuffer buffer;
  };

  void compute_dependencies(Node* root, std::uint64_t min_topo_nr);
  void note_leaf_stream(const Node* fn);
  void stash_caller_streams(const variable_list& root_grads);
  void sync_caller_streams() const;
  void init_to_execute(Node& root, const edge_list& outputs, std::uint64_t min_topo_nr);

  void note_device(const Node* fn);

  /// Backs state_: its entries are only added while the task is built and
  /// all go with the task, so a bump allocator replaces a malloc and a free
  /// per node. It starts in the task itself, so that a small graph (a
  /// reentrant call's) allocates nothing. Kept small: a task of 1 KiB or
  /// more would leave glibc's thread cache, and each such allocation
  /// consolidates the fast bins (hundreds of instructions).
  std::array<std::byte, 512> state_inline_;
  std::pmr::monotonic_buffer_resource state_memory_{state_inline_.data(), state_inline_.size()};
  std::pmr::unordered_map<const Node*, NodeState> state_{&state_memory_};

  std::unordered_map<const Node*, ExecInfo> exec_info_;
  std::vector<Device> devices_;
  std::vector<Stream> leaf_streams_;
  /// The caller's current stream of each device the task touches, when it
  /// was created (PyTorch's caller_current_streams_).
  std::vector<Stream> caller_streams_;
  variable_list captured_vars_;
  std::atomic<bool> first_error_claimed_{false};
  std::atomic<bool> has_error_{false};
  std::exception_ptr error_;
  std::atomic<FinalCallback*> callbacks_{nullptr};
  /// Keeps a GraphRoot alive for the task's lifetime.
  std::shared_ptr<Node> graph_root_;
};

/// The GraphTask whose node runs on this thread right now (null outside
/// a node), for queue_callback and for reentrant calls.
GraphTask* current_graph_task();

/// Sets current_graph_task() for a scope.
class CurrentGraphTaskGuard {
public:
  explicit CurrentGraphTaskGuard(GraphTask* t);
  ~CurrentGraphTaskGuard();
  CurrentGraphTaskGuard(const CurrentGraphTaskGuard&) = delete;
  CurrentGraphTaskGuard& operator=(const CurrentGraphTaskGuard&) = delete;

private:
  GraphTask* prev_;
};

/// `Variable._execution_engine.queue_callback`: runs `fn` when the backward
/// call whose node is running on this thread completes. Throws outside one.
void queue_callback(std::function<void()> fn);

} // namespace actorgrad
