#pragma once
/// @file node.h
/// A backward function of the autograd graph (PyTorch's torch::autograd::Node).

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "actorgrad/libengine/autograd/autograd_meta.h"
#include "actorgrad/libengine/autograd/edge.h"
#include "actorgrad/libengine/autograd/hook_list.h"
#include "actorgrad/libengine/autograd/input_metadata.h"
#include "actorgrad/libengine/tensor/tensor.h"

namespace actorgrad {

/// Sees the gradients a node receives; a non-empty result (one gradient
/// per input) replaces them.
using NodePreHook = std::function<variable_list(const variable_list& grad_outputs)>;
/// Sees the gradients a node produced and received; a non-empty result (one
/// gradient per output) replaces the produced ones.
using NodePostHook =
  std::function<variable_list(const variable_list& grad_inputs, const variable_list& grad_outputs)>;

/// Next value of the global sequence counter (later-created nodes run first).
std::uint64_t next_sequence_nr();

/// A backward function: takes the gradients of its forward outputs (its
/// inputs, one per `input_metadata`) and returns the gradients of its forward
/// inputs (its outputs, one per `next_edges`).
///
/// Nodes are immutable while a GraphTask runs them, except for the saved
/// variables that `release_variables` frees (under their own lock, see
/// SavedVariables) and the hooks (which may be added and removed at any
/// time, see hook_handle.h), so several GraphTasks may run one graph at
/// once (without retain_graph, one that reaches a node after another
/// released its saved variables fails, as a second backward does).
class Node : public std::enable_shared_from_this<Node> {
public:
  explicit Node(edge_list next_edges = {});
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  /// Drops the next edges without recursion (Note [Deleting a graph without
  /// recursion or use_count] in node.cpp).
  virtual ~Node();

  /// The backward computation.
  virtual variable_list apply(variable_list&& grads) = 0;

  /// Name used in errors, traces and tests (`MulBackward`).
  virtual std::string name() const;

  /// Frees saved tensors (called after the node ran without retain_graph).
  virtual void release_variables() {}

  /// True only for AccumulateGrad (terminal node of a leaf).
  virtual bool is_accumulate_grad() const { return false; }

  // -- graph ------------------------------------------------------------------

  std::uint64_t sequence_nr() const { return sequence_nr_; }
  /// Longest distance to a leaf; 0 for AccumulateGrad.
  std::uint64_t topological_nr() const { return topological_nr_; }

  /// The output edges, in output order (stored inside the node up to two:
  /// Note [Edges inside the node]).
  std::span<const Edge> next_edges() const { return {next_edges_.data(), next_edges_.size()}; }
  const Edge& next_edge(std::size_t i) const { return next_edges_.at(i); }
  std::size_t num_outputs() const { return next_edges_.size(); }
  /// Appends an output edge and updates topological_nr.
  void add_next_edge(Edge e);
  /// Replaces output edge `i` (used to build graphs by hand; may form a
  /// cycle, which the engine detects and refuses).
  void set_next_edge(std::size_t i, Edge e);
  /// True once add_next_edge or set_next_edge raised the topological_nr of
  /// a node that already was the target of an edge (Note [Edited
  /// topological numbers]).
  static bool topological_order_edited();

  /// Records the metadata of a forward output; returns its input number.
  std::uint32_t add_input_metadata(const Tensor& t);
  const InputMetadata& input_metadata(std::size_t i) const { return input_metadata_.at(i); }
  std::size_t num_inputs() const { return input_metadata_.size(); }
  /// The device whose actor runs this node: the first non-CPU device among
  /// its inputs' metadata, else the CPU (PyTorch's InputBuffer::device()).
  Device device() const { return device_; }
  /// The stream its backward runs on: the forward's stream recorded with the
  /// input that chose device(); none on the CPU (PyTorch's Node::stream()).
  const std::optional<Stream>& stream() const { return stream_; }

  // -- hooks ------------------------------------------------------------------

  // Every add_* returns the hook's handle (see Note [Removing a hook while a
  // backward runs]); `name`, when given, is how errors about the hook's
  // result name it. Hooks run in registration order. A hook's result is
  // checked against the metadata of the gradient it replaces (same shape,
  // dtype and device; an error names the hook and this node). The node
  // must be owned by a shared_ptr (make_node).

  /// Adds a hook called with the gradients this node receives, after the
  /// tensor pre-hooks.
  HookHandle add_pre_hook(NodePreHook hook, std::string name = {});
  /// Adds a hook called with the gradients this node produced (validated)
  /// and received.
  HookHandle add_post_hook(NodePostHook hook, std::string name = {});
  /// Adds a hook on the gradient arriving at input `input_nr` (a tensor's
  /// hook: Tensor::register_hook); an undefined result keeps the gradient.
  HookHandle add_tensor_pre_hook(std::uint32_t input_nr, TensorHook hook, std::string name = {});
  /// Adds a hook that runs after the tensor pre-hooks; used by retain_grad.
  HookHandle add_retains_grad_hook(std::uint32_t input_nr, TensorHook hook);

