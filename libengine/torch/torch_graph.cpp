#include "actorgrad/libengine/torch/torch_graph.h"

#include <ATen/ATen.h>
#include <ATen/SequenceNumber.h>
#include <ATen/TensorIterator.h>
#include <ATen/TensorSubclassLikeUtils.h>
#include <ATen/ThreadLocalState.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/anomaly_mode.h>
#include <torch/csrc/autograd/functions/accumulate_grad.h>
#include <torch/csrc/autograd/functions/basic_ops.h>
#include <torch/csrc/autograd/graph_task.h>

#include <Eigen/Core>

#include <algorithm>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <typeinfo>

#include "actorgrad/libengine/engine/detail/address_hash.h"
#include "actorgrad/libengine/engine/detail/basic_graph_task_impl.h"
#include "actorgrad/libengine/engine/detail/current_graph_task.h"
#include "actorgrad/libengine/engine/errors.h"
#include "actorgrad/libengine/torch/validate_outputs.h"

namespace actorgrad {

template class detail::BasicGraphTask<TorchGraph>;

namespace {

// Note [Per-thread call state]
// libtorch's engine sets a graph task's thread-local state around every node
// (ThreadLocalStateGuard, GraphTaskGuard, NoNamesGuard and the RecordFunction
// check in Node::operator()): about 1,000 instructions a node, mostly
// __tls_get_addr calls into libc10 and libtorch. The bridge runs every node
// of a call on the thread that runs the call's Trampoline (the caller's
// runner; a reentrant call's nodes and its parent's interleave there), and
// consecutive nodes nearly always belong to one call. So what a node needs of
// its call is set only when the thread's previous node belonged to another
// call (run_scope), and call_scope, around a call's whole run, sets names off
// once and puts everything back afterwards: actorgrad's current task (the
// reentrant depth, queue_callback), grad mode (on under create_graph),
// whether nodes keep their saved variables, and whether RecordFunction
// callbacks (the torch profiler) want BACKWARD_FUNCTION events, checked when
// the state is set: then nodes are called through Node::operator(), else
// through apply(). A node that changes the thread's grad mode and leaves it
// changed (a custom backward calling torch.set_grad_enabled) must not pass
// it on: libtorch's guard restores the mode after every node, and a leaf
// would otherwise get a .grad with a graph. Only user code can do that (a
// hook, a custom Function; libtorch's own nodes use guards), so in a call
// whose graph has some (runs_user_code) every node is followed by a check
// of the mode, which puts the call's back (call_checked), reading libc10's
// thread-local flags through a pointer kept in the call state.
/// Written and read by its own thread only; read for every node (Note
/// [Thread-locals in shared objects] in CMakeLists.txt).
thread_local TorchGraph::call_state this_thread;

/// Calls `fn` with RecordFunction callbacks registered: the profiler's
/// per-node event of libtorch's engine around Node::operator(), which adds
/// the node's BACKWARD_FUNCTION event.
[[gnu::noinline]] ::torch::autograd::variable_list
call_recorded(::torch::autograd::Node& fn, ::torch::autograd::variable_list&& in) {
  RECORD_FUNCTION(c10::str("autograd::engine::evaluate_function: ", fn.name()),
                  c10::ArrayRef<const c10::IValue>());
  return fn(std::move(in));
}

/// Calls the node's apply() directly (it is protected in Node).
struct NodeApply : ::torch::autograd::Node {
  static ::torch::autograd::variable_list call(Node& fn, ::torch::autograd::variable_list&& in) {
    return (fn.*&NodeApply::apply)(std::move(in));
  }
};

/// Makes `fn` the anomaly-mode parent of the nodes its call made (sequence
/// numbers from `first` on) that its outputs reach: the node whose forward
/// traceback anomaly mode prints after theirs ("Previous calculation was
/// induced by"). libtorch's engine sets the node it runs as the thread's
/// evaluating node, which a node made meanwhile takes as its parent; that
/// guard is not exported, so the bridge's one libtorch node (the
/// Trampoline) was every such node's parent.
[[gnu::cold, gnu::noinline]] void adopt_new_nodes(::torch::autograd::Node& fn,
                                                  const TorchGraph::value_list& outputs,
                                                  std::uint64_t first) {
  const std::uint64_t end = at::sequence_number::peek();
  const std::shared_ptr<::torch::autograd::Node> parent = fn.shared_from_this();
  std::vector<::torch::autograd::Node*> stack, seen;
  const auto visit = [&](::torch::autograd::Node* n) {
    if (n && n->sequence_nr() >= first && n->sequence_nr() < end &&
        std::find(seen.begin(), seen.end(), n) == seen.end()) {
      seen.push_back(n);
      stack.push_back(n);
    }
  };
  for (const auto& t : outputs)
    if (t.defined())
      visit(t.grad_fn().get());
  while (!stack.empty()) {
    ::torch::autograd::Node* n = stack.back();
    stack.pop_back();
    n->metadata()->assign_parent(parent);
    for (const auto& e : n->next_edges())
      visit(e.function.get());
  }
}

/// call_function for `state`'s call (below). Forced inline: as a call of
/// its own it cost 20 instructions a node more.
[[gnu::always_inline]] inline TorchGraph::value_list
call_with(::torch::autograd::Node& fn, TorchGraph::value_list&& inputs,
          const TorchGraph::call_state& state) {
  for (const auto& hook : fn.pre_hooks())
    inputs = (*hook)(inputs);
  if (!state.keep_graph)
    fn.will_release_variables();
  const auto call = [&fn, &state](TorchGraph::value_list&& in) {
    return state.record ? call_recorded(fn, std::move(in)) : NodeApply::call(fn, std::move(in));
  };
  // Note [AccumulateGrad steals its input]
  // libtorch's AccumulateGrad reuses the incoming gradient instead of
  // cloning it when no one else holds it, counting one extra reference when
  // the node has post-hooks (num_expected_refs in accumulate_grad.h): the
  // engine's copy of the inputs, which it keeps only then. So do we.
  const bool post_hooks = !fn.post_hooks().empty();
  TorchGraph::value_list outputs =
    post_hooks ? call(TorchGraph::value_list(inputs)) : call(std::move(inputs));
  torch::detail::validate_outputs(fn.next_edges(), outputs, &fn);
  if (post_hooks) [[unlikely]]
    for (const auto& hook : fn.post_hooks())
      outputs = (*hook)(outputs, inputs);
  // A node's input vector, kept for the next buffers this call makes: one
  // allocation a node fewer.
  if (state.spare)
    state.spare->give(inputs);
  return outputs;
}

/// call_with for a call whose graph runs user code (a hook, a custom
/// Function) or that runs in anomaly mode: afterwards the call's grad mode
/// is put back, whatever the node left (Note [Per-thread call state]), and
/// in anomaly mode the node adopts the nodes it made (adopt_new_nodes).
/// libtorch's own nodes leave grad mode as they found it, so a call of
/// those alone skips both checks.
[[gnu::noinline]] TorchGraph::value_list call_checked(::torch::autograd::Node& fn,
                                                      TorchGraph::value_list&& inputs,
                                                      const TorchGraph::call_state& state) {
  const GraphTaskBase& task = *state.task;
  const std::uint64_t first_new_node = task.anomaly ? at::sequence_number::peek() : 0;
  TorchGraph::value_list outputs = call_with(fn, std::move(inputs), state);
  if (state.autograd->get_grad_mode() != task.options.create_graph)
    state.autograd->set_grad_mode(task.options.create_graph);
  if (task.anomaly)
    adopt_new_nodes(fn, outputs, first_new_node);
  return outputs;
}

/// A plain dense tensor that only its input buffer holds: one that no one
/// can see changed (libtorch 2's can_accumulate_inplace).
bool sole_plain_tensor(const at::Tensor& v) {
  return !(at::isTensorSubclassLike(v) || v._is_zerotensor() || v.is_nested()) &&
         v.is_non_overlapping_and_dense() && v.use_count() == 1 && v.has_storage() &&
         v.storage().use_count() == 1;
}

// Note [Small in-place accumulation]
// A gradient that fans in adds to its buffer's with libtorch's old + grad
// (Note [Accumulation in place as libtorch 1.13 decides]): about 2,000
// instructions through the dispatcher and an allocation for a tensor of a
// few elements, more than all the rest of the engine's work for a node.
// For what that call would run as one plain loop (dense contiguous CPU
// float/double tensors of the same shape and type, no views with
// negative/conjugate bits, fewer elements than libtorch's parallel grain)
// Eigen adds instead, into the buffer's tensor when no one else holds it
// (sole_plain_tensor: no one can tell the sum from a new tensor):
// element by element a + b, as libtorch's kernel computes a + 1 * b (its
// vectorized form is fma(b, 1, a): the same single rounding), so the
// result is bitwise the same, with the same shape, dtype and contiguous
// strides; the version counter is bumped as add_ bumps it. Not while a
// profiler listens (RecordFunction callbacks): it records libtorch's add.
template <class T>
void add_into(at::Tensor& old, const at::Tensor& grad) {
  const auto n = static_cast<Eigen::Index>(old.numel());
  // unsafe_data: both have storage and a floating dtype (small_add_ checked).
  Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>(old.unsafeGetTensorImpl()->unsafe_data<T>(), n) +=
    Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>(
      grad.unsafeGetTensorImpl()->unsafe_data<T>(), n);
  old.unsafeGetTensorImpl()->bump_version();
}

/// A dense contiguous CPU tensor with storage and no neg/conj bit: what
/// add_'s plain loop reads and writes.
bool plain(const at::Tensor& t) {
  return t.is_cpu() && t.layout() == at::kStrided && !t.is_neg() && !t.is_conj() &&
         t.is_contiguous() && t.has_storage();
}

bool same_sizes(const at::Tensor& a, const at::Tensor& b) {
  const c10::IntArrayRef x = a.unsafeGetTensorImpl()->sizes(), y = b.unsafeGetTensorImpl()->sizes();
  if (x.size() != y.size())
    return false;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (x[i] != y[i])
      return false;
  return true;
}

/// Adds `grad` into `old` as old.add_(grad) would, when it is a plain small
/// loop (Note [Small in-place accumulation]); false: not done. Only for an
/// `old` that may be accumulated in place (sole_plain_tensor, which also
/// answers for the thread's dispatch mode).
bool small_add_(at::Tensor& old, const at::Tensor& grad) {
  const auto type = old.scalar_type();
  if (type != grad.scalar_type() || (type != at::kDouble && type != at::kFloat) ||
      old.numel() > at::internal::GRAIN_SIZE || !same_sizes(old, grad) || !plain(old) ||
      !plain(grad) || !(grad.unsafeGetTensorImpl()->key_set() & at::kTensorSubclassLike).empty() ||
      grad._is_zerotensor())
    return false;
  if (type == at::kDouble)
    add_into<double>(old, grad);
  else
    add_into<float>(old, grad);
  return true;
}

/// Throws an E with `text` if `e` is exactly an E, for the first such E.
template <class... E>
void throw_same_type(const std::exception& e, const std::string& text) {
  ((typeid(e) == typeid(E) ? throw E(text) : void()), ...);
}

} // namespace

bool TorchGraph::run_scope::is_current(const GraphTaskBase& task) {
  return this_thread.task == &task && this_thread.task_id == task.id;
}

// Note [Caller state on CPU workers]
// libtorch's device threads run each node of a call under the caller's
// at::ThreadLocalState (ThreadLocalStateGuard in thread_main): dispatch-key
// exclusions, autocast, inference mode, the profiler's and Python's
// thread-local modes. A spread call's nodes run on CPU worker threads too
// (Note [Parallel CPU nodes] in actors/detail/cpu_lanes.h), so the call
// keeps its caller's state (capture_caller_locals, on the caller's thread,
// before any node runs) and a worker sets it when it switches to the call.
// Only grad mode is then set per call, as on the caller. The caller's own
// thread keeps its state as it is.
namespace {
struct CallerLocals {
  at::ThreadLocalState state;
  std::thread::id thread = std::this_thread::get_id();
};
} // namespace

std::shared_ptr<void> TorchGraph::capture_caller_locals() {
  return std::make_shared<CallerLocals>();
}

void TorchGraph::run_scope::switch_to(GraphTaskBase& task) {
  // run_scope is made by BasicGraphTask<TorchGraph>::evaluate_node only.
  const auto& typed = static_cast<const detail::BasicGraphTask<TorchGraph>&>(task);
  const bool user_code = typed.runs_user_code();
  if (const auto* locals = static_cast<const CallerLocals*>(typed.caller_locals().get()))
    if (locals->thread != std::this_thread::get_id()) // Note [Caller state on CPU workers]
      at::ThreadLocalState::setThreadLocalState(locals->state);
  this_thread = {&task,
                 task.id,
                 task.options.keep_graph,
                 at::hasCallbacks(),
                 task.anomaly || user_code,
                 &c10::AutogradState::get_tls_state(),
                 this_thread.spare};
  detail::set_current_graph_task(&task);
  c10::GradMode::set_enabled(task.options.create_graph);
}

TorchGraph::call_scope::call_scope()
  : saved_(this_thread), current_(detail::current_graph_task()),
    grad_mode_(c10::GradMode::is_enabled()), names_(at::NamesMode::is_enabled()) {
  this_thread.spare = &spare_;
  // libtorch's Node::operator() turns names off around every node.
  at::NamesMode::set_enabled(false);
}

TorchGraph::call_scope::~call_scope() {
  this_thread = saved_;
  detail::set_current_graph_task(current_);
  c10::GradMode::set_enabled(grad_mode_);
  at::NamesMode::set_enabled(names_);
}

bool TorchGraph::runs_user_code(const node& n) {
  if (!n.pre_hooks().empty() || !n.post_hooks().empty())
    return true;
  const std::type_info& type = typeid(n);
  // The mangled prefix of torch::autograd::generated, the formulas'
  // namespace (libtorch's gen_autograd_functions.py).
  static constexpr std::string_view generated = "N5torch8autograd9generated";
  return std::string_view(type.name()).substr(0, generated.size()) != generated &&
         type != typeid(::torch::autograd::AccumulateGrad) &&
         type != typeid(::torch::autograd::GraphRoot);
}

namespace {

/// TorchGraph::lane_hint's table: 16,384 slots of 2 bytes, so that the
/// nodes of a graph of a few thousand rarely share one.
constexpr int kLaneHintBits = 14;
std::array<detail::LaneHint, std::size_t{1} << kLaneHintBits> lane_hints;

} // namespace

detail::LaneHint& TorchGraph::lane_hint(const node& n) {
  return lane_hints[detail::address_hash(&n, 64 - kLaneHintBits)];
}

NodeInfo TorchGraph::describe(const node& n) {
  return {&n, n.name(), n.sequence_nr(), device(n), 0};
}

TorchGraph::value_list TorchGraph::call_function(node& fn, value_list&& inputs) {
  // One thread-local lookup a node: each is a call into glibc in the
  // Python module (Note [Thread-locals in shared objects] in CMakeLists.txt).
  const call_state& state = this_thread;
  if (state.checked) [[unlikely]]
    return call_checked(fn, std::move(inputs), state);
  return call_with(fn, std::move(inputs), state);
}

at::Tensor TorchGraph::capture(const node& fn, std::size_t k, at::Tensor&& grad) {
  auto* infos = ::torch::autograd::get_current_graph_task_exec_info();
  if (!infos)
    return std::move(grad);
  auto it = infos->find(const_cast<node*>(&fn));
  if (it == infos->end() || !it->second.captures_ || k >= it->second.captures_->size())
    return std::move(grad);
  for (const auto& hook : (*it->second.captures_)[k].hooks_)
    grad = (*hook)(grad);
  return std::move(grad);
}

bool TorchGraph::has_nan(const at::Tensor& t) {
  c10::AutoGradMode no_grad(false);
  return t.defined() && at::isnan(t).any().item<bool>();
}

std::string TorchGraph::nan_message(const node& fn, std::size_t output) {
  return "Function '" + fn.name() + "' returned nan values in its " + std::to_string(output) +
         "th output.";
}

// Note [Errors keep their type]
// Programs catch libtorch's errors by type (c10::Error and its subtypes,
// std::runtime_error from anomaly mode), so a node's error leaves the call
// with its own type: a c10::Error gets the node as context (its what() gains
// a line), an exception of a standard <stdexcept> type is thrown again as
// that type with the node in front of its text. Any other type is rethrown
// unchanged (its text cannot be amended without changing its type).
void TorchGraph::rethrow_in_node(const node& fn, const std::exception& e) {
  // libtorch's engine, in anomaly mode, warns with the failing node's
  // forward traceback (GraphTask::set_exception_without_signal).
  if (::torch::autograd::AnomalyMode::is_enabled())
    const_cast<node&>(fn).metadata()->print_stack(fn.name());
  const std::string where =
    "in node " + fn.name() + " (sequence_nr " + std::to_string(fn.sequence_nr()) + ")";
  try {
    throw;
  } catch (c10::Error& err) {
    err.add_context(where);
    throw;
  } catch (const EngineError&) {
    // The scheduler's own checks (anomaly mode's NaN check): libtorch's
    // engine throws a std::runtime_error, with its text when that names the
    // node already.
    const std::string text = e.what();
    throw std::runtime_error(text.find(fn.name()) != std::string::npos ? text
                                                                       : where + ": " + text);
  } catch (...) {
  }
  throw_same_type<std::runtime_error, std::logic_error, std::invalid_argument, std::out_of_range,
                  std::domain_error, std::length_error, std::range_error, std::overflow_error,
                  std::underflow_error>(e, where + ": " + e.what());
  throw;
}

void TorchGraph::accumulate(input_buffer& buffer, const node& consumer, std::uint32_t pos,
                            at::Tensor&& grad, const source&, bool create_graph) {
  // libtorch's InputBuffer::add and accumulate, for the CPU.
  if (buffer.empty()) {
    if (this_thread.spare)
      this_thread.spare->take(buffer);
    buffer.resize(consumer.num_inputs());
  }
  if (!grad.defined())
    return;
  at::Tensor& old = buffer[pos];
  if (!old.defined()) {
    old = std::move(grad);
    return;
  }
  if (!create_graph && !this_thread.record && sole_plain_tensor(old) && small_add_(old, grad))
    return;
  // Note [Accumulation in place as libtorch 1.13 decides]
  // libtorch 1.13's accumulate (input_buffer.cpp) adds in place only where
  // a sparse gradient meets a dense one that only the buffer holds: into
  // the dense one. Two dense gradients are added out of place: in place, a
  // gradient that is a tensor subclass (vmap's BatchedTensor, with more
  // elements than the plain tensor it meets) could not be added into the
  // other, and the sum would keep the strides and dtype of the buffer's
  // gradient instead of add's. Below are its tests in its order, run in
  // the call's grad mode (on under create_graph), as libtorch's are.
  c10::AutoGradMode mode(create_graph);
  if (old.is_sparse()) {
    if (!grad.is_sparse() && grad.is_contiguous() && grad.use_count() == 1 &&
        grad.storage().use_count() == 1)
      old = grad.add_(old);
    else
      old = grad + old;
  } else if (grad.is_sparse() && old.is_contiguous() && old.use_count() == 1 &&
             old.storage().use_count() == 1) {
    old = old.add_(grad);
  } else {
    old = old + grad;
  }
}

std::shared_ptr<TorchGraph::node> TorchGraph::make_graph_root(const std::vector<edge>& roots,
                                                              const value_list& grads) {
  return std::make_shared<::torch::autograd::GraphRoot>(roots, grads);
}

TorchGraph::input_buffer TorchGraph::make_root_buffer(const node& root, std::uint32_t input_nr,
                                                      value_list&& grads) {
  if (root.num_inputs() == grads.size())
    return input_buffer(std::move(grads));
  input_buffer buffer(root.num_inputs());
  buffer[input_nr] = std::move(grads[0]);
  return buffer;
}

} // namespace actorgrad
