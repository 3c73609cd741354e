#define BOOST_TEST_MODULE actors_recorder
#include <boost/test/unit_test.hpp>

// The engine's recorder (actors/trace/recorder.h): every message recorded
// once on each side, node events matching the nodes run, per-actor tracks
// in time order, off unless switched on, a lock-free buffer that can be
// read while its actor appends, and a CPU worker's own named track with the
// messages between it and the caller.

#include <map>
#include <set>
#include <thread>

#include "actorgrad/actors/trace/event_buffer.h"
#include "actorgrad/actors/trace/recorder.h"
#include "actorgrad/libengine/autograd/grad_mode.h"
#include "actorgrad/tools/trace/detail/summary.h"
#include "actorgrad/tools/trace/timeline.h"
#include "tests/actors/trace_test_util.h"
#include "tests/support/toy_graph.h"

using namespace actorgrad;
using namespace actorgrad::testing;
using trace::EventKind;
using trace::MessageKind;

namespace {

/// Checks the invariants every recording of completed calls satisfies and
/// returns the number of node executions in it.
std::size_t check_recording(const trace::Trace& t) {
  std::map<std::uint64_t, std::pair<MessageKind, int>> sent, received; // id -> kind, count
  std::size_t starts = 0;
  for (const trace::Track& track : t.tracks) {
    BOOST_TEST_CONTEXT("track " << track.actor) {
      std::vector<std::uint64_t> open;
      std::int64_t last = 0;
      for (const trace::Event& e : track.events) {
        BOOST_TEST(e.ts_ns >= last, "timestamps never decrease along a track");
        last = e.ts_ns;
        BOOST_TEST(e.graph_task != 0);
        BOOST_TEST(e.stream == 0);
        switch (e.kind) {
        case EventKind::node_start:
          ++starts;
          open.push_back(e.sequence_nr);
          BOOST_TEST(!e.node.empty());
          break;
        case EventKind::node_end:
          BOOST_TEST_REQUIRE(!open.empty());
          BOOST_TEST(open.back() == e.sequence_nr);
          open.pop_back();
          break;
        case EventKind::send: {
          auto& [kind, n] = sent[e.message_id];
          kind = e.message;
          ++n;
          break;
        }
        case EventKind::receive: {
          auto& [kind, n] = received[e.message_id];
          kind = e.message;
          ++n;
          break;
        }
        default: break;
        }
        if (e.kind == EventKind::node_start && track.actor.find(" worker") != std::string::npos &&
            track.actor.rfind("pool", 0) != 0)
          BOOST_TEST(track.actor == e.device.str() + " worker", "a worker runs its device's nodes");
      }
      BOOST_TEST(open.empty(), "every started node finished");
    }
  }
  for (const auto& [id, s] : sent) {
    BOOST_TEST(id != 0);
    BOOST_TEST(s.second == 1, "message " << id << " sent once");
    auto r = received.find(id);
    if (s.first == MessageKind::wake_up) {
      // A WakeUp may arrive after its task was done (not counted; Note [Recording]).
      BOOST_TEST((r == received.end() || r->second.second == 1));
      continue;
    }
    BOOST_TEST_REQUIRE((r != received.end()), message_name(s.first) << " " << id << " received");
    BOOST_TEST(r->second.second == 1, "message " << id << " received once");
    BOOST_TEST((r->second.first == s.first));
  }
  for (const auto& [id, r] : received)
    BOOST_TEST(sent.count(id) == 1, "received message " << id << " was sent");
  return starts;
}

std::size_t count(const trace::Trace& t, EventKind kind, MessageKind message) {
  std::size_t n = 0;
  for (const auto& track : t.tracks)
    for (const auto& e : track.events)
      n += e.kind == kind && e.message == message;
  return n;
}

std::set<std::string> actors(const trace::Trace& t) {
  std::set<std::string> names;
  for (const auto& track : t.tracks)
    names.insert(track.actor.substr(0, track.actor.find_last_of(' ')));
  return names;
}

} // namespace

