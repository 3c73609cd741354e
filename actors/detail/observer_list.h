#pragma once
/// @file observer_list.h
/// Several observers watching one engine as one. Internal.

#include <memory>
#include <vector>

#include "actorgrad/actors/observer.h"

namespace actorgrad::detail {

/// Tells each of its observers everything, in their order; fixed once made
/// (EngineObservers makes a new one when the engine's observers change, and
/// a running GraphTask keeps the one it started with).
///
/// A message carries one id (msg::Grad::trace and the like): the last
/// nonzero one an observer returned from message_sent, which every
/// observer then receives in message_received. The recorder of
/// Engine::start_recording is always last, so a recording's sends and
/// receipts pair up whatever the observers before it return. A launch's
/// run (work_launched) is reported to every observer that asked for it.
class ObserverList final : public EngineObserver {
public:
  /// Two or more observers, none null.
  explicit ObserverList(std::vector<std::shared_ptr<EngineObserver>> observers)
    : observers_(std::move(observers)) {}

  void task_started(const ObservedActor& a, const GraphTaskBase& t) override;
  void task_finished(const ObservedActor& a, const GraphTaskBase& t) override;
  void node_ready(const ObservedActor& a, const GraphTaskBase& t, const NodeInfo& n) override;
  void node_fed(const ObservedActor& a, const GraphTaskBase& t, const NodeInfo& n,
                std::uint32_t input_nr) override;
  void node_started(const ObservedActor& a, const GraphTaskBase& t, const NodeInfo& n) override;
  void node_finished(const ObservedActor& a, const GraphTaskBase& t, const NodeInfo& n) override;
  std::uint64_t message_sent(const ObservedActor& a, const GraphTaskBase& t,
                             trace::MessageKind kind, const NodeInfo& n,
                             std::uint32_t input_nr) override;
  void message_received(const ObservedActor& a, const GraphTaskBase& t, trace::MessageKind kind,
                        const NodeInfo& n, std::uint64_t id, std::uint32_t input_nr) override;
  DeviceRun work_launched(const ObservedActor& a, const GraphTaskBase& t, const NodeInfo& n,
                          const DeviceLaunch& work) override;
  void fresh_stack(const ObservedActor& a, const GraphTaskBase& t) override;
  void error(const ObservedActor& a, const GraphTaskBase& t, std::exception_ptr e) override;
  void remote_message(const ObservedActor& a, const RemoteMessage& m) override;

private:
  /// Calls `event` on every observer, in order.
  template <class Event>
  void tell_each(Event event) {
    for (const auto& o : observers_)
      event(*o);
  }

  const std::vector<std::shared_ptr<EngineObserver>> observers_;
};

} // namespace actorgrad::detail
