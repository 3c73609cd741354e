#pragma once
/// @file basic_graph_task.h
/// One backward()/grad() call over a graph type G (see Note [Graph interface]).
/// The member definitions are in basic_graph_task_impl.h, included where a
/// graph type is instantiated.
/// Internal (libengine/engine/detail/, not installed).

#include <algorithm>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "actorgrad/libengine/engine/detail/exec_info.h"
#include "actorgrad/libengine/engine/detail/graph_interface.h"
#include "actorgrad/libengine/engine/detail/node_table.h"

namespace actorgrad::detail {

/// Whether G keeps a NodeHint in its nodes (Note [Node table hints]).
template <GraphTraits G>
inline constexpr bool has_hints_v = requires(const typename G::node& n) {
  G::table_hint(n);
};

/// Whether G keeps a LaneHint for its nodes (Note [Lanes that stay] in
/// actors/detail/cpu_lanes.h).
template <GraphTraits G>
inline constexpr bool has_lane_hints_v = requires(const typename G::node& n) {
  G::lane_hint(n);
};

/// One backward()/grad() call (PyTorch's GraphTask) over graph type G.
///
/// Note [Node state ownership]
/// The per-node state (dependency count, exec info, input buffer) is made for
/// every node of the graph by compute_dependencies, before any task runs,
/// and the map is never inserted into afterwards. From then on the state of
/// a node is read and written only by the actor that runs that node (the
/// worker of its device, or the GraphTask's CPU queue for CPU nodes), so no
/// two actors touch the same entry and the map needs no lock. A gradient
/// for a node owned by another actor travels to it as a message. The one
/// write a lookup can make, building the table's index after a node's hint
/// was rewritten (Note [Node table hints]), is done at creation for a task
/// with devices, whose nodes several actors look up; a CPU-only task's
/// lookups all come from its one CPU queue, one at a time.
template <GraphTraits G>
class BasicGraphTask final : public GraphTaskBase {
public:
  using node = typename G::node;
  using edge = typename G::edge;
  using value = typename G::value;
  using value_list = typename G::value_list;
  using edge_list = std::vector<edge>;

  BasicGraphTask(ExecuteOptions options, int reentrant_depth)
    : GraphTaskBase(options, reentrant_depth) {}

  /// Builds a task for `roots` (one edge per root) with `root_grads`,
  /// computing dependencies and, when `outputs` is non-empty, the exec info
  /// for grad(inputs=...) / backward(inputs=...). Returns the task and its
  /// first ready task (the single root node, or a graph root). Throws when
  /// the graph has a cycle, naming a node on it.
  static std::pair<std::shared_ptr<BasicGraphTask>, ReadyTask>
  create(const edge_list& roots, value_list root_grads, ExecuteOptions options,
         const edge_list& outputs, int reentrant_depth);

  /// Builds a task whose roots come while it runs (libtorch's DistEngine:
  /// Note [Roots that arrive later]). Its dependencies are counted, as
  /// from one root, from `root` (null: none; several roots: their graph
  /// root) and from each node of `later` (nodes without inputs, e.g. a
  /// process's send functions), which become ready one at a time
  /// (later_root) and count as outstanding work until they ran, so the
  /// task ends only when every one came. `arrived`: the node of `later`
  /// that is the first task (null: the root is). `outputs` are captured as
  /// for grad(); the nodes of `run_too` run as backward(inputs=)'s do (and
  /// so every node on a path to them). Returns the task and its first task.
  static std::pair<std::shared_ptr<BasicGraphTask>, ReadyTask>
  create_open(const edge* root, value_list root_grads, std::span<const edge> later,
              const node* arrived, ExecuteOptions options, const edge_list& outputs,
              std::span<const edge> run_too);
  /// The ready task of `fn`, a node of create_open's `later` that came: its
  /// outstanding work was counted at creation. Any thread; send it to the
  /// coordinator (Engine::add_root).
  ReadyTask later_root(std::shared_ptr<node> fn);

