#include "actorgrad/libengine/engine/detail/actorgrad_graph.h"

#include <algorithm>

#include "actorgrad/libengine/autograd/graph_root.h"
#include "actorgrad/libengine/engine/detail/basic_graph_task_impl.h"
#include "actorgrad/libengine/engine/detail/call_hooks.h"
#include "actorgrad/libengine/engine/detail/node_call.h"
#include "actorgrad/libengine/engine/detail/stream_sync.h"
#include "actorgrad/libengine/engine/errors.h"
#include "actorgrad/libengine/tensor/kernels.h"
#include "actorgrad/libengine/tensor/pending_reads.h"
#include "actorgrad/libengine/tensor/tensor_impl.h"

namespace actorgrad::detail {

template class BasicGraphTask<ActorgradGraph>;

NodeInfo ActorgradGraph::describe(const Node& n) {
  return {&n, n.name(), n.sequence_nr(), n.device(),
          n.stream() ? static_cast<int>(n.stream()->id) : 0};
}

namespace {

// An input of a node on `s` that another holder keeps (another consumer's
// buffer), who may add into it in place once the node dropped it.
bool shared_on(const Tensor& t, Stream s) {
  return t.defined() && (t.use_count() > 1 || t.impl()->storage.use_count() > 1) &&
         t.device() == s.device;
}

} // namespace

void ActorgradGraph::record_stream_reads(const Node& fn, const variable_list& inputs) {
  // Note [Pending reads]: the node's kernels read these inputs on its stream;
  // recorded while the node still holds them, before any holder can add in place.
  const Stream stream = *fn.stream();
  for (const Tensor& t : inputs)
    if (shared_on(t, stream))
      record_async_read(t, stream);
}

void ActorgradGraph::call_tensor_pre_hooks(Node& fn, variable_list& inputs) {
  detail::call_tensor_pre_hooks(fn, inputs); // call_hooks.h
}

bool ActorgradGraph::has_nan(const Tensor& t) { return t.defined() && kernels::any_nan(t); }

std::string ActorgradGraph::nan_message(const Node& fn, std::size_t output) {
  return "Function '" + fn.name() + "' returned nan values in its " + std::to_string(output) +
         "th output.";
}

void ActorgradGraph::rethrow_in_node(const Node& fn, const std::exception& e) {
  throw EngineError("in node " + fn.name() + " (sequence_nr " + std::to_string(fn.sequence_nr()) +
                    "): " + e.what());
}

ActorgradGraph::in_flight ActorgradGraph::make_in_flight(const Node& producer, const Node& consumer,
                                                         Tensor&& grad) {
  std::optional<Stream> stream = producer_stream(producer.stream(), grad);
  in_flight f{std::move(grad), stream};
  // The receiver orders its accumulation stream after this point of the
  // producer's stream, not after whatever the producer enqueued since. It
  // makes the same plan from the same devices and streams (the consumer's
  // stream is fixed when the graph is built), and it waits for the
  // producer's stream only from another stream: only then is the event
  // read (wait_for_stream). Between devices' default streams a gradient is
  // accumulated on its producer's stream (Note [Accumulation streams]):
  // there the event, a sim backend record (a lock and a stream lookup), was
  // made for nothing, about 330 instructions of a hop under callgrind.
  if (f.producer && f.grad.defined() && stream_sync_enabled()) {
    const AccumulationPlan plan = plan_accumulation(f.grad.device(), f.producer, consumer.stream());
    if (plan.wait_for == f.producer && plan.accumulate != f.producer)
      f.ready.record(*f.producer);
  }
  return f;
}

void ActorgradGraph::accumulate(InputBuffer& buffer, const Node& consumer, std::uint32_t pos,
                                Tensor&& grad, const source& from, bool create_graph) {
  if (buffer.empty())
    buffer.make_slots(consumer.num_inputs());
  if (buffer.add_plain(pos, grad))
    return;
  AutoGradMode mode(create_graph);
  buffer.add(pos, std::move(grad), from.producer, consumer.stream(), from.ready);
}

std::shared_ptr<Node> ActorgradGraph::make_graph_root(const edge_list& roots,
                                                      const variable_list& grads) {
  return make_node<GraphRoot>(roots, grads);
}

// Note [The root's slot list]
// A call's list of root gradients is made for the call (make_grads, or the
// caller's own copy) and would be freed as the call ends, while the root's
// buffer needed a slot list of its own. With one root of one input, the
// list has exactly the root's one slot, so the buffer takes it. That saves
// a list where the thread has no spare one: a call nested deeper than the
// spare lists go (Note [Recycled input lists]), and a root that runs on
// another thread than the caller's, whose spare lists are the device's
// (the caller's lists would all cross to that thread and never come back).
InputBuffer ActorgradGraph::make_root_buffer(const Node& root, std::uint32_t input_nr,
                                             variable_list&& grads) {
  Tensor grad = std::move(grads[0]);
  InputBuffer buffer;
  if (root.num_inputs() == grads.size())
    buffer = InputBuffer(std::move(grads)); // its one slot is empty: grad moved out
  else
    buffer.make_slots(root.num_inputs()); // the list a node of this thread last spent
  std::optional<Stream> producer;
  if (grad.defined() && has_streams(grad.device()))
    producer = current_stream(grad.device());
  buffer.add(input_nr, std::move(grad), producer, root.stream());
  return buffer;
}

void ActorgradGraph::order_root_grads(const variable_list& grads) {
  for (const Tensor& g : grads)
    if (g.defined() && has_streams(g.device()))
      wait_for_stream(default_stream(g.device()), current_stream(g.device()));
}

// -- task_streams ------------------------------------------------------------

void ActorgradGraph::task_streams::note_leaf(const Node& fn) {
  const auto& s = fn.stream();
  if (s && std::find(leaf_streams_.begin(), leaf_streams_.end(), *s) == leaf_streams_.end())
    leaf_streams_.push_back(*s);
}

void ActorgradGraph::task_streams::stash(const DeviceList& devices,
                                         const variable_list& root_grads) {
  auto stash_one = [this](Device d) {
    if (!has_streams(d))
      return;
    for (const Stream& s : caller_streams_)
      if (s.device == d)
        return;
    caller_streams_.push_back(current_stream(d));
  };
  for (Device d : devices)
    stash_one(d);
  for (const Stream& s : leaf_streams_)
    stash_one(s.device);
  for (const Tensor& g : root_grads)
    if (g.defined())
      stash_one(g.device());
}

void ActorgradGraph::task_streams::sync() const {
  for (const Stream& leaf : leaf_streams_)
    for (const Stream& caller : caller_streams_)
      if (caller.device == leaf.device)
        wait_for_stream(caller, leaf);
}

} // namespace actorgrad::detail
