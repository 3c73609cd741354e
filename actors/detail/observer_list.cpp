#include "actorgrad/actors/detail/observer_list.h"

#include <utility>

namespace actorgrad::detail {

void ObserverList::task_started(const ObservedActor& a, const GraphTaskBase& t) {
  tell_each([&](EngineObserver& o) { o.task_started(a, t); });
}

void ObserverList::task_finished(const ObservedActor& a, const GraphTaskBase& t) {
  tell_each([&](EngineObserver& o) { o.task_finished(a, t); });
}

void ObserverList::node_ready(const ObservedActor& a, const GraphTaskBase& t, const NodeInfo& n) {
  tell_each([&](EngineObserver& o) { o.node_ready(a, t, n); });
}

void ObserverList::node_fed(const ObservedActor& a, const GraphTaskBase& t, const NodeInfo& n,
                            std::uint32_t input_nr) {
  tell_each([&](EngineObserver& o) { o.node_fed(a, t, n, input_nr); });
}

void ObserverList::node_started(const ObservedActor& a, const GraphTaskBase& t, const NodeInfo& n) {
  tell_each([&](EngineObserver& o) { o.node_started(a, t, n); });
}

void ObserverList::node_finished(const ObservedActor& a, const GraphTaskBase& t,
                                 const NodeInfo& n) {
  tell_each([&](EngineObserver& o) { o.node_finished(a, t, n); });
}

std::uint64_t ObserverList::message_sent(const ObservedActor& a, const GraphTaskBase& t,
                                         trace::MessageKind kind, const NodeInfo& n,
                                         std::uint32_t input_nr) {
  std::uint64_t id = 0;
  tell_each([&](EngineObserver& o) {
    if (const std::uint64_t mine = o.message_sent(a, t, kind, n, input_nr))
      id = mine; // the last nonzero id wins: the recorder's, when recording
  });
  return id;
}

void ObserverList::message_received(const ObservedActor& a, const GraphTaskBase& t,
                                    trace::MessageKind kind, const NodeInfo& n, std::uint64_t id,
                                    std::uint32_t input_nr) {
  tell_each([&](EngineObserver& o) { o.message_received(a, t, kind, n, id, input_nr); });
}

DeviceRun ObserverList::work_launched(const ObservedActor& a, const GraphTaskBase& t,
                                      const NodeInfo& n, const DeviceLaunch& work) {
  std::vector<DeviceRun> runs;
  tell_each([&](EngineObserver& o) {
    if (DeviceRun run = o.work_launched(a, t, n, work))
      runs.push_back(std::move(run));
  });
  if (runs.size() <= 1)
    return runs.empty() ? DeviceRun{} : std::move(runs.front());
  return [runs = std::move(runs)](std::uint64_t point, std::chrono::steady_clock::time_point start,
                                  std::chrono::steady_clock::time_point end) {
    for (const DeviceRun& run : runs)
      run(point, start, end);
  };
}

void ObserverList::fresh_stack(const ObservedActor& a, const GraphTaskBase& t) {
  tell_each([&](EngineObserver& o) { o.fresh_stack(a, t); });
}

void ObserverList::error(const ObservedActor& a, const GraphTaskBase& t, std::exception_ptr e) {
  tell_each([&](EngineObserver& o) { o.error(a, t, e); });
}

void ObserverList::remote_message(const ObservedActor& a, const RemoteMessage& m) {
  tell_each([&](EngineObserver& o) { o.remote_message(a, m); });
}

} // namespace actorgrad::detail
