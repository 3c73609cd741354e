#pragma once
/// @file torch_graph.h
/// libtorch's torch::autograd::Node graphs as a graph type of the scheduler
/// (see Note [Graph interface]): the actor engine runs libtorch's own nodes,
/// with no mirror object per node.

#include <c10/core/AutogradState.h>
#include <torch/csrc/autograd/function.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "actorgrad/libengine/engine/detail/basic_graph_task.h"
#include "actorgrad/libengine/engine/graph_task_base.h"

namespace actorgrad {

/// The GraphTraits of torch::autograd::Node, Edge and Variable (CPU: a call
/// that reaches another device is given to libtorch's engine whole; see
/// actors/torch/detail/bridge_engine.h).
struct TorchGraph {
  using node = ::torch::autograd::Node;
  using edge = ::torch::autograd::Edge;
  using value = at::Tensor;
  using value_list = std::vector<at::Tensor>;
  /// One node's inputs as they add up (libtorch's InputBuffer, whose
  /// methods libtorch does not export: input_buffer.h).
  using input_buffer = std::vector<at::Tensor>;
  struct source {};
  struct in_flight {
    at::Tensor grad;
  };
  /// No streams on the CPU.
  struct task_streams {
    void note_leaf(const node&) {}
    void stash(const DeviceList&, const value_list&) {}
    void sync() const {}
  };
  /// The state a node of a call runs in (see Note [Per-thread call
  /// state]): switched only when the thread's last node belonged to
  /// another call.
  class run_scope {
  public:
    run_scope(GraphTaskBase& task, const node&) {
      if (!is_current(task)) [[unlikely]]
        switch_to(task);
    }

  private:
    static bool is_current(const GraphTaskBase& task);
    static void switch_to(GraphTaskBase& task);
  };

  /// Input vectors a call's nodes are done with, kept for its next input
  /// buffers: a node with k next nodes makes up to k buffers at once.
  class spare_buffers {
  public:
    /// Swaps a kept vector into `empty` (which has no room), if there is one.
    void take(std::vector<at::Tensor>& empty) {
      if (count_)
        empty.swap(pool_[--count_]);
    }
    /// Keeps `v` (emptied; it keeps a vector without room) if there is room.
    void give(std::vector<at::Tensor>& v) {
      if (count_ == pool_.size())
        return;
      v.clear();
      v.swap(pool_[count_++]);
    }

  private:
    std::array<std::vector<at::Tensor>, 4> pool_;
    std::size_t count_ = 0;
  };

  /// What a node needs of its call, set per thread (see Note [Per-thread
  /// call state]).
  struct call_state {
    /// The call whose state is set on this thread (null: none), and its id:
    /// a later call may reuse the task's block (RecyclingAllocator), and a
    /// worker thread, which no call_scope restores between calls, must not
    /// take it for the call it last ran (Note [Per-thread call state]).
    const GraphTaskBase* task = nullptr;
    std::uint64_t task_id = 0;
    /// Whether its nodes keep their saved variables (keep_graph).
    bool keep_graph = true;
    /// Whether RecordFunction callbacks were registered when it was set.
    bool record = false;
    /// Whether its nodes are called with the checks that user code or
    /// anomaly mode needs (call_checked in torch_graph.cpp).
    bool checked = false;
    /// This thread's autograd flags in libc10 (set with the call): the
    /// grad mode a node left is read without a thread-local lookup.
    c10::AutogradState* autograd = nullptr;
    /// The innermost call_scope's spare buffers (null outside a call).
    spare_buffers* spare = nullptr;
  };

  /// Around one call's whole run on this thread: names off (libtorch's
  /// NoNamesGuard), and afterwards this thread's grad mode, current task
  /// and call state as before (see Note [Per-thread call state]).
  class call_scope {
  public:
    call_scope();
    ~call_scope();
    call_scope(const call_scope&) = delete;
    call_scope& operator=(const call_scope&) = delete;

  private:
    /// A node's input vector kept for the next buffer of the call.
    spare_buffers spare_;
    /// What this thread had before.
    call_state saved_;
    GraphTaskBase* current_;
    bool grad_mode_;
    bool names_;
  };

