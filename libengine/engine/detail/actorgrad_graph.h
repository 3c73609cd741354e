#pragma once
/// @file actorgrad_graph.h
/// actorgrad's own Node graphs as a graph type of the scheduler (see Note
/// [Graph interface]).
/// Internal (libengine/engine/detail/, not installed).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "actorgrad/device/event.h"
#include "actorgrad/device/guards.h"
#include "actorgrad/libengine/autograd/grad_mode.h"
#include "actorgrad/libengine/autograd/node.h"
#include "actorgrad/libengine/engine/detail/current_graph_task.h"
#include "actorgrad/libengine/engine/detail/graph_interface.h"
#include "actorgrad/libengine/engine/detail/input_buffer.h"
#include "actorgrad/libengine/engine/detail/node_call.h"
#include "actorgrad/libengine/engine/detail/node_table.h"
#include "actorgrad/libengine/engine/graph_task_base.h"

namespace actorgrad::detail {

/// The GraphTraits of actorgrad's Node, Edge and Tensor.
struct ActorgradGraph {
  using node = Node;
  using edge = Edge;
  using value = Tensor;
  using value_list = variable_list;
  using input_buffer = InputBuffer;

  /// Where a gradient was produced: its producer stream (producer_stream(),
  /// Note [Producer streams]) and, for a gradient that crossed actors, the
  /// event recorded there after it.
  struct source {
    std::optional<Stream> producer;
    const Event* ready;
  };
  /// A gradient crossing actors: the receiver's accumulation stream waits
  /// for `ready`, recorded on `producer` right after `grad` was produced
  /// when that wait is across streams (see make_in_flight).
  struct in_flight {
    Tensor grad;
    std::optional<Stream> producer;
    Event ready{};
  };

  /// Per-call stream bookkeeping (PyTorch's leaf_streams and
  /// caller_current_streams_).
  class task_streams {
  public:
    /// A node that ends the graph (AccumulateGrad, or a captured node):
    /// the results are written on its stream.
    void note_leaf(const Node& fn);
    /// Remembers the caller's current stream of every device the call
    /// touches, when it starts.
    void stash(const DeviceList& devices, const variable_list& root_grads);
    /// Makes the caller's streams wait for the leaf streams.
    void sync() const;

  private:
    /// Streams of one call, one per device (the first two inline).
    using StreamList = boost::container::small_vector<Stream, 2>;
    StreamList leaf_streams_;
    StreamList caller_streams_;
  };

  /// The guards around running a node: current task, grad mode (on under
  /// create_graph) and the node's stream (see Note [Accumulation streams]).
  class run_scope {
  public:
    run_scope(GraphTaskBase& task, const Node& fn)
      : current_(&task), grad_mode_(task.options.create_graph), stream_(fn.stream()) {}

  private:
    CurrentGraphTaskGuard current_;
    AutoGradMode grad_mode_;
    OptionalStreamGuard stream_;
  };

  static Node* target(const Edge& e) { return e.function.get(); }
  static const std::shared_ptr<Node>& target_handle(const Edge& e) { return e.function; }
  static std::uint32_t input_nr(const Edge& e) { return e.input_nr; }
  static std::uint64_t sequence_nr(const Node& n) { return n.sequence_nr(); }
  static std::uint64_t topological_nr(const Node& n) { return n.topological_nr(); }
  static std::size_t num_outputs(const Node& n) { return n.num_outputs(); }
  static const Edge& next_edge(const Node& n, std::size_t i) { return n.next_edges()[i]; }
  static std::size_t num_inputs(const Node& n) { return n.num_inputs(); }
  static Device device(const Node& n) { return n.device(); }
  static NodeHint& table_hint(const Node& n) { return n.table_hint(); }
  static LaneHint& lane_hint(const Node& n) { return n.last_lane(); }
  static bool topological_order_edited() { return Node::topological_order_edited(); }
  static NodeInfo describe(const Node& n);

  /// Tensor pre-hooks -> pre-hooks -> apply -> validate_outputs -> post-hooks.
  static variable_list call_function(Node& fn, variable_list&& inputs) {
    if (fn.stream()) [[unlikely]]
      record_stream_reads(fn, inputs);
    return call_node(fn, std::move(inputs));
  }
  /// The tensor pre-hooks alone (a node that only captures).
  static void call_tensor_pre_hooks(Node& fn, variable_list& inputs);
  static void release_variables(Node& fn) { fn.release_variables(); }
  static bool has_nan(const Tensor& t);
  static std::string nan_message(const Node& fn, std::size_t output);
  /// Rethrows `e` as an EngineError naming `fn`.
  [[noreturn]] static void rethrow_in_node(const Node& fn, const std::exception& e);

  static variable_list take_inputs(InputBuffer&& b) { return InputBuffer::variables(std::move(b)); }
  /// The input list after the node's call, kept for the next buffer.
  static void recycle_inputs(variable_list&& inputs) { InputBuffer::recycle(std::move(inputs)); }
  static source local_source(const Node& producer, const Tensor& grad) {
    // A CPU node's CPU gradient has no producer stream (the common case, without a call).
    if (!producer.stream() && grad.defined() && grad.impl()->storage->device.is_cpu())
      return {std::nullopt, nullptr};
    return {producer_stream(producer.stream(), grad), nullptr};
  }
  static in_flight make_in_flight(const Node& producer, const Node& consumer, Tensor&& grad);
  static Tensor& sent_value(in_flight& f) { return f.grad; }
  static source sent_source(const in_flight& f) { return {f.producer, &f.ready}; }
  /// Adds `grad` into slot `pos` of `buffer`, the inputs of `consumer`,
  /// following PyTorch's stream cases (InputBuffer::add), out of place
  /// under create_graph.
  static void accumulate(InputBuffer& buffer, const Node& consumer, std::uint32_t pos,
                         Tensor&& grad, const source& from, bool create_graph);

  /// The GraphRoot of a call with several roots.
  static std::shared_ptr<Node> make_graph_root(const edge_list& roots, const variable_list& grads);
  /// The input buffer of a single root: its gradient, `grads[0]` (the
  /// call's one root gradient), made on the caller's current stream (case
  /// (1) of InputBuffer::add). A root with one input takes `grads` itself as
  /// its slot list (Note [The root's slot list]).
  static InputBuffer make_root_buffer(const Node& root, std::uint32_t input_nr,
                                      variable_list&& grads);
  /// A GraphRoot's outputs have no producer stream and are ordered after the
  /// default stream (case (2)), so the default stream waits for the caller's.
  static void order_root_grads(const variable_list& grads);

private:
  /// Note [Pending reads]: records the reads of `inputs` that `fn`'s kernels
  /// will make on its stream, for the inputs another holder keeps.
  static void record_stream_reads(const Node& fn, const variable_list& inputs);
};

} // namespace actorgrad::detail
