#pragma once
/// @file observer_pair.h
/// Two observers as one (the engine's observer and its recorder). Internal.

#include <memory>
#include <utility>

#include "actorgrad/actors/observer.h"

namespace actorgrad::detail {

/// Tells `first` then `second` everything; a message id is `second`'s (the
/// recorder's) when it gives one, and a launch's run is reported to both.
class ObserverPair final : public EngineObserver {
public:
  ObserverPair(std::shared_ptr<EngineObserver> first, std::shared_ptr<EngineObserver> second)
    : first_(std::move(first)), second_(std::move(second)) {}

  void task_started(const ObservedActor& a, const GraphTaskBase& t) override {
    first_->task_started(a, t);
    second_->task_started(a, t);
  }
  void task_finished(const ObservedActor& a, const GraphTaskBase& t) override {
    first_->task_finished(a, t);
    second_->task_finished(a, t);
  }
  void node_ready(const ObservedActor& a, const GraphTaskBase& t, const NodeInfo& n) override {
    first_->node_ready(a, t, n);
    second_->node_ready(a, t, n);
  }
  void node_fed(const ObservedActor& a, const GraphTaskBase& t, const NodeInfo& n,
                std::uint32_t input_nr) override {
    first_->node_fed(a, t, n, input_nr);
    second_->node_fed(a, t, n, input_nr);
  }
  void node_started(const ObservedActor& a, const GraphTaskBase& t, const NodeInfo& n) override {
    first_->node_started(a, t, n);
    second_->node_started(a, t, n);
  }
  void node_finished(const ObservedActor& a, const GraphTaskBase& t, const NodeInfo& n) override {
    first_->node_finished(a, t, n);
    second_->node_finished(a, t, n);
  }
  std::uint64_t message_sent(const ObservedActor& a, const GraphTaskBase& t,
                             trace::MessageKind kind, const NodeInfo& n,
                             std::uint32_t input_nr) override {
    const std::uint64_t id = first_->message_sent(a, t, kind, n, input_nr);
    const std::uint64_t id2 = second_->message_sent(a, t, kind, n, input_nr);
    return id2 != 0 ? id2 : id;
  }
  void message_received(const ObservedActor& a, const GraphTaskBase& t, trace::MessageKind kind,
                        const NodeInfo& n, std::uint64_t id, std::uint32_t input_nr) override {
    first_->message_received(a, t, kind, n, id, input_nr);
    second_->message_received(a, t, kind, n, id, input_nr);
  }
  DeviceRun work_launched(const ObservedActor& a, const GraphTaskBase& t, const NodeInfo& n,
                          const DeviceLaunch& work) override {
    DeviceRun run = first_->work_launched(a, t, n, work);
    DeviceRun run2 = second_->work_launched(a, t, n, work);
    if (!run || !run2)
      return run ? std::move(run) : std::move(run2);
    return [run = std::move(run), run2 = std::move(run2)](
             std::uint64_t point, std::chrono::steady_clock::time_point start,
             std::chrono::steady_clock::time_point end) {
      run(point, start, end);
      run2(point, start, end);
    };
  }
  void fresh_stack(const ObservedActor& a, const GraphTaskBase& t) override {
    first_->fresh_stack(a, t);
    second_->fresh_stack(a, t);
  }
  void error(const ObservedActor& a, const GraphTaskBase& t, std::exception_ptr e) override {
    first_->error(a, t, e);
    second_->error(a, t, e);
  }
  void remote_message(const ObservedActor& a, const RemoteMessage& m) override {
    first_->remote_message(a, m);
    second_->remote_message(a, m);
  }

private:
  std::shared_ptr<EngineObserver> first_;
  std::shared_ptr<EngineObserver> second_;
};

} // namespace actorgrad::detail
