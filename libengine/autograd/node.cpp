#include "actorgrad/libengine/autograd/node.h"

#include <atomic>
#include <stdexcept>
#include <vector>

#include "actorgrad/libengine/tensor/tensor.h"

namespace actorgrad {

std::uint64_t next_sequence_nr() {
  static std::atomic<std::uint64_t> counter{0};
  return counter.fetch_add(1, std::memory_order_relaxed);
}

Node::Node(edge_list next_edges) : sequence_nr_(next_sequence_nr()) {
  next_edges_.reserve(next_edges.size());
  for (auto& e : next_edges)
    add_next_edge(std::move(e));
}

std::string Node::name() const { return "Node"; }

// Note [Edited topological numbers]
// A node's topological_nr exceeds that of every node its edges point at,
// and a grad(inputs=...) call relies on it: it does not search below the
// smallest topological_nr of its inputs. Building keeps that true (a node's
// number is set from its edges). Editing can break it: an edge added to a
// node that already has a parent may raise the node's number above its
// parents', which keep theirs, and a call would then prune a parent whose
// path leads to an input. PyTorch refuses such an edit; this graph allows
// it (a hand-built graph may even form a cycle, which the engine detects
// and names). So the edit sets a process-wide flag, and from then on a
// call prunes nothing (ActorgradGraph::topological_order_edited): slower
// for graphs that a program edited once, never wrong.
namespace {
/// Set (never cleared) by any thread's edit described above; read by every
/// GraphTask::create of a call with inputs. Relaxed: the edit and the call
/// are ordered by whatever hands the edited graph to the call.
std::atomic<bool> order_edited{false};
} // namespace

bool Node::topological_order_edited() { return order_edited.load(std::memory_order_relaxed); }

void Node::raise_topological_nr(const Edge& e) {
  if (!e.function)
    return;
  Node& next = *e.function;
  if (!next.has_parent_.load(std::memory_order_relaxed))
    next.has_parent_.store(true, std::memory_order_relaxed);
  if (next.topological_nr_ + 1 <= topological_nr_)
    return;
  if (has_parent_.load(std::memory_order_relaxed))
    order_edited.store(true, std::memory_order_relaxed); // Note [Edited topological numbers]
  topological_nr_ = next.topological_nr_ + 1;
}

void Node::add_next_edge(Edge e) {
  raise_topological_nr(e);
  next_edges_.push_back(std::move(e));
}

void Node::set_next_edge(std::size_t i, Edge e) {
  // topological_nr is not lowered: see Note [Edited topological numbers].
  Edge& slot = next_edges_.at(i);
  raise_topological_nr(e);
  slot = std::move(e);
}

std::uint32_t Node::add_input_metadata(const Tensor& t) {
  input_metadata_.emplace_back(t);
  const auto& m = input_metadata_.back();
  if (device_.is_cpu() && m.defined && !m.device.is_cpu()) {
    device_ = m.device;
    stream_ = m.stream;
  }
  return static_cast<std::uint32_t>(input_metadata_.size() - 1);
}

template <class Fn>
HookHandle Node::add_hook(const char* api, HookList<Fn>& list, Fn hook, std::string name,
                          std::uint32_t input_nr) {
  auto self = weak_from_this().lock();
  if (!self)
    throw std::logic_error(std::string(api) + ": node " + this->name() +
                           " is not owned by a shared_ptr (create it with make_node), so its "
                           "hooks could not be removed");
  HookHandle handle = list.add(self, std::move(hook), std::move(name), input_nr);
  may_have_hooks_.store(true, std::memory_order_release);
  return handle;
}

void Node::check_input_nr(const char* api, std::uint32_t input_nr) const {
  if (input_nr >= num_inputs())
    throw std::out_of_range(std::string(api) + ": node " + name() + " has " +
                            std::to_string(num_inputs()) + " inputs, no input " +
                            std::to_string(input_nr));
}

HookHandle Node::add_pre_hook(NodePreHook hook, std::string name) {
  return add_hook("add_pre_hook", pre_hooks_, std::move(hook), std::move(name));
}

HookHandle Node::add_post_hook(NodePostHook hook, std::string name) {
  return add_hook("add_post_hook", post_hooks_, std::move(hook), std::move(name));
}

HookHandle Node::add_tensor_pre_hook(std::uint32_t input_nr, TensorHook hook, std::string name) {
  check_input_nr("add_tensor_pre_hook", input_nr);
  return add_hook("add_tensor_pre_hook", tensor_pre_hooks_, std::move(hook), std::move(name),
                  input_nr);
}

HookHandle Node::add_retains_grad_hook(std::uint32_t input_nr, TensorHook hook) {
  check_input_nr("add_retains_grad_hook", input_nr);
  return add_hook("add_retains_grad_hook", retains_grad_hooks_, std::move(hook), {}, input_nr);
}

// Note [Deleting a graph without recursion or use_count]
// Dropping the last reference to a node drops its next edges, whose nodes
// may lose their last reference in turn: recursive deletion of a chain of
// 10^6 nodes would overflow the stack. PyTorch's deleteNode moves out each
// child whose use_count() is 1 and deletes it in a loop; but use_count() is
// a relaxed load, so seeing 1 does not order this thread after another
// owner's last use of that child (a worker that has just run the node of a
// failed call and dropped it): TSan reports the pair, and weak memory would
// allow it. Here ~Node releases its edges' references itself, each one an
// acq_rel release of the shared_ptr's count, so a child is destroyed only
// by its last owner. A node destroyed while this thread is already
// destroying one (a child whose last reference this thread just dropped)
// hands its edges to the outer destructor's loop instead of releasing them:
// the depth stays one node. The edges are released after the derived
// class's members (its saved tensors), so a child that a saved tensor also
// holds is dropped last by its edge, in the loop. Nodes are made by
// make_shared (make_node), node and count in one block: a backward's first
// touch of a node, copying the edge's reference, then misses the cache once
// a node instead of twice, and a forward op allocates once less.
Node::~Node() {
  thread_local std::vector<std::shared_ptr<Node>>* pending = nullptr; // this thread's loop
  std::vector<std::shared_ptr<Node>> mine;
  std::vector<std::shared_ptr<Node>>& to = pending ? *pending : mine;
  for (Edge& e : next_edges_)
    if (e.function)
      to.push_back(std::move(e.function));
  if (pending || mine.empty())
    return;
  pending = &mine;
  while (!mine.empty()) {
    std::shared_ptr<Node> next = std::move(mine.back());
    mine.pop_back();
    next.reset(); // a child destroyed here queues its edges in `mine`
  }
  pending = nullptr;
}

} // namespace actorgrad