BOOST_AUTO_TEST_CASE(every_message_and_node_recorded_once) {
  CountingEngine ce;
  Tensor x = leaf3();
  backward({cross_device_loss(x)}, {}, ce.engine); // warm-up, not recorded
  ce.nodes_run = 0;

  ce.engine.start_recording();
  for (int i = 0; i < 3; ++i)
    backward({cross_device_loss(x)}, {}, ce.engine);
  ce.engine.backward_async({cross_device_loss(x)}).get();
  const trace::Trace t = ce.engine.stop_recording();

  BOOST_TEST(check_recording(t) == ce.nodes_run.load());
  BOOST_TEST(count(t, EventKind::send, MessageKind::grad) > 20);
  BOOST_TEST(count(t, EventKind::send, MessageKind::grad) ==
             count(t, EventKind::receive, MessageKind::grad));
  // The actors, and the streams that ran their kernels (Note [Stream tracks]).
  BOOST_TEST((actors(t) == std::set<std::string>{"caller", "async coordinator", "sim:0", "sim:1",
                                                 "sim:0/default", "sim:1/default"}));
  std::set<std::uint64_t> tasks;
  for (const auto& track : t.tracks)
    for (const auto& e : track.events)
      tasks.insert(e.graph_task);
  BOOST_TEST(tasks.size() == 4u, "one GraphTask id per backward call");
}

BOOST_AUTO_TEST_CASE(the_root_task_message_when_the_root_is_on_a_device) {
  CountingEngine ce;
  Tensor x = Tensor::from_vector({1, 2}, {2}, DType::f64, Device::sim(1)).set_requires_grad();
  ce.engine.start_recording();
  backward({sum(x * 2.0)}, {}, ce.engine);
  const trace::Trace t = ce.engine.stop_recording();
  BOOST_TEST(check_recording(t) == ce.nodes_run.load());
  BOOST_TEST(count(t, EventKind::send, MessageKind::task) == 1u);
  BOOST_TEST(count(t, EventKind::receive, MessageKind::task) == 1u);
}

BOOST_AUTO_TEST_CASE(off_unless_started) {
  CountingEngine ce;
  Tensor x = leaf3();
  backward({cross_device_loss(x)}, {}, ce.engine);
  BOOST_TEST(ce.engine.stop_recording().tracks.empty(), "nothing recorded before start");

  ce.engine.start_recording();
  const trace::Trace empty = ce.engine.stop_recording();
  BOOST_TEST(empty.tracks.empty(), "a recording without calls is empty");
  backward({cross_device_loss(x)}, {}, ce.engine);
  BOOST_TEST(ce.engine.stop_recording().tracks.empty(), "nothing recorded after stop");
}

BOOST_AUTO_TEST_CASE(reentrant_calls_past_the_depth_limit) {
  EngineConfig cfg;
  cfg.devices = {Device::sim(0), Device::sim(1)};
  std::atomic<std::size_t> nodes_run{0};
  cfg.observer =
    testing::on_node_start([&](Device, const GraphTaskBase&, const NodeInfo&) { ++nodes_run; });
  cfg.max_recursion_depth = 2;
  Engine engine(cfg);

  // A node whose backward makes `levels` nested backward calls, each from
  // inside the node of the one before.
  std::function<Tensor(const Tensor&, int)> nested = [&](const Tensor& x, int levels) {
    return lambda_op(x, "Nested",
                     [&, levels, device = x.device()](variable_list&& g) {
                       if (levels > 0) {
                         AutoGradMode enable(true);
                         Tensor z = Tensor::ones({1}, DType::f64, device).set_requires_grad();
                         grad({sum(nested(z, levels - 1) * 3.0)}, {z}, {}, engine);
                       }
                       return std::move(g);
                     })
      .first;
  };
  engine.start_recording();
  for (Device d : {Device::cpu(), Device::sim(0)}) {
    Tensor x = Tensor::ones({1}, DType::f64, d).set_requires_grad();
    backward({sum(nested(x, 6) * 2.0)}, {}, engine);
  }
  const trace::Trace t = engine.stop_recording();
  BOOST_TEST(check_recording(t) == nodes_run.load());
  BOOST_TEST(engine.stats().fresh_stacks > 0);
  // The caller, sim:0's worker and its stream: no other actor took part.
  const std::set<std::string> expected{"caller", "sim:0", "sim:0/default"};
  BOOST_TEST(actors(t) == expected, "calls past the depth limit stay on their actor");
  int deepest = 0;
  for (const auto& track : t.tracks)
    for (const auto& e : track.events)
      deepest = std::max(deepest, e.depth);
  BOOST_TEST(deepest == 6, "events carry the reentrant depth");
}

