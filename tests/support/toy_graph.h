#pragma once
/// @file toy_graph.h
/// A second graph type for the scheduler, not actorgrad's Node: scalar
/// gradients (std::optional<double>), nodes that are plain structs with a
/// function. Proves the graph interface (Note [Graph interface]) before
/// libtorch's graphs use it.

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "actorgrad/libengine/engine/detail/basic_graph_task.h"
#include "actorgrad/libengine/engine/detail/current_graph_task.h"
#include "actorgrad/libengine/engine/errors.h"

namespace actorgrad::toy {

struct ToyNode;

/// An output edge: the node fed and which of its inputs.
struct ToyEdge {
  std::shared_ptr<ToyNode> node;
  std::uint32_t input_nr = 0;
};

using Value = std::optional<double>;
using Values = std::vector<Value>;

/// A backward function over scalars.
struct ToyNode {
  std::string name;
  std::uint64_t sequence_nr = 0;
  std::uint64_t topological_nr = 0;
  Device device;
  std::size_t num_inputs = 1;
  std::vector<ToyEdge> next;
  /// Gradients of its forward inputs (one per `next`) from those of its outputs.
  std::function<Values(const Values&)> fn;
};

/// A node created now (later nodes get higher sequence numbers).
std::shared_ptr<ToyNode> make(std::string name, Device device, std::size_t num_inputs,
                              std::function<Values(const Values&)> fn);
/// Appends an edge from `from` to input `input_nr` of `to`.
void connect(const std::shared_ptr<ToyNode>& from, const std::shared_ptr<ToyNode>& to,
             std::uint32_t input_nr = 0);

/// The GraphTraits of ToyNode.
struct ToyGraph {
  using node = ToyNode;
  using edge = ToyEdge;
  using value = Value;
  using value_list = Values;
  using input_buffer = Values;
  struct source {};
  struct in_flight {
    Value value;
  };
  struct task_streams {
    void note_leaf(const ToyNode&) {}
    void stash(const DeviceList&, const Values&) {}
    void sync() const {}
  };
  struct run_scope {
    run_scope(GraphTaskBase& task, const ToyNode&) : current(&task) {}
    detail::CurrentGraphTaskGuard current;
  };

  static ToyNode* target(const ToyEdge& e) { return e.node.get(); }
  static const std::shared_ptr<ToyNode>& target_handle(const ToyEdge& e) { return e.node; }
  static std::uint32_t input_nr(const ToyEdge& e) { return e.input_nr; }
  static std::uint64_t sequence_nr(const ToyNode& n) { return n.sequence_nr; }
  static std::uint64_t topological_nr(const ToyNode& n) { return n.topological_nr; }
  static std::size_t num_outputs(const ToyNode& n) { return n.next.size(); }
  static const ToyEdge& next_edge(const ToyNode& n, std::size_t i) { return n.next[i]; }
  static std::size_t num_inputs(const ToyNode& n) { return n.num_inputs; }
  static Device device(const ToyNode& n) { return n.device; }
  static NodeInfo describe(const ToyNode& n) { return {&n, n.name, n.sequence_nr, n.device, 0}; }

  static Values call_function(ToyNode& n, Values&& inputs);
  static void call_tensor_pre_hooks(ToyNode&, Values&) {}
  static void release_variables(ToyNode&) {}
  static bool has_nan(const Value& v) { return v && std::isnan(*v); }
  static std::string nan_message(const ToyNode& n, std::size_t i) {
    return n.name + " returned NaN at " + std::to_string(i);
  }
  [[noreturn]] static void rethrow_in_node(const ToyNode& n, const std::exception& e) {
    throw EngineError("in toy node " + n.name + ": " + e.what());
  }

  static Values take_inputs(Values&& b) { return std::move(b); }
  static source local_source(const ToyNode&, const Value&) { return {}; }
  static in_flight make_in_flight(const ToyNode&, const ToyNode&, Value&& v) { return {v}; }
  static Value& sent_value(in_flight& f) { return f.value; }
  static source sent_source(const in_flight&) { return {}; }
  /// Adds `v` into slot `pos` (undefined values are skipped).
  static void accumulate(Values& buffer, const ToyNode& consumer, std::uint32_t pos, Value&& v,
                         const source&, bool) {
    if (buffer.empty())
      buffer.resize(consumer.num_inputs);
    if (v)
      buffer[pos] = buffer[pos] ? *buffer[pos] + *v : *v;
  }
  static std::shared_ptr<ToyNode> make_graph_root(const std::vector<ToyEdge>& roots,
                                                  const Values& grads);
  static Values make_root_buffer(const ToyNode& root, std::uint32_t input_nr, Values&& grads) {
    Values b(root.num_inputs);
    b[input_nr] = grads[0];
    return b;
  }
  static void order_root_grads(const Values&) {}
};

/// One call over a toy graph.
using ToyTask = detail::BasicGraphTask<ToyGraph>;

} // namespace actorgrad::toy

namespace actorgrad::detail {
/// Instantiated once, in toy_graph.cpp.
extern template class BasicGraphTask<toy::ToyGraph>;
} // namespace actorgrad::detail
