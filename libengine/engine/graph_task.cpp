#include "libengine/engine/graph_task.h"

#include <algorithm>
#include <limits>
#include <sstream>
#include <unordered_set>

#include "libengine/autograd/grad_mode.h"
#include "libengine/autograd/graph_root.h"
#include "libengine/engine/errors.h"
#include "libengine/engine/stream_sync.h"

namespace actorgrad {

namespace {

std::atomic<std::uint64_t> next_graph_task_id{1};
thread_local GraphTask* current_task = nullptr;

std::string node_label(const Node* n) {
  return n->name() + " (sequence_nr " + std::to_string(n->sequence_nr()) + ")";
}

// Iterative DFS from `root`; returns the nodes of one cycle, or nothing.
std::vector<const Node*> find_cycle(const Node* root) {
  enum class Color : std::uint8_t { grey, black };
  std::unordered_map<const Node*, Color> color;
  std::vector<std::pair<const Node*, std::size_t>> stack{{root, 0}};
  color[root] = Color::grey;
  while (!stack.empty()) {
    auto& [fn, next] = stack.back();
    if (next == fn->num_outputs()) {
      color[fn] = Color::black;
      stack.pop_back();
      continue;
    }
    const Node* child = fn->next_edge(next++).function.get();
    if (!child)
      continue;
    auto it = color.find(child);
    if (it == color.end()) {
      color[child] = Color::grey;
      stack.emplace_back(child, 0);
    } else if (it->second == Color::grey) {
      std::vector<const Node*> cycle;
      auto pos = std::find_if(stack.begin(), stack.end(),
                              [&](const auto& f) { return f.first == child; });
      for (; pos != stack.end(); ++pos)
        cycle.push_back(pos->first);
      return cycle;
    }
  }
  return {};
}

} // namespace

GraphTask::GraphTask(ExecuteOptions opts, int depth)
  : id(next_graph_task_id.fetch_add(1, std::memory_order_relaxed)),
    options(opts),
    reentrant_depth(depth),
    anomaly(AnomalyMode::is_enabled()) {}

GraphTask::~GraphTask() {
  for (auto* cb = callbacks_.load(); cb != nullptr;) {
    auto* next = cb->next;
    delete cb;
    cb = next;
  }
}

std::pair<std::shared_ptr<GraphTask>, NodeTask>
GraphTask::create(const edge_list& roots, variable_list root_grads, ExecuteOptions options,
                  const edge_list& outputs, int reentrant_depth) {
  if (roots.empty())
    throw EngineError("backward called with no roots");
  if (root_grads.size() != roots.size())
    throw EngineError("backward: " + std::to_string(roots.size()) + " roots but " +
                      std::to_string(root_grads.size()) + " root gradients");
  auto task = std::make_shared<GraphTask>(options, reentrant_depth);
  // With one root the root node itself is the first task (no GraphRoot).
  const bool single = roots.size() == 1;
  std::shared_ptr<Node> root =
    single ? roots[0].function : make_node<GraphRoot>(roots, root_grads);
  if (!single)
    task->graph_root_ = root;

  std::uint64_t min_topo_nr = 0;
  if (!outputs.empty()) {
    min_topo_nr = std::numeric_limits<std::uint64_t>::max();
    for (const auto& e : outputs)
      if (e.function)
        min_topo_nr = std::min(min_topo_nr, e.function->topological_nr());
  }
  task->compute_dependencies(root.get(), min_topo_nr);
  if (!outputs.empty())
    task->init_to_execute(*root, outputs, min_topo_nr);

  task->stash_caller_streams(root_grads);

  // The root gradients were made on the caller's current streams. A single
  // root's buffer waits for that stream (case (1) of InputBuffer::add); a
  // GraphRoot's outputs have no producer stream and are ordered after the
  // default stream (case (2)), so the default stream waits for the caller's.
  InputBuffer buffer;
  if (single) {
    if (roots[0].input_nr >= root->num_inputs())
      throw EngineError("backward: root edge points at input " + std::to_string(roots[0].input_nr) +
                        " of " + node_label(root.get()) + ", which has " +
                        std::to_string(root->num_inputs()) + " inputs");
    buffer = InputBuffer(root->num_inputs());
    const Tensor& g = root_grads[0];
    std::optional<Stream> producer;
    if (g.defined() && has_streams(g.device()))
      producer = current_stream(g.device());
    buffer.add(roots[0].input_nr, std::move(root_grads[0]), producer, root->stream());
  } else {
    for (const Tensor& g : root_grads)
      if (g.defined() && has_streams(g.device()))
        wait_for_stream(default_stream(g.device()), current_stream(g.device()));
  }
  NodeTask first{task, std::move(root), std::move(buffer), reentrant_depth};
  return {std::move(task), std::move(first)};
}

void GraphTask::compute_dependencies(Node* root, std::uint64_t min_topo_nr) {
  // Note [Cycles in hand-built graphs]
  // Graphs built by ops cannot have cycles: an edge always points at a node
  // with a smaller topological_nr. A graph edited with Node::set_next_edge
  // can; then some edge does not decrease topological_nr. Only in that case
  // do we pay for a full cycle search (and, without a cycle, drop the
  // topological pruning, whose numbers are stale).
  state_.clear();
  devices_.clear();
  leaf_streams_.clear();
  // The longest path below the root has topological_nr + 1 distinct nodes:
  // a lower bound on the graph's size that saves the map most rehashes.
  state_.reserve(root->topological_nr() + 1);
  state_[root];
  note_device(root);
  std::vector<Node*> queue{root};
  bool topo_order_broken = false;
  while (!queue.empty()) {
    Node* fn = queue.back();
    queue.pop_back();
    if (fn->topological_nr() < min_topo_nr)
      continue;
    for (const auto& edge : fn->next_edges()) {
      Node* next = edge.function.get();
      if (!next)
        continue;
      if (next->topological_nr() >= fn->topological_nr())
        topo_order_broken = true;
      auto [it, inserted] = state_.try_emplace(next);
      it->second.dependencies += 1;
      if (inserted) {
        note_device(next);
        queue.push_back(next);
      }
    }
  }
  if (!topo_order_broken)
    return;
  auto cycle = find_cycle(root);
  if (!cycle.empty()) {
    std::ostringstream msg;
    msg << "the backward graph has a cycle: ";
    for (const Node* n : cycle)
      msg << node_label(n) << " -> ";
    msg << node_label(cycle.front());
    throw EngineError(msg.str());
  }
  if (min_topo_nr > 0)
    compute_dependencies(root, 0);
}

void GraphTask::init_to_execute(Node& root, const edge_list& outputs, std::uint64_t min_topo_nr) {
  // Marks needed every node on a path from the root to an output (PyTorch's
  // init_to_execute): an iterative DFS that sets `needed` on the way back up.
  exec_info_[&root].needed = true;
  captured_vars_.resize(options.accumulate_grad ? 0 : outputs.size());
  for (std::uint32_t i = 0; i < outputs.size(); ++i) {
    const Node* out = outputs[i].function.get();
    if (!out)
      continue;
    auto& info = exec_info_[out];
    if (options.accumulate_grad) {
      info.needed = true;
    } else {
      info.captures.push_back({outputs[i].input_nr, i});
      note_leaf_stream(out);
    }
  }
  auto should_execute = [this](const Node* fn) {
    auto it = exec_info_.find(fn);
    return it != exec_info_.end() && it->second.should_execute();
  };
  struct Frame {
    Node* fn;
    std::size_t next = 0;
    Node* next_fn() {
      while (next < fn->num_outputs())
        if (Node* n = fn->next_edge(next++).function.get())
          return n;
      return nullptr;
    }
  };
  std::vector<Frame> stack{{&root}};
  std::unordered_set<const Node*> seen{&root};
  while (!stack.empty()) {
    Node* fn = stack.back().fn;
    Node* child = nullptr;
    while ((child = stack.back().next_fn()) && !seen.insert(child).second)
      if (should_execute(child))
        exec_info_[fn].needed = true;
    if (child) {
      if (child->topological_nr() >= min_topo_nr)
        stack.push_back({child});
      continue;
    }
    stack.pop_back();
    if (should_execute(fn) && !stack.empty())
      exec_info_[stack.back().fn].needed = true;
  }
}

void GraphTask::note_device(const Node* fn) {
  Device d = fn->device();
  if (!d.is_cpu() && std::find(devices_.begin(), devices_.end(), d) == devices_.end())
    devices_.push_back(d);
  if (fn->num_outputs() == 0)
    note_leaf_stream(fn);
}

void GraphTask::note_leaf_stream(const Node* fn) {
  const auto& s = fn->stream();
  if (s && std::find(leaf_streams_.begin(), leaf_streams_.end(), *s) == leaf_streams_.end())
    leaf_streams_.push_back(*s);
}

void GraphTask::stash_caller_streams(const variable_list& root_grads) {
  auto stash = [this](Device d) {
    if (!has_streams(d))
      return;
    for (const Stream& s : caller_streams_)
      if (s.device == d)
        return;
    caller_streams_.push_back(current_stream(d));
  };
  for (Device d : devices_)
    stash(d);
  for (const Stream& s : leaf_streams_)
    stash(s.device);
  for (const Tensor& g : root_grads)
    if (g.defined())
      stash(g.device());
}

void GraphTask::sync_caller_streams() const {
  for (const Stream& leaf : leaf_streams_)
    for (const Stream& caller : caller_streams_)
      if (caller.device == leaf.device)
        wait_for_stream(caller, leaf);
}

const ExecInfo* GraphTask::exec_info(const Node* fn) const {
  auto it = exec_info_.find(fn);
  return it == exec_info_.end() ? nullptr : &it->second;
}

std::optional<NodeTask> GraphTask::accept(const Edge& next, Tensor&& grad,
                                          const std::optional<Stream>& producer,
                                          const Event* ready_event) {
  const Node* fn = next.function.get();
  auto it = state_.find(fn);
  if (it == state_.end()) {
    if (selective()) // pruned: leads to no requested input (see in_graph)
      return std::nullopt;
    throw EngineError("dependency not found for " + node_label(fn));
  }
  NodeState& s = it->second;
  const bool ready = --s.dependencies == 0;
  if (selective()) {
    const ExecInfo* info = exec_info(fn);
    if (!info || !info->should_execute())
      return std::nullopt;
  }
  if (next.input_nr >= fn->num_inputs())
    throw EngineError("gradient sent to input " + std::to_string(next.input_nr) + " of " +
                      node_label(fn) + ", which has " + std::to_string(fn->num_inputs()) +
                      " inputs");
  if (s.buffer.empty())
    s.buffer = InputBuffer(fn->num_inputs());
  {
    AutoGradMode mode(options.create_graph);
    s.buffer.add(next.input_nr, std::move(grad), producer, fn->stream(), ready_event);
  }
  if (!ready)
    return std::nullopt;
  return NodeTask{shared_from_this(), next.function, std::move(s.buffer), reentrant_depth};
}

bool GraphTask::set_error(std::exception_ptr e) {
  bool expected = false;
  if (!first_error_claimed_.compare_exchange_strong(expected, true, std::memory_order_acq_rel))
    return false;
  error_ = std::move(e);
  has_error_.store(true, std::memory_order_release);
  return true;
}

void GraphTask::queue_callback(std::function<void()> fn) {
  auto* cb = new FinalCallback{std::move(fn), callbacks_.load(std::memory_order_relaxed)};
  while (!callbacks_.compare_exchange_weak(cb->next, cb, std::memory_order_release,
                                           std::memory_order_relaxed)) {
  }
}

void GraphTask::run_final_callbacks() {
  CurrentGraphTaskGuard guard(this);
  // Callbacks may queue more callbacks: take the list until it stays empty.
  while (FinalCallback* head = callbacks_.exchange(nullptr, std::memory_order_acquire)) {
    std::vector<std::unique_ptr<FinalCallback>> in_order;
    for (; head != nullptr; head = head->next)
      in_order.emplace_back(head);
    std::reverse(in_order.begin(), in_order.end());
    for (auto& cb : in_order)
      cb->fn();
  }
}

variable_list GraphTask::finish() {
  if (has_error())
    std::rethrow_exception(error());
  sync_caller_streams();
  run_final_callbacks();
  return take_captured();
}

GraphTask* current_graph_task() { return current_task; }

CurrentGraphTaskGuard::CurrentGraphTaskGuard(GraphTask* t) : prev_(current_task) {
  current_task = t;
}

CurrentGraphTaskGuard::~CurrentGraphTaskGuard() { current_task = prev_; }

void queue_callback(std::function<void()> fn) {
  if (!current_task)
    throw EngineError("queue_callback: no backward pass is running a node on this thread");
  current_task->queue_callback(std::move(fn));
}

} // namespace actorgrad