BOOST_AUTO_TEST_CASE(buffer_readable_while_its_actor_appends) {
  trace::Retention retention;
  trace::EventBuffer buffer("producer", retention);
  constexpr std::int64_t kEvents = 200'000;
  std::thread producer([&] {
    for (std::int64_t i = 0; i < kEvents; ++i) {
      trace::Event e;
      e.ts_ns = i;
      e.sequence_nr = static_cast<std::uint64_t>(i);
      buffer.append(std::move(e));
    }
  });
  std::size_t seen = 0;
  bool consistent = true;
  while (seen < static_cast<std::size_t>(kEvents)) {
    const std::vector<trace::Event> events = buffer.published();
    consistent = consistent && events.size() >= seen;
    for (std::size_t i = 0; i < events.size(); ++i)
      consistent = consistent && events[i].ts_ns == static_cast<std::int64_t>(i);
    seen = events.size();
  }
  producer.join();
  BOOST_TEST(consistent, "every snapshot is a prefix of the log");
  BOOST_TEST(buffer.published().size() == static_cast<std::size_t>(kEvents));
}

// What a CPU worker actor (ObservedActor::Role::cpu_worker) reports lands
// on a track of its own, named "cpu worker <actor id>", beside the
// caller's; a Grad from a node on the caller to a node on the worker is an
// arrow between the two tracks; a node the worker fed without a message and
// the caller then ran has that input (Note [Nodes that share a sequence
// number] in tools/trace/timeline.cpp); and the summary counts the
// worker's share of the pass and chains R -> B -> C.
BOOST_AUTO_TEST_CASE(a_cpu_worker_has_a_named_track_of_its_own) {
  auto root = toy::make("R", Device::cpu(), 1, [](const toy::Values& g) { return g; });
  auto [task, first] = toy::ToyTask::create({{root, 0}}, {1.0}, ExecuteOptions{}, {}, 0);
  const NodeInfo r{root.get(), "R", 10, Device::cpu(), 0};
  const NodeInfo b{&r, "B", 9, Device::cpu(), 0};
  const NodeInfo c{&b, "C", 8, Device::cpu(), 0};
  const ObservedActor caller(ObservedActor::Role::caller, Device::cpu(), 0);
  const ObservedActor worker(ObservedActor::Role::cpu_worker, Device::cpu(), 42);
  auto rec = std::make_shared<trace::Recorder>();
  rec->task_started(caller, *task);
  rec->node_started(caller, *task, r);
  const std::uint64_t id = rec->message_sent(caller, *task, MessageKind::grad, b, 0);
  rec->node_finished(caller, *task, r);
  std::thread([&] {
    rec->message_received(worker, *task, MessageKind::grad, b, id, 0);
    rec->node_started(worker, *task, b);
    rec->node_fed(worker, *task, c, 0);
    rec->node_finished(worker, *task, b);
  }).join();
  rec->node_started(caller, *task, c);
  rec->node_finished(caller, *task, c);
  rec->task_finished(caller, *task);

  const trace::Timeline tl = trace::build_timeline(rec->snapshot());
  BOOST_TEST_REQUIRE(tl.actors.size() == 2u);
  BOOST_TEST(tl.actors[0] == caller.name());
  BOOST_TEST(tl.actors[1] == "cpu worker 42");
  BOOST_TEST_REQUIRE(tl.slices.size() == 3u);
  for (const trace::Slice& s : tl.slices) {
    BOOST_TEST(tl.actors[s.actor] == (s.node == "B" ? "cpu worker 42" : caller.name()), s.node);
    if (s.node == "C")
      BOOST_TEST((s.local_inputs == std::vector<std::uint64_t>{9}), "B fed C on the worker");
  }
  BOOST_TEST_REQUIRE(tl.messages.size() == 1u);
  const trace::Message& m = tl.messages[0];
  BOOST_TEST(tl.actors[m.from_actor] == caller.name());
  BOOST_TEST_REQUIRE(m.to_actor.has_value());
  BOOST_TEST(tl.actors[*m.to_actor] == "cpu worker 42");
  BOOST_TEST((m.producer == std::optional<std::uint64_t>(10)), "R sent it");
  const trace::detail::Summary s = trace::detail::summarize(tl);
  BOOST_TEST_REQUIRE(s.parallelism.size() == 1u);
  BOOST_TEST(s.parallelism[0].tracks.size() == 2u, "both tracks share the pass");
  BOOST_TEST(s.parallelism[0].critical_chain.size() == 3u, "R, B through the message, then C");
}
