#define BOOST_TEST_MODULE actors_observers
#include <boost/test/unit_test.hpp>

// Any number of observers on one engine (Engine::set_observer,
// add_observer, remove_observer, start_recording; actors/detail/
// engine_observers.h): each is told every event of the calls started while
// it is on, a removed one nothing of the calls started after, and a
// recording's messages still pair up when the other observers give message
// ids of their own (detail::ObserverList).

#include <atomic>
#include <map>
#include <memory>
#include <stdexcept>

#include "actorgrad/actors/trace/recorder.h"
#include "tests/actors/trace_test_util.h"

using namespace actorgrad;
using namespace actorgrad::testing;

namespace {

/// Counts what it is told, and numbers the messages it sees sent with ids
/// of its own (from `first_id` on), as a second recorder would.
struct Tally final : EngineObserver {
  explicit Tally(std::uint64_t first_id) : next_id(first_id) {}

  void task_started(const ObservedActor&, const GraphTaskBase&) override { ++tasks_started; }
  void task_finished(const ObservedActor&, const GraphTaskBase&) override { ++tasks_finished; }
  void node_started(const ObservedActor&, const GraphTaskBase&, const NodeInfo&) override {
    ++nodes_started;
  }
  void node_finished(const ObservedActor&, const GraphTaskBase&, const NodeInfo&) override {
    ++nodes_finished;
  }
  std::uint64_t message_sent(const ObservedActor&, const GraphTaskBase&, trace::MessageKind kind,
                             const NodeInfo&, std::uint32_t) override {
    if (kind == trace::MessageKind::grad)
      ++grads_sent;
    return next_id++;
  }
  void message_received(const ObservedActor&, const GraphTaskBase&, trace::MessageKind kind,
                        const NodeInfo&, std::uint64_t, std::uint32_t) override {
    if (kind == trace::MessageKind::grad)
      ++grads_received;
  }

  std::atomic<std::uint64_t> next_id;
  std::atomic<std::size_t> tasks_started{0}, tasks_finished{0};
  std::atomic<std::size_t> nodes_started{0}, nodes_finished{0};
  std::atomic<std::size_t> grads_sent{0}, grads_received{0};
};

/// Every message the recording holds is sent once and received once
/// (WakeUps may go unreceived: Note [Recording] in actors/trace/recorder.h).
void check_pairs(const trace::Trace& t) {
  std::map<std::uint64_t, std::pair<int, int>> seen; // id -> sends, receipts
  for (const auto& track : t.tracks)
    for (const auto& e : track.events) {
      if (e.kind == trace::EventKind::send && e.message != trace::MessageKind::wake_up)
        ++seen[e.message_id].first;
      if (e.kind == trace::EventKind::receive && e.message != trace::MessageKind::wake_up)
        ++seen[e.message_id].second;
    }
  BOOST_TEST(!seen.empty());
  for (const auto& [id, n] : seen)
    BOOST_TEST((n == std::pair<int, int>{1, 1}),
               "message " << id << ": " << n.first << " sends, " << n.second << " receipts");
}

} // namespace

BOOST_AUTO_TEST_CASE(three_observers_and_a_recording_each_see_every_event) {
  CountingEngine ce; // its EngineConfig::observer counts the nodes run
  auto first = std::make_shared<Tally>(1'000'000);
  auto second = std::make_shared<Tally>(2'000'000);
  ce.engine.add_observer(first);
  ce.engine.add_observer(second);
  ce.engine.start_recording();
  Tensor x = leaf3();
  backward({cross_device_loss(x)}, {}, ce.engine);
  ce.engine.backward_async({cross_device_loss(x)}).get();
  const trace::Trace t = ce.engine.stop_recording();

  const std::size_t nodes = ce.nodes_run.load();
  BOOST_TEST(nodes > 20u);
  for (const Tally* o : {first.get(), second.get()}) {
    BOOST_TEST(o->nodes_started.load() == nodes);
    BOOST_TEST(o->nodes_finished.load() == nodes);
    BOOST_TEST(o->tasks_started.load() == 2u);
    BOOST_TEST(o->tasks_finished.load() == 2u);
    BOOST_TEST(o->grads_sent.load() > 10u);
    BOOST_TEST(o->grads_received.load() == o->grads_sent.load());
  }
  // The recorder comes last, so its ids travel with the messages.
  check_pairs(t);
}

BOOST_AUTO_TEST_CASE(a_removed_observer_sees_nothing_of_later_calls) {
  CountingEngine ce;
  auto kept = std::make_shared<Tally>(1);
  auto removed = std::make_shared<Tally>(1);
  ce.engine.add_observer(kept);
  ce.engine.add_observer(removed);
  Tensor x = leaf3();
  backward({cross_device_loss(x)}, {}, ce.engine);
  const std::size_t seen_before = removed->nodes_started.load();
  BOOST_TEST(seen_before == ce.nodes_run.load());

  BOOST_TEST(ce.engine.remove_observer(removed.get()));
  BOOST_TEST(!ce.engine.remove_observer(removed.get()), "removed once only");
  backward({cross_device_loss(x)}, {}, ce.engine);
  BOOST_TEST(removed->nodes_started.load() == seen_before);
  BOOST_TEST(kept->nodes_started.load() == ce.nodes_run.load());

  // set_observer replaces the installed one only; the added one stays.
  ce.engine.set_observer(nullptr);
  const std::size_t counted = ce.nodes_run.load();
  backward({cross_device_loss(x)}, {}, ce.engine);
  BOOST_TEST(ce.nodes_run.load() == counted, "the installed observer is gone");
  BOOST_TEST(kept->nodes_started.load() == 3 * seen_before);
  BOOST_TEST(ce.engine.observer().get() == kept.get(), "one observer is published as itself");
}

BOOST_AUTO_TEST_CASE(a_null_observer_is_refused_by_name) {
  CountingEngine ce;
  BOOST_CHECK_EXCEPTION(ce.engine.add_observer(nullptr), std::invalid_argument,
                        [](const std::invalid_argument& e) {
                          return std::string(e.what()).find("add_observer") != std::string::npos;
                        });
  BOOST_TEST(!ce.engine.remove_observer(nullptr));
}
