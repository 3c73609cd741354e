#pragma once
/// @file observation.h
/// What an engine actor tells the observers of a task about its messages
/// and the device work its nodes launch. Internal.

#include <cstdint>

#include "actorgrad/actors/detail/task_context.h"
#include "actorgrad/actors/messages.h"
#include "actorgrad/actors/observer.h"
#include "actorgrad/device/launch_observer.h"

namespace actorgrad::detail {

/// The observer of `task` (all of the engine's observers as one when it
/// started), or null: the one branch an unobserved task pays per event.
inline EngineObserver* observer_of(const GraphTaskBase& task) {
  return context_of(task).observer.get();
}

/// A message as an observer is told of it: its kind, the node it is about
/// (null: none) and the input of that node it feeds.
struct MessageEvent {
  trace::MessageKind kind;
  const void* node = nullptr;
  std::uint32_t input_nr = 0;
};

inline MessageEvent event_of(const msg::Grad& m) {
  return {trace::MessageKind::grad, m.grad.node.get(), m.grad.input_nr};
}
inline MessageEvent event_of(const msg::Task& m) {
  return {trace::MessageKind::task, m.task.node.get(), 0};
}
inline MessageEvent event_of(const msg::WakeUp&) { return {trace::MessageKind::wake_up}; }

/// Tells `observer` that `actor` sends `m` (about `task`), and writes the
/// id it gives into `m.trace`, which pairs the receipt with the send.
template <class Message>
void observe_sent(EngineObserver& observer, const ObservedActor& actor, const GraphTaskBase& task,
                  Message& m) {
  const MessageEvent e = event_of(m);
  m.trace = observer.message_sent(actor, task, e.kind, e.node ? task.describe(e.node) : NodeInfo{},
                                  e.input_nr);
}

/// Tells `observer` that `actor` took `m` (about `task`) from its mailbox.
template <class Message>
void observe_received(EngineObserver& observer, const ObservedActor& actor,
                      const GraphTaskBase& task, const Message& m) {
  const MessageEvent e = event_of(m);
  observer.message_received(actor, task, e.kind, e.node ? task.describe(e.node) : NodeInfo{},
                            m.trace, e.input_nr);
}

/// Passes the device work a running node launches to the task's observer
/// (Note [Stream tracks] in actors/trace/recorder.h).
class NodeLaunches final : public LaunchObserver {
public:
  NodeLaunches(EngineObserver& observer, const ObservedActor& actor, const GraphTaskBase& task,
               const NodeInfo& node)
    : observer_(observer), actor_(actor), task_(task), node_(node) {}

  DeviceRun launched(const DeviceLaunch& work) override {
    return observer_.work_launched(actor_, task_, node_, work);
  }

private:
  EngineObserver& observer_;
  const ObservedActor& actor_;
  const GraphTaskBase& task_;
  const NodeInfo& node_;
};

} // namespace actorgrad::detail