  // -- GraphTaskBase ------------------------------------------------------------
  void run(ReadyTask& t, Dispatch& to) override { run_with(t, t.graph_task, to); }
  void run_all_here(ReadyTask&& first) override;
  bool run_here_until_branched(ReadyTask&& first, ReadyHeap& rest, std::size_t branch) override;
  void accept_sent(SentGrad& g, Dispatch& to) override;
  Device device_of(const void* n) const override { return G::device(*static_cast<const node*>(n)); }
  NodeInfo describe(const void* n) const override {
    return n ? G::describe(*static_cast<const node*>(n)) : NodeInfo{};
  }
  void spread_cpu_nodes() override;
  bool may_spread() const override {
    if constexpr (requires(const node& n) { G::needs_call_thread(n); })
      return !selective_;
    return true;
  }
  bool runs_on_coordinator(const ReadyTask& t) const override {
    return static_cast<const NodeState*>(t.slot)->exec.on_coordinator();
  }
  unsigned last_lane(const ReadyTask& t) const override {
    if constexpr (has_lane_hints_v<G>)
      return G::lane_hint(node_of(t)).load(std::memory_order_relaxed);
    return 0;
  }
  bool set_last_lane(const ReadyTask& t, unsigned lane) override {
    if constexpr (has_lane_hints_v<G>) {
      LaneHint& hint = G::lane_hint(node_of(t));
      const auto last = hint.load(std::memory_order_relaxed);
      if (last == lane + 1)
        return false; // no write: the node's line stays shared
      hint.store(static_cast<std::uint16_t>(lane + 1), std::memory_order_relaxed);
      return last != 0;
    }
    return false;
  }
  /// The caller's thread-local state, kept by spread_cpu_nodes for a graph
  /// type that sets it around nodes run on other threads
  /// (G::capture_caller_locals); null otherwise.
  const std::shared_ptr<void>& caller_locals() const { return caller_locals_; }

  // -- the steps of run(), for executors that route outputs themselves ---------

  /// The node of a ready task of this GraphTask.
  static node& node_of(const ReadyTask& t) { return *static_cast<node*>(t.node.get()); }
  /// Runs the node of `t` (PyTorch's evaluate_function without the
  /// dispatch): exec-info captures, the node's call protocol (G::call_function),
  /// release of saved variables unless keep_graph, the anomaly NaN check.
  /// Returns one gradient per next edge, or none when there is nothing to
  /// dispatch. Errors are rethrown naming the node.
  value_list evaluate(ReadyTask& t);
  /// Owner side of a dispatch: adds `grad` into the input buffer of
  /// `next`'s node and decrements its dependency count. Returns the node's
  /// ready task when that count reaches zero and the node is to run. Call
  /// only from the actor that owns the node. `source` is where `grad` was
  /// produced (what accumulation waits for); `self` is this task.
  std::optional<ReadyTask> accept(const std::shared_ptr<GraphTaskBase>& self, const edge& next,
                                  value&& grad, const typename G::source& source);

  // -- selective execution and results -----------------------------------------

  /// Whether compute_dependencies reached `fn`. Selective execution does
  /// not expand nodes below the inputs' lowest topological_nr, so the root
  /// can have next nodes that are not in the graph; they lead to no input.
  bool in_graph(const node* fn) const { return state_.find(key_of(*fn)) != nullptr; }
  /// Whether the call runs only the nodes that lead to its inputs
  /// (grad(inputs=...) or backward(inputs=...)).
  bool selective() const { return selective_; }
  /// Calls `f(fn, needed, captures)` for every node that selective
  /// execution runs or captures at (the torch bridge hands them to
  /// libtorch's GraphTask, where needs_input_grad reads them). Only for a
  /// graph type whose table is keyed by the nodes themselves.
  template <class F>
  void for_each_exec_info(F&& f) const requires(!has_hints_v<G>) {
    state_.for_each([&](const void* key, const NodeState& s) {
      if (s.exec.should_execute())
        f(*static_cast<const node*>(key), s.exec.needed(), captures_of(s));
    });
  }
  /// Nodes counted by compute_dependencies (for tests and traces).
  std::size_t num_nodes() const { return state_.size(); }
  /// Per-call stream bookkeeping (leaf streams, caller streams).
  const typename G::task_streams& streams() const { return streams_; }
  /// Whether a node of the graph may run code other than the graph type's
  /// own (G::runs_user_code; false for a graph type without it).
  bool runs_user_code() const { return runs_user_code_; }