  /// The pre-hooks (the engine snapshots each list: call_hooks.h).
  const HookList<NodePreHook>& pre_hooks() const { return pre_hooks_; }
  /// The post-hooks.
  const HookList<NodePostHook>& post_hooks() const { return post_hooks_; }
  /// The tensor pre-hooks, each with its input_nr.
  const HookList<TensorHook>& tensor_pre_hooks() const { return tensor_pre_hooks_; }
  /// The retain_grad hooks, each with its input_nr.
  const HookList<TensorHook>& retains_grad_hooks() const { return retains_grad_hooks_; }
  /// The hooks registered on the leaf this node accumulates into
  /// (AccumulateGrad); they run after tensor_pre_hooks(). Null elsewhere.
  virtual const HookList<TensorHook>* leaf_hooks() const { return nullptr; }
  /// False when no hook was ever registered on this node (nor is it an
  /// AccumulateGrad, which runs its leaf's hooks): the engine then skips
  /// every hook pass after this one load.
  bool may_have_hooks() const { return may_have_hooks_.load(std::memory_order_acquire); }
  /// Scratch of the engine's node table (Note [Node table hints] in
  /// libengine/engine/detail/node_table.h), not part of the node's value.
  std::atomic<std::uint32_t>& table_hint() const { return table_hint_; }
  /// Scratch of the engine's CPU lanes: the lane that last ran this node in
  /// a spread call, plus one (Note [Lanes that stay] in
  /// actors/detail/cpu_lanes.h), not part of the node's value.
  std::atomic<std::uint16_t>& last_lane() const { return last_lane_; }

protected:
  std::uint64_t sequence_nr_;
  std::uint64_t topological_nr_ = 0;
  // Note [Edges inside the node]
  // Every backward call walks the graph before it runs it (the dependency
  // count, PyTorch's compute_dependencies), chasing node -> edges -> next
  // node. With the edges in a block of their own (std::vector), that is two
  // dependent loads a node, and once the graph outgrows the cache, two
  // cache misses the processor cannot overlap: on a chain of 10^6 nodes the
  // walk took two thirds of the backward (perf, `bench_chain_driver actor
  // chain_passthrough 1000000`: samples on the edge's load and on the next
  // node's). validate_outputs then reads the next node's input metadata
  // and its shape, two more blocks. Most nodes have one or two outputs and
  // one input of at most 5 dimensions, so all of it lives inside the node
  // up to that many (a larger list still goes to the heap): one miss a node
  // in the walk. A backward of the chain of 10^6 went from about 320 to 195
  // ns a node (bench/HISTORY.md, "Edges inside the node").
  boost::container::small_vector<Edge, 2> next_edges_;
  boost::container::small_vector<InputMetadata, 1> input_metadata_;
  Device device_;
  std::optional<Stream> stream_;
  HookList<NodePreHook> pre_hooks_;
  HookList<NodePostHook> post_hooks_;
  HookList<TensorHook> tensor_pre_hooks_;
  HookList<TensorHook> retains_grad_hooks_;
  /// Set (never cleared) by every add_* after the hook is published, and by
  /// AccumulateGrad's constructor; read by the engine before each node call.
  std::atomic<bool> may_have_hooks_{false};
  /// Set (never cleared) by the thread that makes an edge to this node;
  /// read by raise_topological_nr of this node. Here it fills padding.
  std::atomic<bool> has_parent_{false};
  /// Written by the lane that runs this node in a spread call, read by the
  /// lane that makes it ready; a hint, never trusted for correctness.
  /// Here it fills padding.
  mutable std::atomic<std::uint16_t> last_lane_{0};
  /// Written by the numbering pass of any call over this node, read by its
  /// lookups; never trusted unchecked (Note [Node table hints]).
  mutable std::atomic<std::uint32_t> table_hint_{0};

private:
  /// Keeps topological_nr above that of `e`'s node, which now has a parent.
  void raise_topological_nr(const Edge& e);

  /// Registers `hook` in `list` (this node's), returns its handle and sets
  /// may_have_hooks_; throws naming `api` when no shared_ptr owns this node.
  template <class Fn>
  HookHandle add_hook(const char* api, HookList<Fn>& list, Fn hook, std::string name,
                      std::uint32_t input_nr = 0);
  /// Throws naming `api` unless `input_nr` is one of this node's inputs.
  void check_input_nr(const char* api, std::uint32_t input_nr) const;
};

/// Creates a node owned by a shared_ptr, in one block with its count.
template <class T, class... Args>
std::shared_ptr<T> make_node(Args&&... args) {
  return std::make_shared<T>(std::forward<Args>(args)...);
}

} // namespace actorgrad
