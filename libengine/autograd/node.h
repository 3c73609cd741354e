#pragma once
/// @file node.h
/// A backward function of the autograd graph (PyTorch's torch::autograd::Node).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "libengine/autograd/edge.h"
#include "libengine/autograd/input_metadata.h"
#include "libengine/tensor/tensor.h"

namespace actorgrad {

/// Replaces the gradients a node receives (a non-empty result replaces them).
using NodePreHook = std::function<variable_list(const variable_list& grad_outputs)>;
/// Sees the gradients a node produced and received; a non-empty result
/// replaces the produced ones.
using NodePostHook =
  std::function<variable_list(const variable_list& grad_inputs, const variable_list& grad_outputs)>;
/// A hook on the gradient arriving at one input of a node (a tensor's hook).
struct TensorPreHook {
  std::uint32_t input_nr;
  std::function<Tensor(const Tensor&)> fn;
};

/// Next value of the global sequence counter (later-created nodes run first).
std::uint64_t next_sequence_nr();

/// A backward function: takes the gradients of its forward outputs (its
/// inputs, one per `input_metadata`) and returns the gradients of its forward
/// inputs (its outputs, one per `next_edges`).
///
/// Nodes are immutable while a GraphTask runs them, except for the saved
/// variables that `release_variables` frees, so several GraphTasks may run
/// one graph at once (with retain_graph).
class Node : public std::enable_shared_from_this<Node> {
public:
  explicit Node(edge_list next_edges = {});
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  virtual ~Node() = default;

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

  const edge_list& next_edges() const { return next_edges_; }
  const Edge& next_edge(std::size_t i) const { return next_edges_.at(i); }
  std::size_t num_outputs() const { return next_edges_.size(); }
  /// Appends an output edge and updates topological_nr.
  void add_next_edge(Edge e);
  /// Replaces output edge `i` (used to build graphs by hand; may form a
  /// cycle, which the engine detects and refuses).
  void set_next_edge(std::size_t i, Edge e);

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

  void add_pre_hook(NodePreHook h) { pre_hooks_.push_back(std::move(h)); }
  void add_post_hook(NodePostHook h) { post_hooks_.push_back(std::move(h)); }
  void add_tensor_pre_hook(std::uint32_t input_nr, std::function<Tensor(const Tensor&)> fn) {
    tensor_pre_hooks_.push_back({input_nr, std::move(fn)});
  }
  /// Runs after the tensor pre-hooks; used by retain_grad.
  void add_retains_grad_hook(std::uint32_t input_nr, std::function<Tensor(const Tensor&)> fn) {
    retains_grad_hooks_.push_back({input_nr, std::move(fn)});
  }
  const std::vector<NodePreHook>& pre_hooks() const { return pre_hooks_; }
  const std::vector<NodePostHook>& post_hooks() const { return post_hooks_; }
  /// Tensor pre-hooks, in registration order (AccumulateGrad reads its leaf's).
  virtual std::vector<TensorPreHook> tensor_pre_hooks() const { return tensor_pre_hooks_; }
  const std::vector<TensorPreHook>& retains_grad_hooks() const { return retains_grad_hooks_; }
  bool has_tensor_pre_hooks() const {
    return !tensor_pre_hooks_.empty() || !retains_grad_hooks_.empty() || is_accumulate_grad();
  }

protected:
  /// Keeps topological_nr above that of `e`'s node.
  void raise_topological_nr(const Edge& e);

  std::uint64_t sequence_nr_;
  std::uint64_t topological_nr_ = 0;
  edge_list next_edges_;
  std::vector<InputMetadata> input_metadata_;
  Device device_;
  std::optional<Stream> stream_;
  std::vector<NodePreHook> pre_hooks_;
  std::vector<NodePostHook> post_hooks_;
  std::vector<TensorPreHook> tensor_pre_hooks_;
  std::vector<TensorPreHook> retains_grad_hooks_;
};

/// Deletes a node and, iteratively, every node only it kept alive, so that
/// dropping a chain of 10^6 nodes does not overflow the stack (PyTorch's
/// deleteNode; see Note [Deleting a graph without recursion or use_count]).
void delete_node(Node* node);

/// Creates a node owned by a shared_ptr that deletes through delete_node.
template <class T, class... Args>
std::shared_ptr<T> make_node(Args&&... args) {
  return std::shared_ptr<T>(new T(std::forward<Args>(args)...), [](T* p) { delete_node(p); });
}

} // namespace actorgrad
