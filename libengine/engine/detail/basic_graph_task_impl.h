#pragma once
/// @file basic_graph_task_impl.h
/// The algorithms of a backward call, over any graph type (see Note [Graph
/// interface]). Included only where a graph type is instantiated
/// (explicit instantiation), so the rest of the build does not compile them.
/// Over 300 lines on purpose: these are PyTorch's GraphTask algorithms
/// (create, compute_dependencies with init_to_execute, accept, evaluate), kept
/// in one place so they can be read against engine.cpp side by side.
/// Internal (libengine/engine/detail/, not installed).

#include <algorithm>
#include <limits>
#include <sstream>
#include <string>
#include <unordered_map>

#include "actorgrad/libengine/engine/detail/basic_graph_task.h"
#include "actorgrad/libengine/engine/detail/current_exception_or_unwind.h"
#include "actorgrad/libengine/engine/detail/local_dispatch.h"
#include "actorgrad/libengine/engine/detail/recycling_allocator.h"
#include "actorgrad/libengine/engine/detail/scratch_vector.h"
#include "actorgrad/libengine/engine/errors.h"

namespace actorgrad::detail {

template <GraphTraits G>
std::string node_label(const typename G::node& n) {
  NodeInfo info = G::describe(n);
  return info.name + " (sequence_nr " + std::to_string(info.sequence_nr) + ")";
}

/// Iterative DFS from `root`; returns the nodes of one cycle, or nothing.
template <GraphTraits G>
std::vector<const typename G::node*> find_cycle(const typename G::node* root) {
  using node = typename G::node;
  enum class Color : std::uint8_t { grey, black };
  std::unordered_map<const node*, Color> color;
  std::vector<std::pair<const node*, std::size_t>> stack{{root, 0}};
  color[root] = Color::grey;
  while (!stack.empty()) {
    auto& [fn, next] = stack.back();
    if (next == G::num_outputs(*fn)) {
      color[fn] = Color::black;
      stack.pop_back();
      continue;
    }
    const node* child = G::target(G::next_edge(*fn, next++));
    if (!child)
      continue;
    auto it = color.find(child);
    if (it == color.end()) {
      color[child] = Color::grey;
      stack.emplace_back(child, 0);
    } else if (it->second == Color::grey) {
      std::vector<const node*> cycle;
      auto pos =
        std::find_if(stack.begin(), stack.end(), [&](const auto& f) { return f.first == child; });
      for (; pos != stack.end(); ++pos)
        cycle.push_back(pos->first);
      return cycle;
    }
  }
  return {};
}

/// Whether graph type G says an edit may have broken topological order.
template <GraphTraits G>
bool topological_order_edited() {
  if constexpr (requires { G::topological_order_edited(); })
    return G::topological_order_edited();
  else
    return false;
}

/// add_input's errors, out of its way.
template <GraphTraits G>
[[noreturn, gnu::cold, gnu::noinline]] void throw_no_dependency(const typename G::node& fn) {
  throw EngineError("dependency not found for " + node_label<G>(fn));
}

template <GraphTraits G>
[[noreturn, gnu::cold, gnu::noinline]] void throw_no_such_input(const typename G::node& fn,
                                                                std::uint32_t input_nr) {
  throw EngineError("gradient sent to input " + std::to_string(input_nr) + " of " +
                    node_label<G>(fn) + ", which has " + std::to_string(G::num_inputs(fn)) +
                    " inputs");
}

template <GraphTraits G>
std::pair<std::shared_ptr<BasicGraphTask<G>>, ReadyTask>
BasicGraphTask<G>::create(const edge_list& roots, value_list root_grads, ExecuteOptions options,
                          const edge_list& outputs, int reentrant_depth) {
  if (roots.empty())
    throw EngineError("backward called with no roots");
  if (root_grads.size() != roots.size())
    throw EngineError("backward: " + std::to_string(roots.size()) + " roots but " +
                      std::to_string(root_grads.size()) + " root gradients");
  // The task's block comes from this thread's kept ones when it has one
  // (see RecyclingAllocator): a call then makes no malloc of its own.
  auto task = std::allocate_shared<BasicGraphTask>(RecyclingAllocator<BasicGraphTask>{}, options,
                                                   reentrant_depth);
  // With one root the root node itself is the first task (no graph root).
  if (roots.size() == 1) {
    task->count_from(G::target(roots[0]), outputs, {}, root_grads);
    ReadyTask first = root_task(task, roots[0], std::move(root_grads));
    return {std::move(task), std::move(first)};
  }
  std::shared_ptr<node> root = G::make_graph_root(roots, root_grads);
  task->graph_root_ = root;
  task->count_from(root.get(), outputs, {}, root_grads);
  G::order_root_grads(root_grads);
  ReadyTask first = task->make_ready(task, root, *root, task->state_.find(key_of(*root)));
  return {std::move(task), std::move(first)};
}

// Note [Roots that arrive later]
// libtorch's DistEngine runs a process's whole share of a distributed
// backward pass as one GraphTask: its dependencies are counted once from a
// graph root that reaches the call's roots (none in a process the pass
// reaches by RPC) and every send function of the context, each send
// function counts as outstanding work, and a gradient that arrives by RPC
// later queues its send function as a ready task of that same GraphTask.
// So a node that two send functions reach waits for both and runs once,
// with their gradients summed, and the task ends when every send function
// ran. create_open builds such a task: the walk's root (walk_root, never
// run) reaches `root` and each node of `later`; each later node's count of
// one from walk_root is never decremented (it becomes ready by arriving,
// not by its inputs), and expect_later_roots counts each as outstanding
// work. later_root makes a node's ready task when it comes, on any thread
// (the table is shared, so lookups build nothing); the engine sends it to
// the task's coordinator as a msg::Task (Engine::add_root), which queues
// it as any ready task: the coordinator owns every CPU node, the count was
// taken at creation, so completion stays as Note [Completion without a
// lock] says. A failed task would wait for ever for roots that its error
// keeps from coming: its coordinator stops once only those are left
// (GraphTaskBase::stranded), and a root that still comes later is drained
// as a straggler without running.
template <GraphTraits G>
std::pair<std::shared_ptr<BasicGraphTask<G>>, ReadyTask>
BasicGraphTask<G>::create_open(const edge* root, value_list root_grads, std::span<const edge> later,
                               const node* arrived, ExecuteOptions options,
                               const edge_list& outputs, std::span<const edge> run_too) {
  if (!root && !arrived)
    throw EngineError("backward called with no roots");
  auto task = std::allocate_shared<BasicGraphTask>(RecyclingAllocator<BasicGraphTask>{}, options,
                                                   /*reentrant_depth=*/0);
  edge_list reach(later.begin(), later.end());
  if (root)
    reach.push_back(*root);
  std::shared_ptr<node> walk_root = G::make_graph_root(reach, {});
  task->graph_root_ = walk_root; // never runs; keeps the nodes it reaches for the walk
  task->count_from(walk_root.get(), outputs, run_too, root_grads);
  task->state_.share(); // later_root looks up from other threads
  task->expect_later_roots(static_cast<std::int64_t>(later.size()) - (arrived ? 1 : 0));
  if (root)
    return {task, root_task(task, *root, std::move(root_grads))};
  for (const edge& e : later)
    if (G::target(e) == arrived)
      return {task, task->make_ready(task, G::target_handle(e), *arrived,
                                     task->state_.find(key_of(*arrived)))};
  throw EngineError("backward: the node that arrived is not one of the later roots");
}

template <GraphTraits G>
ReadyTask BasicGraphTask<G>::later_root(std::shared_ptr<node> fn) {
  NodeState* s = state_.find(key_of(*fn));
  if (!s)
    throw EngineError("a root that arrived later is not one the task counted: " +
                      detail::node_label<G>(*fn));
  later_root_came();
  return make_ready(shared_from_this(), std::move(fn), *fn, s);
}

template <GraphTraits G>
void BasicGraphTask<G>::count_from(node* root, const edge_list& outputs,
                                   std::span<const edge> run_too, const value_list& root_grads) {
  std::uint64_t min_topo_nr = 0;
  const bool toward = !outputs.empty() || !run_too.empty();
  if (toward && !topological_order_edited<G>()) {
    min_topo_nr = std::numeric_limits<std::uint64_t>::max();
    for (const auto& e : outputs)
      if (const node* fn = G::target(e))
        min_topo_nr = std::min(min_topo_nr, G::topological_nr(*fn));
    for (const auto& e : run_too)
      if (const node* fn = G::target(e))
        min_topo_nr = std::min(min_topo_nr, G::topological_nr(*fn));
  }
  compute_dependencies(root, outputs, run_too, min_topo_nr);
  if (toward)
    capture_outputs(outputs);
  streams_.stash(devices_, root_grads);
}

template <GraphTraits G>
ReadyTask BasicGraphTask<G>::root_task(const std::shared_ptr<BasicGraphTask>& self, const edge& e,
                                       value_list&& root_grads) {
  node& root = *G::target(e);
  NodeState& root_state = *self->state_.find(key_of(root));
  const std::uint32_t input_nr = G::input_nr(e);
  if (input_nr >= G::num_inputs(root))
    throw EngineError("backward: root edge points at input " + std::to_string(input_nr) + " of " +
                      node_label<G>(root) + ", which has " + std::to_string(G::num_inputs(root)) +
                      " inputs");
  root_state.buffer = G::make_root_buffer(root, input_nr, std::move(root_grads));
  return self->make_ready(self, G::target_handle(e), root, &root_state);
}

template <GraphTraits G>
std::uint64_t BasicGraphTask<G>::compute_dependencies(node* root, const edge_list& outputs,
                                                      std::span<const edge> run_too,
                                                      std::uint64_t min_topo_nr, bool hinted) {
  // Note [Cycles in hand-built graphs]
  // Graphs built by ops cannot have cycles: an edge always points at a node
  // with a smaller topological_nr. A graph edited by hand can; then some
  // edge does not decrease topological_nr. Only in that case do we pay for
  // a full cycle search (and, without a cycle, drop the topological
  // pruning, whose numbers are stale).
  devices_.clear();
  runs_user_code_ = false;
  streams_ = {};
  // The longest path below the root has topological_nr + 1 distinct nodes:
  // a lower bound on the graph's size that saves the table most rehashes.
  state_.reset(G::topological_nr(*root) + 1, has_hints_v<G> && hinted);
  const bool topo_order_broken = outputs.empty() && run_too.empty()
                                   ? count_all(root)
                                   : count_toward(outputs, run_too, root, min_topo_nr);
  // Several actors look states up when the task has devices.
  if (!state_.finish_numbering(!devices_.empty())) // see Note [Node table hints]
    return compute_dependencies(root, outputs, run_too, min_topo_nr, false);
  if (!topo_order_broken)
    return min_topo_nr;
  auto cycle = find_cycle<G>(root);
  if (!cycle.empty()) {
    std::ostringstream msg;
    msg << "the backward graph has a cycle: ";
    for (const node* n : cycle)
      msg << node_label<G>(*n) << " -> ";
    msg << node_label<G>(*cycle.front());
    throw EngineError(msg.str());
  }
  // The numbers are stale, so the pruning may have cut paths: search it all.
  return min_topo_nr > 0 ? compute_dependencies(root, outputs, run_too, 0, hinted) : 0;
}

template <GraphTraits G>
bool BasicGraphTask<G>::count_all(node* root) {
  state_.try_emplace(key_of(*root));
  std::vector<node*> queue = take_scratch<node*>();
  queue.push_back(root);
  bool topo_order_broken = false;
  while (!queue.empty()) {
    node* fn = queue.back();
    queue.pop_back();
    const std::size_t n = G::num_outputs(*fn);
    note_node(*fn, n);
    for (std::size_t i = 0; i < n; ++i)
      if (node* next = G::target(G::next_edge(*fn, i)))
        if (auto [s, inserted] = count_edge(*fn, *next, topo_order_broken); inserted)
          queue.push_back(next);
  }
  give_back_scratch(std::move(queue));
  return topo_order_broken;
}

template <GraphTraits G>
bool BasicGraphTask<G>::count_toward(const edge_list& outputs, std::span<const edge> run_too,
                                     node* root, std::uint64_t min_topo_nr) {
  // Note [Dependencies and exec info in one walk]
  // A call with inputs runs only the nodes on a path from the root to an
  // input (PyTorch's exec_info, which its init_to_execute builds with a
  // second search of the graph after compute_dependencies). Here one
  // depth-first walk does both: it counts each edge when it meets it, and
  // when it leaves a node it marks it needed if a child executes (is needed,
  // or captures). For that it must know the inputs' nodes when it meets
  // them, so they are numbered first, marked: needed (backward with
  // inputs), or capturing (grad: a placeholder capture, the list being made
  // by capture_outputs once states stop moving). Hence whether the walk met
  // a node is its `seen` bit, not its numbering. On a graph of 10^6 nodes
  // the second search cost as much as the first, a cache miss a node.
  for (const edge& e : outputs) {
    const node* out = G::target(e);
    if (!out)
      continue;
    ExecInfo& exec = state_.try_emplace(key_of(*out)).first->exec;
    if (options.accumulate_grad) {
      exec.set_needed();
    } else {
      exec.set_first_capture(1);
      streams_.note_leaf(*out);
    }
  }
  for (const edge& e : run_too) // Note [Roots that arrive later]
    if (const node* out = G::target(e))
      state_.try_emplace(key_of(*out)).first->exec.set_needed();
  // The root is needed as any node is (PyTorch's init_to_execute adds it
  // not needed): when it is an input of backward(inputs=), or a child
  // executes. Else it only captures, or does nothing: grad(x, x) must not
  // run x's AccumulateGrad, nor a root leading to no input its hooks.
  NodeState* root_state = state_.try_emplace(key_of(*root)).first;
  root_state->exec.set_seen();
  note_node(*root, G::num_outputs(*root));
  if (G::topological_nr(*root) < min_topo_nr)
    return false;

  // A frame leaves its node without reading it again: on a long chain the
  // walk goes down the whole graph before it comes back up, and by then
  // the node is out of the cache (its state, found by number, is not).
  struct Frame {
    node* fn;
    std::uint32_t state; // fn's state's number (addresses move as states are added)
    std::uint32_t edges; // G::num_outputs(*fn)
    std::uint32_t next = 0;
    bool child_executes = false;
  };
  auto frame_of = [this](node* fn, NodeState* s) {
    return Frame{fn, state_.number_of(s), static_cast<std::uint32_t>(G::num_outputs(*fn))};
  };
  std::vector<Frame> stack = take_scratch<Frame>();
  stack.push_back(frame_of(root, root_state));
  bool topo_order_broken = false;
  while (!stack.empty()) {
    Frame& frame = stack.back();
    if (frame.next < frame.edges) {
      node* next = G::target(G::next_edge(*frame.fn, frame.next++));
      if (!next)
        continue;
      NodeState* s = count_edge(*frame.fn, *next, topo_order_broken).first;
      if (s->exec.seen()) {
        frame.child_executes = frame.child_executes || s->exec.should_execute();
        continue;
      }
      s->exec.set_seen();
      note_node(*next, G::num_outputs(*next));
      // Below the cut no node leads to an input (nor is one).
      if (G::topological_nr(*next) >= min_topo_nr)
        stack.push_back(frame_of(next, s)); // invalidates `frame`
      continue;
    }
    ExecInfo& exec = state_.at(frame.state).exec;
    if (frame.child_executes)
      exec.set_needed();
    stack.pop_back();
    if (!stack.empty() && exec.should_execute())
      stack.back().child_executes = true;
  }
  give_back_scratch(std::move(stack));
  return topo_order_broken;
}

template <GraphTraits G>
void BasicGraphTask<G>::capture_outputs(const edge_list& outputs) {
  selective_ = true;
  if (options.accumulate_grad)
    return;
  captured_.resize(outputs.size());
  captures_.clear();
  for (std::uint32_t i = 0; i < outputs.size(); ++i)
    if (const node* out = G::target(outputs[i]))
      captures_.push_back({G::input_nr(outputs[i]), i, state_.find(key_of(*out))});
  // Group each node's captures, keeping the order of the inputs, and point
  // each node at its first (replacing count_toward's placeholder).
  const auto by_owner = [](const auto& a, const auto& b) { return a.owner < b.owner; };
  if (!std::is_sorted(captures_.begin(), captures_.end(), by_owner))
    std::stable_sort(captures_.begin(), captures_.end(), by_owner);
  for (std::size_t j = captures_.size(); j-- > 0;)
    static_cast<NodeState*>(const_cast<void*>(captures_[j].owner))
      ->exec.set_first_capture(static_cast<std::uint32_t>(j + 1));
}

template <GraphTraits G>
inline typename BasicGraphTask<G>::NodeState*
BasicGraphTask<G>::add_input(node& fn, std::uint32_t input_nr, value&& grad,
                             const typename G::source& source) {
  NodeState* found = state_.find(key_of(fn));
  if (!found) {
    if (selective()) // pruned: leads to no requested input (see in_graph)
      return nullptr;
    throw_no_dependency<G>(fn);
  }
  return add_input_to(fn, *found, input_nr, std::move(grad), source);
}

template <GraphTraits G>
inline typename BasicGraphTask<G>::Arrival BasicGraphTask<G>::arrive(node& fn, NodeState& s,
                                                                     std::uint32_t input_nr) {
  const bool ready = --s.dependencies == 0;
  if (selective() && !s.exec.should_execute())
    return Arrival::skipped;
  if (input_nr >= G::num_inputs(fn)) [[unlikely]]
    throw_no_such_input<G>(fn, input_nr);
  return ready ? Arrival::complete : Arrival::waiting;
}

template <GraphTraits G>
inline typename BasicGraphTask<G>::NodeState*
BasicGraphTask<G>::add_input_to(node& fn, NodeState& s, std::uint32_t input_nr, value&& grad,
                                const typename G::source& source) {
  const Arrival arrival = arrive(fn, s, input_nr);
  if (arrival == Arrival::skipped)
    return nullptr;
  G::accumulate(s.buffer, fn, input_nr, std::move(grad), source, options.create_graph);
  return arrival == Arrival::complete ? &s : nullptr;
}

template <GraphTraits G>
std::optional<ReadyTask> BasicGraphTask<G>::accept(const std::shared_ptr<GraphTaskBase>& self,
                                                   const edge& next, value&& grad,
                                                   const typename G::source& source) {
  node& fn = *G::target(next);
  NodeState* s = add_input(fn, G::input_nr(next), std::move(grad), source);
  if (!s)
    return std::nullopt;
  return make_ready(self, G::target_handle(next), fn, s);
}

template <GraphTraits G>
void BasicGraphTask<G>::accept_sent(SentGrad& g, Dispatch& to) {
  auto& flight = g.value.get<typename G::in_flight>();
  node& fn = *static_cast<node*>(g.node.get());
  NodeState* s =
    spread_ ? add_input_in_order(fn, g.input_nr, std::move(G::sent_value(flight)),
                                 G::sent_source(flight), g.order)
            : add_input(fn, g.input_nr, std::move(G::sent_value(flight)), G::sent_source(flight));
  if (s)
    to.ready(make_ready(shared_from_this(), std::move(g.node), fn, s));
}

template <GraphTraits G>
void BasicGraphTask<G>::spread_cpu_nodes() {
  state_.share();
  state_.for_each([](const void*, const NodeState& s) {
    if (s.dependencies > 1)
      const_cast<NodeState&>(s).exec.set_joins();
  });
  // Note [Nodes that need their call's thread] (actors/detail/cpu_lanes.h)
  if constexpr (requires(const node& n) { G::needs_call_thread(n); }) {
    static_assert(!has_hints_v<G>, "the walk reads the nodes from the table's keys");
    if (runs_user_code_)
      state_.for_each([](const void* key, const NodeState& s) {
        if (G::needs_call_thread(*static_cast<const node*>(key)))
          const_cast<NodeState&>(s).exec.set_on_coordinator();
      });
  }
  if constexpr (requires { G::capture_caller_locals(); })
    caller_locals_ = G::capture_caller_locals();
  spread_ = true;
}

template <GraphTraits G>
typename BasicGraphTask<G>::NodeState*
BasicGraphTask<G>::add_input_in_order(node& fn, std::uint32_t input_nr, value&& grad,
                                      const typename G::source& source, InputOrder order) {
  NodeState* found = state_.find(key_of(fn));
  if (!found) // add_input's error, or its drop of a pruned node
    return add_input(fn, input_nr, std::move(grad), source);
  if (!found->exec.joins()) // one gradient: nothing to order
    return add_input_to(fn, *found, input_nr, std::move(grad), source);
  return add_joining_input(fn, *found, input_nr, std::move(grad), source, order);
}

template <GraphTraits G>
typename BasicGraphTask<G>::NodeState*
BasicGraphTask<G>::add_joining_input(node& fn, NodeState& s, std::uint32_t input_nr, value&& grad,
                                     const typename G::source& source, InputOrder order) {
  const Arrival arrival = arrive(fn, s, input_nr);
  if (arrival == Arrival::skipped)
    return nullptr;
  // A spread task is CPU-only: its sources name no stream and no event, so
  // keeping them past the message that brought them is safe.
  std::vector<WaitingInput>& waiting = waiting_[&s];
  waiting.push_back({order, input_nr, std::move(grad), source});
  if (arrival == Arrival::waiting)
    return nullptr;
  std::sort(waiting.begin(), waiting.end(),
            [](const WaitingInput& a, const WaitingInput& b) { return a.order.before(b.order); });
  for (WaitingInput& w : waiting)
    G::accumulate(s.buffer, fn, w.input_nr, std::move(w.grad), w.source, options.create_graph);
  waiting_.erase(&s);
  return &s;
}

template <GraphTraits G>
template <class D>
void BasicGraphTask<G>::route(const std::shared_ptr<GraphTaskBase>& self, const node& from,
                              const NodeState& from_state, std::uint32_t output_nr,
                              const edge& next, value&& grad, D& to) {
  node& consumer = *G::target(next);
  // A node pruned by selective execution (see in_graph) leads to no
  // requested input: its gradient is dropped where it is produced.
  if (selective() && !in_graph(&consumer))
    return;
  if (spread_) [[unlikely]]
    return route_spread(self, from, from_state, output_nr, next, std::move(grad), to);
  // No device listed: every node of the task is a CPU node.
  const Device owner = devices_.empty() ? Device::cpu() : G::device(consumer);
  const std::uint32_t input_nr = G::input_nr(next);
  if (to.owns(cpu_queue, owner)) {
    if (to.wants_feeds()) [[unlikely]]
      to.fed(*this, &consumer, input_nr);
    const typename G::source source = G::local_source(from, grad);
    if (NodeState* s = add_input(consumer, input_nr, std::move(grad), source))
      to.ready(make_ready(self, G::target_handle(next), consumer, s));
    return;
  }
  to.send(self, SentGrad{G::target_handle(next),
                         input_nr,
                         owner,
                         {},
                         SentValue(G::make_in_flight(from, consumer, std::move(grad)))});
}

template <GraphTraits G>
template <class D>
void BasicGraphTask<G>::route_spread(const std::shared_ptr<GraphTaskBase>& self, const node& from,
                                     const NodeState& from_state, std::uint32_t output_nr,
                                     const edge& next, value&& grad, D& to) {
  node& consumer = *G::target(next);
  const std::uint32_t input_nr = G::input_nr(next);
  // Joining nodes' gradients sort by their producers' numbers in the
  // dependency walk (Note [Parallel CPU nodes]).
  const InputOrder order(state_.number_of(&from_state), output_nr);
  NodeState* s = state_.find(key_of(consumer));
  const bool joins = s && s->exec.joins();
  if ((joins || (s && s->exec.on_coordinator())) && !to.owns(cpu_queue, Device::cpu())) {
    to.send(self, SentGrad{G::target_handle(next), input_nr, Device::cpu(), order,
                           SentValue(G::make_in_flight(from, consumer, std::move(grad)))});
    return;
  }
  if (to.wants_feeds()) [[unlikely]]
    to.fed(*this, &consumer, input_nr);
  const typename G::source source = G::local_source(from, grad);
  NodeState* r = !s      ? add_input(consumer, input_nr, std::move(grad), source) // its error
                 : joins ? add_joining_input(consumer, *s, input_nr, std::move(grad), source, order)
                         : add_input_to(consumer, *s, input_nr, std::move(grad), source);
  if (r)
    to.ready(make_ready(self, G::target_handle(next), consumer, r));
}

template <GraphTraits G>
template <class D>
inline void BasicGraphTask<G>::run_with(ReadyTask& t, const std::shared_ptr<GraphTaskBase>& self,
                                        D& to) {
  node& fn = node_of(t);
  auto& state = *static_cast<NodeState*>(t.slot);
  value_list outputs = evaluate_node(fn, state);
  to.routing(t);
  struct Routed {
    D& to;
    ~Routed() { to.routed(); }
  } routed{to};
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const edge& next = G::next_edge(fn, i);
    if (G::target(next))
      route(self, fn, state, static_cast<std::uint32_t>(i), next, std::move(outputs[i]), to);
  }
}

