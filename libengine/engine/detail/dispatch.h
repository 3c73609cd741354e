#pragma once
/// @file dispatch.h
/// Where a GraphTask sends the work its nodes produce: the executor's side
/// of Note [Graph interface].
/// Internal (libengine/engine/detail/, not installed).

#include <cstdint>
#include <memory>

#include "actorgrad/device/device.h"
#include "actorgrad/libengine/engine/detail/ready_task.h"
#include "actorgrad/libengine/engine/detail/sent_value.h"
#include "actorgrad/libengine/engine/graph_task_base.h"

namespace actorgrad::detail {

/// A fresh QueueId (never 0).
QueueId new_queue_id();

/// The place of one gradient in the fixed order in which a node's inputs
/// add up when they come from several threads (Note [Parallel CPU nodes]
/// in actors/detail/cpu_lanes.h): its producer's number in the task's
/// dependency walk (a function of the graph alone: sequence numbers are
/// per thread in libtorch, and a graph that create_graph built on several
/// threads has them in an order set by timing), then the producer's output
/// number. One word, so that a SentGrad keeps its size (Note [Per-node
/// messages share a heap size class]).
struct InputOrder {
  std::uint64_t key = 0;

  InputOrder() = default;
  InputOrder(std::uint32_t producer, std::uint32_t output_nr)
    : key((std::uint64_t{producer} << 32) | output_nr) {}
  /// Whether this gradient adds up before `o`.
  bool before(const InputOrder& o) const { return key < o.key; }
};

/// A gradient on its way to the actor that owns its consumer node
/// (the content of the actor engine's msg::Grad besides the task).
struct SentGrad {
  /// The consumer node (an owning handle of the GraphTask's node type).
  std::shared_ptr<void> node;
  std::uint32_t input_nr = 0;
  /// The device whose actor owns `node`.
  Device owner;
  /// Where the gradient sorts among the node's others, for a task whose
  /// CPU nodes spread over threads (Note [Parallel CPU nodes]).
  InputOrder order{};
  /// The gradient with what its receiver must wait for (the graph's
  /// in-flight value type; see Note [Graph interface]).
  SentValue value;
};

/// The executor's side of a running node: a GraphTask routes each output
/// gradient either into a node this executor owns (then `ready` gets the
/// node once its inputs are complete) or to its owner (`send`).
class Dispatch {
public:
  virtual ~Dispatch() = default;

  /// Whether the nodes of device `d` of `task` are run here, so that their
  /// state may be touched here (see Note [Node state ownership]).
  bool owns(QueueId task_cpu_queue, Device d) const {
    return owns_all_ || (d.is_cpu() ? task_cpu_queue == queue_ : d == device_);
  }
  /// A node of `t.graph_task` owned here has all its inputs.
  virtual void ready(ReadyTask&& t) = 0;
  /// A gradient of `task` for a node owned by another actor.
  virtual void send(const std::shared_ptr<GraphTaskBase>& task, SentGrad&& g) = 0;
  /// A node of `t` returned and its outputs route now: the ready() and
  /// send() calls until routed() are its routing's (no node runs in
  /// between). Lets an executor count them at once (Note [A node passes its
  /// hold on] in actors/detail/runner.cpp).
  virtual void routing(const ReadyTask& t) {}
  /// The routing that routing() began ended (also when it threw).
  virtual void routed() {}
  /// Whether fed() wants to hear about local deliveries (observers).
  bool wants_feeds() const { return wants_feeds_; }
  /// The running node delivered input `input_nr` of `node` here, without a message.
  virtual void fed(const GraphTaskBase& task, const void* node, std::uint32_t input_nr) {}

protected:
  /// Owns every node (one-thread executors).
  bool owns_all_ = false;
  bool wants_feeds_ = false;
  /// The queue this executor serves and its device (cpu for a coordinator).
  QueueId queue_ = 0;
  Device device_;
};

} // namespace actorgrad::detail