  static node* target(const edge& e) { return e.function.get(); }
  static const std::shared_ptr<node>& target_handle(const edge& e) { return e.function; }
  static std::uint32_t input_nr(const edge& e) { return e.input_nr; }
  static std::uint64_t sequence_nr(const node& n) { return n.sequence_nr(); }
  static std::uint64_t topological_nr(const node& n) { return n.topological_nr(); }
  static std::size_t num_outputs(const node& n) { return n.num_outputs(); }
  static const edge& next_edge(const node& n, std::size_t i) { return n.next_edge(i); }
  static std::size_t num_inputs(const node& n) { return n.num_inputs(); }
  /// The CPU, unless an input of `n` lives on another device (then the
  /// first such device, as actorgrad names it; cuda:N for any non-CPU
  /// libtorch device, so the call is handed to libtorch's engine).
  static Device device(const node& n) {
    const std::uint32_t k = n.num_inputs();
    for (std::uint32_t i = 0; i < k; ++i)
      if (const auto& d = n.input_metadata(i).device(); !d.is_cpu()) [[unlikely]]
        return Device::cuda(d.has_index() ? d.index() : 0);
    return Device::cpu();
  }
  static NodeInfo describe(const node& n);
  /// The CPU lane that last ran `n` (Note [Lanes that stay] in
  /// actors/detail/cpu_lanes.h), plus one. libtorch's Node has no room for
  /// it, so it is a slot of a table of the process that the node's address
  /// picks: two nodes may share one (a hint, never trusted), and a graph
  /// built again at the same addresses finds its previous placement.
  static detail::LaneHint& lane_hint(const node& n);
  /// Whether calling `n` may run code other than libtorch's own: a hook,
  /// or any node but a generated one (its formulas), AccumulateGrad and
  /// GraphRoot, e.g. a Python or C++ custom Function (see Note [Calls
  /// without a libtorch GraphTask] in actors/torch/detail/bridge_engine.cpp).
  static bool runs_user_code(const node& n);
  /// Whether `n` reads libtorch's current GraphTask, which only the thread
  /// that runs its call's has: user code (queue_callback, needs_input_grad,
  /// nested calls; Note [Nodes that need their call's thread] in
  /// actors/detail/cpu_lanes.h).
  static bool needs_call_thread(const node& n) { return runs_user_code(n); }

  /// libtorch's call_function: pre-hooks -> (will_release_variables) ->
  /// Node::operator() -> validate_outputs -> post-hooks.
  static value_list call_function(node& fn, value_list&& inputs);
  /// libtorch 1.13 has no tensor pre-hooks apart from the pre-hooks.
  static void call_tensor_pre_hooks(node&, value_list&) {}
  static void release_variables(node& fn) { fn.release_variables(); }
  /// The `k`th capture of `fn` (grad(inputs=)) through the capture hooks
  /// registered for it in libtorch's current GraphTask (the call's, see
  /// actors/torch/detail/bridge_engine.h), in order, when it is captured.
  static at::Tensor capture(const node& fn, std::size_t k, at::Tensor&& grad);
  static bool has_nan(const at::Tensor& t);
  /// libtorch's anomaly-mode text.
  static std::string nan_message(const node& fn, std::size_t output);
  /// Rethrows the exception being handled, of the same type, naming `fn`
  /// (see Note [Errors keep their type]).
  [[noreturn]] static void rethrow_in_node(const node& fn, const std::exception& e);

  static value_list&& take_inputs(input_buffer&& b) { return std::move(b); }
  static source local_source(const node&, const at::Tensor&) { return {}; }
  /// The calling thread's at::ThreadLocalState, which a node of the call
  /// run on another thread runs under (Note [Caller state on CPU workers]).
  static std::shared_ptr<void> capture_caller_locals();
  static in_flight make_in_flight(const node&, const node&, at::Tensor&& grad) {
    return {std::move(grad)};
  }
  static at::Tensor& sent_value(in_flight& f) { return f.grad; }
  static source sent_source(const in_flight&) { return {}; }
  /// Adds `grad` into slot `pos` of `buffer` (libtorch's InputBuffer::add).
  static void accumulate(input_buffer& buffer, const node& consumer, std::uint32_t pos,
                         at::Tensor&& grad, const source&, bool create_graph);

  /// libtorch's GraphRoot for a call with several roots.
  static std::shared_ptr<node> make_graph_root(const std::vector<edge>& roots,
                                               const value_list& grads);
  /// A single root's buffer holding `grads[0]`; a root of one input takes
  /// `grads` itself as its slots (Note [The root's slot list]).
  static input_buffer make_root_buffer(const node& root, std::uint32_t input_nr,
                                       value_list&& grads);
  static void order_root_grads(const value_list&) {}
};

/// One backward call over a libtorch graph.
using TorchGraphTask = detail::BasicGraphTask<TorchGraph>;

/// Instantiated once, in torch_graph.cpp.
extern template class detail::BasicGraphTask<TorchGraph>;

} // namespace actorgrad