template <GraphTraits G>
void BasicGraphTask<G>::run_all_here(ReadyTask&& first) {
  ReadyHeap heap;
  heap.push(std::move(first));
  run_here(heap, [](const ReadyHeap&) { return false; });
}

template <GraphTraits G>
bool BasicGraphTask<G>::run_here_until_branched(ReadyTask&& first, ReadyHeap& rest,
                                                std::size_t branch) {
  rest.push(std::move(first));
  return run_here(rest, [this, branch](const ReadyHeap& heap) {
    if (heap.size() < 2 || has_error())
      return false;
    std::size_t branches = 0;
    heap.for_each([&](const ReadyTask& t) { branches += heads_branch(node_of(t), branch); });
    return branches >= 2;
  });
}

template <GraphTraits G>
bool BasicGraphTask<G>::heads_branch(node& head, std::size_t branch) {
  // Its own nodes: those that only `head`'s path feeds (one dependency
  // left), depth first, counted up to `branch`.
  boost::container::small_vector<node*, 16> stack{&head};
  std::size_t own = 0;
  while (!stack.empty() && own < branch) {
    node* fn = stack.back();
    stack.pop_back();
    ++own;
    for (std::size_t i = 0, n = G::num_outputs(*fn); i < n; ++i)
      if (node* next = G::target(G::next_edge(*fn, i)))
        if (const NodeState* s = state_.find(key_of(*next)); s && s->dependencies == 1)
          stack.push_back(next);
  }
  return own >= branch;
}