  /// Ends a completed task: rethrows the first error, else makes the
  /// caller's streams wait for the leaf streams, runs the final callbacks
  /// and returns the captured gradients (PyTorch's exec_post_processing).
  value_list finish();

private:
  // Note [Exec info in the node table]
  // A grad(inputs=...) call looks up every node's exec info when it is
  // built and again for every gradient and every node run. Kept in a map of
  // its own (as PyTorch does), that cost an allocation and a hashed lookup
  // a node, about 3,700 instructions for a call of 3 nodes, more than the
  // rest of the call. So a node's ExecInfo is 4 bytes of its NodeState,
  // found by the lookup the scheduler makes anyway, and its captures are
  // one list of the task, grouped by node. Only the nodes that
  // compute_dependencies reached, and the inputs' nodes, have a state: an
  // input that no path from the roots reaches gets no gradient.
  struct NodeState {
    int dependencies = 0;
    ExecInfo exec;
    typename G::input_buffer buffer;
  };
  /// The captures of `s`'s node, in the order of the call's inputs.
  std::span<const ExecInfo::Capture> captures_of(const NodeState& s) const {
    if (s.exec.first_capture() == 0)
      return {};
    const ExecInfo::Capture* begin = captures_.data() + (s.exec.first_capture() - 1);
    const ExecInfo::Capture* end = captures_.data() + captures_.size();
    return {begin,
            std::find_if(begin, end, [&s](const ExecInfo::Capture& c) { return c.owner != &s; })};
  }

  /// compute_dependencies from `root` toward `outputs` and `run_too`, then
  /// the captures and the caller's streams: what create and create_open share.
  void count_from(node* root, const edge_list& outputs, std::span<const edge> run_too,
                  const value_list& root_grads);
  /// The first task of `self`, a call from its single root `e` with `root_grads`.
  static ReadyTask root_task(const std::shared_ptr<BasicGraphTask>& self, const edge& e,
                             value_list&& root_grads);
  /// Numbers the nodes the call reaches and counts their dependencies; with
  /// `outputs` (a call with inputs) or `run_too` also marks the nodes it
  /// needs, not searching below `min_topo_nr`. Returns the bound it kept (0
  /// when the graph broke topological order: then it searched everything).
  /// `hinted`: number the nodes through their hints, when G has them.
  std::uint64_t compute_dependencies(node* root, const edge_list& outputs,
                                     std::span<const edge> run_too, std::uint64_t min_topo_nr,
                                     bool hinted = true);
  /// compute_dependencies' walk for a call without inputs; true when an
  /// edge broke topological order.
  bool count_all(node* root);
  /// Its walk for a call with inputs (Note [Dependencies and exec info in
  /// one walk]); true when an edge broke topological order.
  bool count_toward(const edge_list& outputs, std::span<const edge> run_too, node* root,
                    std::uint64_t min_topo_nr);
  /// Counts the edge from `fn` to `next`: next's state, and whether this
  /// made it. Notes in `topo_order_broken` an edge that does not descend.
  std::pair<NodeState*, bool> count_edge(const node& fn, node& next, bool& topo_order_broken) {
    if (G::topological_nr(next) >= G::topological_nr(fn))
      topo_order_broken = true;
    auto made = state_.try_emplace(key_of(next));
    made.first->dependencies += 1;
    return made;
  }
  /// Lists a grad call's captures by node, once the states are numbered.
  void capture_outputs(const edge_list& outputs);
  /// Notes `fn`'s device, whether it runs user code and, when it has no
  /// next edges, its leaf streams. Forced inline: called from two walks, it
  /// stayed a call in torch_graph.cpp (48 instructions a node of libtorch's).
  [[gnu::always_inline]] void note_node(const node& fn, std::size_t num_outputs) {
    if (const Device d = G::device(fn); !d.is_cpu()) [[unlikely]]
      if (std::find(devices_.begin(), devices_.end(), d) == devices_.end())
        devices_.push_back(d);
    if constexpr (requires { G::runs_user_code(fn); })
      runs_user_code_ = runs_user_code_ || G::runs_user_code(fn);
    if (num_outputs == 0)
      streams_.note_leaf(fn);
  }
  /// Adds `grad` to `fn`'s buffer; returns its state when `fn` became
  /// ready. Inlined: it runs once per gradient (errors stay out of line).
  [[gnu::always_inline]] NodeState* add_input(node& fn, std::uint32_t input_nr, value&& grad,
                                              const typename G::source& source);
  /// One more input of `fn` (state `s`) arrived: whether the node is
  /// skipped by selective execution, waits for more, or is complete.
  /// Throws for an input the node lacks.
  enum class Arrival { skipped, waiting, complete };
  [[gnu::always_inline]] Arrival arrive(node& fn, NodeState& s, std::uint32_t input_nr);
  /// add_input for the state `s` of `fn`, already found.
  [[gnu::always_inline]] NodeState* add_input_to(node& fn, NodeState& s, std::uint32_t input_nr,
                                                 value&& grad, const typename G::source& source);
  ReadyTask make_ready(std::shared_ptr<GraphTaskBase> self, std::shared_ptr<void> handle,
                       const node& fn, NodeState* s) const {
    return {std::move(self), std::move(handle), s, {G::sequence_nr(fn), reentrant_depth}};
  }
  // run() and route() are templates over the dispatch so that
  // run_all_here's LocalDispatch (final) is called without a virtual call.
  /// Runs `t`'s node and routes its outputs; the tasks made ready hold
  /// `self` (see run_all_here).
  template <class D>
  [[gnu::always_inline]] void run_with(ReadyTask& t, const std::shared_ptr<GraphTaskBase>& self,
                                       D& to);
  /// run_all_here's loop over `heap`, which stops (returning false) before
  /// a node once `stop(heap)` holds. Forced inline: in a function of its
  /// own, GCC no longer inlines the heap's pop and the task's destructor
  /// into the loop (80 instructions a node more on the chain under
  /// callgrind, bench_chain_driver).
  template <class Stop>
  [[gnu::always_inline]] bool run_here(ReadyHeap& heap, Stop stop);
  /// Whether ready node `head` heads `branch` nodes or more of its own
  /// (Note [Spreading a call where it branches]).
  bool heads_branch(node& head, std::size_t branch);
  template <class D>
  void route(const std::shared_ptr<GraphTaskBase>& self, const node& from,
             const NodeState& from_state, std::uint32_t output_nr, const edge& next, value&& grad,
             D& to);
  /// route() for a spread task (Note [Parallel CPU nodes]): a node one
  /// gradient reaches is the delivering thread's, a joining node the
  /// coordinator's. Out of line: the one-thread path stays as it was.
  template <class D>
  [[gnu::noinline]] void route_spread(const std::shared_ptr<GraphTaskBase>& self, const node& from,
                                      const NodeState& from_state, std::uint32_t output_nr,
                                      const edge& next, value&& grad, D& to);
  /// add_input for a spread task: a joining node's gradients wait in
  /// waiting_ until the last one came, then add up in their InputOrder.
  [[gnu::noinline]] NodeState* add_input_in_order(node& fn, std::uint32_t input_nr, value&& grad,
                                                  const typename G::source& source,
                                                  InputOrder order);
  /// add_input_in_order for a joining node whose state `s` was found.
  NodeState* add_joining_input(node& fn, NodeState& s, std::uint32_t input_nr, value&& grad,
                               const typename G::source& source, InputOrder order);
  value_list evaluate_node(node& fn, NodeState& s);
  /// evaluate_node's part for selective execution: captures the node's
  /// inputs (after the tensor pre-hooks when it only captures) and returns
  /// whether it runs. Out of line: it would make evaluate_node, which
  /// every node runs, bigger than GCC inlines into (23 instructions a node
  /// on the chain when it was inline).
  [[gnu::noinline]] bool capture_inputs(node& fn, const NodeState& s, value_list& inputs);

  /// `fn`'s key in state_: its hint when G keeps one.
  static decltype(auto) key_of(const node& fn) {
    if constexpr (has_hints_v<G>)
      return G::table_hint(fn);
    else
      return static_cast<const void*>(&fn);
  }

  /// See Note [Node table] and Note [Node state ownership].
  NodeTable<NodeState> state_;

  /// Set by capture_outputs (see selective()).
  bool selective_ = false;
  /// Every node's captures, grouped by node (see Note [Exec info in the
  /// node table]). A grad call with up to 4 inputs keeps them in the task's
  /// own block, with no allocation.
  boost::container::small_vector<ExecInfo::Capture, 4> captures_;
  typename G::task_streams streams_;
  /// Set by compute_dependencies (see runs_user_code()).
  bool runs_user_code_ = false;
  value_list captured_;
  /// A spread task's gradients of joining nodes that wait for the node's
  /// last one (add_input_in_order). Only the coordinator, which owns
  /// joining nodes, touches it.
  struct WaitingInput {
    InputOrder order;
    std::uint32_t input_nr;
    value grad;
    typename G::source source;
  };
  std::unordered_map<const NodeState*, std::vector<WaitingInput>> waiting_;
  /// See caller_locals().
  std::shared_ptr<void> caller_locals_;
  /// Keeps a graph root alive for the task's lifetime.
  std::shared_ptr<node> graph_root_;
};

} // namespace actorgrad::detail