template <GraphTraits G>
template <class Stop>
inline bool BasicGraphTask<G>::run_here(ReadyHeap& heap, Stop stop) {
  LocalDispatch dispatch(heap);
  // The tasks this loop makes do not hold the GraphTask: it outlives the
  // loop (its caller holds it), and a reference count per node is not free.
  const std::shared_ptr<GraphTaskBase> unheld;
  while (!heap.empty()) {
    if (stop(heap))
      return false;
    ReadyTask t = heap.pop();
    if (has_error())
      continue;
    try {
      run_with(t, unheld, dispatch);
    } catch (...) {
      set_error(current_exception_or_unwind()); // Note [A thread that exits inside a node]
    }
  }
  return true;
}

template <GraphTraits G>
typename BasicGraphTask<G>::value_list BasicGraphTask<G>::evaluate(ReadyTask& t) {
  return evaluate_node(node_of(t), *static_cast<NodeState*>(t.slot));
}

template <GraphTraits G>
typename BasicGraphTask<G>::value_list BasicGraphTask<G>::evaluate_node(node& fn, NodeState& s) {
  typename G::run_scope scope(*this, fn);
  try {
    // A reference when the graph type's buffer already is the input list
    // (no new vector and no destructor for the moved-from one).
    auto&& inputs = G::take_inputs(std::move(s.buffer));
    // Most nodes of a call with inputs run and capture nothing. A node that
    // only captures drops its inputs now, as libtorch's InputBuffer goes
    // when evaluate_function returns: the captured gradients are then the
    // only references, which AccumulateGrad::accumulateGrad needs to take
    // one over instead of copying it (a distributed pass adds them into
    // its context while its task lives on: actors/torch/detail/dist_task.cpp).
    if (selective() && (s.exec.first_capture() != 0 || !s.exec.needed()) &&
        !capture_inputs(fn, s, inputs)) {
      inputs = {};
      return {};
    }
    value_list outputs = G::call_function(fn, std::move(inputs));
    if constexpr (requires { G::recycle_inputs(std::move(inputs)); })
      G::recycle_inputs(std::move(inputs)); // Note [Recycled input lists]
    if (!options.keep_graph)
      G::release_variables(fn);
    if (anomaly)
      for (std::size_t i = 0; i < outputs.size(); ++i)
        if (G::has_nan(outputs[i]))
          throw EngineError(G::nan_message(fn, i));
    return outputs;
  } catch (const std::exception& e) {
    G::rethrow_in_node(fn, e);
  }
}

template <GraphTraits G>
bool BasicGraphTask<G>::capture_inputs(node& fn, const NodeState& s, value_list& inputs) {
  // Tensor pre-hooks run once: here when the node only captures, else in
  // the node's call protocol.
  if (!s.exec.needed())
    G::call_tensor_pre_hooks(fn, inputs);
  const auto captures = captures_of(s);
  for (std::size_t k = 0; k < captures.size(); ++k) {
    const auto& c = captures[k];
    value v = inputs.at(c.input_idx);
    // A graph type may transform what it captures (libtorch's capture hooks).
    if constexpr (requires { G::capture(fn, k, std::move(v)); })
      v = G::capture(fn, k, std::move(v));
    captured_[c.output_idx] = std::move(v); // disjoint slots: no two nodes write one
  }
  return s.exec.needed();
}

template <GraphTraits G>
typename BasicGraphTask<G>::value_list BasicGraphTask<G>::finish() {
  if (has_error())
    std::rethrow_exception(error());
  streams_.sync();
  run_final_callbacks();
  return std::move(captured_);
}

} // namespace actorgrad::detail
