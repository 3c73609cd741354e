#define BOOST_TEST_MODULE actors_trace_report
#include <boost/test/unit_test.hpp>

// From a recording to the tools' outputs (tools/trace/): the Chrome trace
// JSON parses and has the structure Perfetto and chrome://tracing need
// (tracks, slices, paired flow arrows), reads back to the same timeline,
// and the summary finds the critical path of a graph with known node costs.

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include "actorgrad/tools/trace/detail/chrome_json.h"
#include "actorgrad/tools/trace/detail/summary.h"
#include "actorgrad/tools/trace/timeline.h"
#include "tests/actors/trace_test_util.h"
#include "tests/support/chrome_trace_check.h"

using namespace actorgrad;
using namespace actorgrad::testing;
using actorgrad::testing::check_chrome_structure;
using namespace std::chrono_literals;

namespace {

/// A recording of a few cross-device backward calls and the nodes they ran.
struct Recorded {
  trace::Timeline timeline;
  std::size_t nodes_run;
};

Recorded record_cross_device() {
  CountingEngine ce;
  Tensor x = leaf3();
  backward({cross_device_loss(x)}, {}, ce.engine);
  ce.nodes_run = 0;
  ce.engine.start_recording();
  for (int i = 0; i < 2; ++i)
    backward({cross_device_loss(x)}, {}, ce.engine);
  return {trace::build_timeline(ce.engine.stop_recording()), ce.nodes_run.load()};
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("actorgrad_" + std::to_string(::getpid()) + "_" + name))
    .string();
}

} // namespace

BOOST_AUTO_TEST_CASE(chrome_trace_structure_and_round_trip) {
  const Recorded r = record_cross_device();
  BOOST_TEST(r.timeline.slices.size() == r.nodes_run);
  BOOST_TEST(r.timeline.messages.size() > 10u);
  std::ostringstream json;
  trace::detail::write_chrome_json(r.timeline, json);
  BOOST_TEST(check_chrome_structure(json.str(), r.timeline) == r.nodes_run);

  const std::string path = temp_path("trace.json");
  std::ofstream(path) << json.str();
  const trace::Timeline back = trace::detail::read_chrome_json(path);
  std::remove(path.c_str());
  BOOST_TEST(back.actors == r.timeline.actors);
  BOOST_REQUIRE(back.slices.size() == r.timeline.slices.size());
  BOOST_REQUIRE(back.messages.size() == r.timeline.messages.size());
  for (std::size_t i = 0; i < back.slices.size(); ++i) {
    const auto &a = back.slices[i], &b = r.timeline.slices[i];
    BOOST_TEST((a.actor == b.actor && a.sequence_nr == b.sequence_nr && a.start_ns == b.start_ns &&
                a.end_ns == b.end_ns && a.ready_ns == b.ready_ns && a.device == b.device &&
                a.local_inputs == b.local_inputs && a.graph_task == b.graph_task));
  }
  for (std::size_t i = 0; i < back.messages.size(); ++i) {
    const auto &a = back.messages[i], &b = r.timeline.messages[i];
    BOOST_TEST((a.id == b.id && a.kind == b.kind && a.from_actor == b.from_actor &&
                a.to_actor == b.to_actor && a.send_ns == b.send_ns && a.recv_ns == b.recv_ns &&
                a.producer == b.producer && a.sequence_nr == b.sequence_nr));
  }
  BOOST_TEST(trace::detail::format_summary(back, trace::detail::summarize(back)) ==
             trace::detail::format_summary(r.timeline, trace::detail::summarize(r.timeline)));
}

BOOST_AUTO_TEST_CASE(unreadable_trace_is_an_error) {
  const std::string path = temp_path("broken.json");
  std::ofstream(path) << "{\"traceEvents\": [";
  BOOST_CHECK_THROW(trace::detail::read_chrome_json(path), std::runtime_error);
  std::remove(path.c_str());
}

namespace {

/// Records: x (cpu) -> D on sim:1 -> {B on sim:0, C on cpu} -> R on cpu,
/// where B and C spin for `b` and `c`; returns the names on the critical path.
std::vector<std::string> critical_names(std::chrono::microseconds b, std::chrono::microseconds c,
                                        trace::detail::CriticalPath* out = nullptr,
                                        trace::Timeline* tl_out = nullptr) {
  CountingEngine ce;
  Tensor x = leaf3();
  Tensor d = spinning_op(to_device(x, Device::sim(1)), "D", 1ms);
  Tensor yb = spinning_op(to_device(d, Device::sim(0)), "B", b);
  Tensor yc = spinning_op(to_device(d, Device::cpu()), "C", c);
  Tensor r = spinning_op(to_device(yb, Device::cpu()) + yc, "R", 1ms);
  ce.engine.start_recording();
  backward({sum(r)}, {}, ce.engine);
  trace::Timeline tl = trace::build_timeline(ce.engine.stop_recording());
  const trace::detail::Summary s = trace::detail::summarize(tl);
  BOOST_TEST_INFO("summary:\n" << trace::detail::format_summary(tl, s));
  BOOST_TEST_REQUIRE(s.critical_paths.size() == 1u);
  std::vector<std::string> names;
  for (const auto& step : s.critical_paths[0].steps) {
    const std::string& n = tl.slices[step.slice].node;
    if (n.size() == 1)
      names.push_back(n);
  }
  BOOST_TEST(tl.slices[s.critical_paths[0].steps.back().slice].node == "AccumulateGrad",
             "the path ends at the last node");
  if (out)
    *out = s.critical_paths[0];
  if (tl_out)
    *tl_out = tl;
  return names;
}

} // namespace

BOOST_AUTO_TEST_CASE(critical_path_of_known_costs) {
  trace::detail::CriticalPath path;
  trace::Timeline tl;
  // The costs differ by far more than the scheduling noise of a loaded
  // 2-core machine (messages to a descheduled worker can take milliseconds).
  BOOST_TEST((critical_names(15ms, 2ms, &path, &tl) == std::vector<std::string>{"R", "B", "D"}));
  BOOST_TEST(path.length_ns >= 17'000'000, "R + B + D take at least 17 ms");
  BOOST_TEST(path.length_ns <= path.wall_ns, "the path fits in the call");
  std::size_t messages = 0;
  for (const auto& step : path.steps)
    messages += step.via_message;
  BOOST_TEST(messages == 3u, "cpu -> sim:0 -> sim:1 -> cpu on the path");
  const std::string text = trace::detail::format_summary(tl, trace::detail::summarize(tl));
  for (const char* part : {"critical path of GraphTask", "sim:0 worker", "sim:1 worker", "caller",
                           "busy %", "wait p50", "wait p99", "Grad"})
    BOOST_TEST(text.find(part) != std::string::npos, "summary shows " << part);

  BOOST_TEST((critical_names(2ms, 15ms) == std::vector<std::string>{"R", "C", "D"}));
}

BOOST_AUTO_TEST_CASE(busy_time_and_queue_wait) {
  trace::Timeline tl;
  tl.actors = {"a"};
  // Two slices, the second nested in the first (a reentrant call), then one more.
  tl.slices = {{0, 1, "Outer", 1, 0, {}, 0, 100, 400, 90, {}},
               {0, 2, "Inner", 2, 1, {}, 0, 200, 300, 150, {}},
               {0, 1, "Next", 3, 0, {}, 0, 500, 600, 400, {}}};
  tl.normalize();
  const trace::detail::Summary s = trace::detail::summarize(tl);
  BOOST_TEST(s.span_ns == 600 - 90);
  BOOST_TEST(s.actors[0].busy_ns == 400, "nested slices count once");
  BOOST_TEST(s.actors[0].tasks == 3u);
  BOOST_TEST(s.actors[0].queue_wait.p50_ns == 50);
  BOOST_TEST(s.actors[0].queue_wait.p99_ns == 100);
}

// The critical path never outlasts its call (Note [Critical path by last
// arrival]): a chain of 100 muls over two asynchronous sim devices, where a
// node's span covers the sending of its gradient, used to give paths of
// 484 us in a 326 us call when durations and latencies were summed.
BOOST_AUTO_TEST_CASE(critical_path_fits_in_the_call_on_async_sim) {
  CountingEngine ce;
  Tensor x = leaf3();
  Tensor y = x;
  for (int i = 0; i < 100; ++i) {
    if (i % 50 == 0)
      y = to_device(y, Device::sim(i / 50));
    y = y * 1.0001;
  }
  Tensor loss = sum(to_device(y, Device::cpu()));
  backward({loss}, {.retain_graph = true}, ce.engine); // warm-up
  for (int round = 0; round < 5; ++round) {
    ce.engine.start_recording();
    backward({loss}, {.retain_graph = true}, ce.engine);
    trace::Timeline tl = trace::build_timeline(ce.engine.stop_recording());
    const trace::detail::Summary s = trace::detail::summarize(tl);
    BOOST_TEST_INFO("summary:\n" << trace::detail::format_summary(tl, s));
    BOOST_TEST_REQUIRE(s.critical_paths.size() == 1u);
    const trace::detail::CriticalPath& p = s.critical_paths[0];
    BOOST_TEST(p.length_ns <= p.wall_ns);
    BOOST_TEST(p.length_ns > 0);
    BOOST_TEST(p.steps.size() >= 100u, "the chain's muls gate each other: all on the path");
  }
}

// Queue depth (tools/trace/detail/queue_depth.h): the sim:0 worker spins in node S
// for 1 s while the caller sends it kFlood gradients, one per mul on sim:0;
// they wait in its mailbox until S ends, then all go onto its heap at once.
// The caller spins 200 ms first (node W), so S has started before the
// flood: the mailbox's maximum is exactly kFlood.
BOOST_AUTO_TEST_CASE(flooded_worker_shows_its_mailbox_depth) {
  constexpr int kFlood = 16;
  CountingEngine ce;
  Tensor x = leaf3();
  Tensor flood;
  for (int i = 0; i < kFlood; ++i) {
    Tensor z = to_device(to_device(x, Device::sim(0)) * (1.0 + i), Device::cpu());
    flood = i == 0 ? z : flood + z;
  }
  Tensor w = spinning_op(flood, "W", 200ms);
  Tensor slow = to_device(spinning_op(to_device(x, Device::sim(0)), "S", 1000ms), Device::cpu());
  Tensor loss = sum(w + slow);
  ce.engine.start_recording();
  backward({loss}, {}, ce.engine);
  trace::Timeline tl = trace::build_timeline(ce.engine.stop_recording());
  const trace::detail::Summary s = trace::detail::summarize(tl);
  BOOST_TEST_INFO("summary:\n" << trace::detail::format_summary(tl, s));
  const auto worker = std::find(tl.actors.begin(), tl.actors.end(), "sim:0 worker");
  BOOST_TEST_REQUIRE((worker != tl.actors.end()));
  const std::size_t a = static_cast<std::size_t>(worker - tl.actors.begin());
  // The premise: the flood was sent while S ran.
  std::int64_t s_start = 0, s_end = 0;
  for (const trace::Slice& sl : tl.slices)
    if (sl.node == "S")
      std::tie(s_start, s_end) = std::pair(sl.start_ns, sl.end_ns);
  int flooded = 0;
  for (const trace::Message& m : tl.messages)
    if (m.to_actor == a && m.send_ns > s_start && m.send_ns < s_end)
      ++flooded;
  BOOST_TEST_REQUIRE(flooded == kFlood, "gradients sent to sim:0 while S ran");

  const trace::detail::QueueDepth& q = s.queues.at(a);
  BOOST_TEST(q.max_mailbox == kFlood);
  // The heap also holds the copy S fed on the same actor when S ended.
  BOOST_TEST(q.max_ready == kFlood + 1);
  BOOST_TEST(q.received >= std::size_t{kFlood});
  BOOST_TEST(q.max_mailbox_wait_ns >= 500'000'000, "a gradient waited for most of S");
  for (const trace::detail::QueueDepth& other : s.queues)
    for (const trace::detail::DepthSample& d : other.samples)
      BOOST_TEST_REQUIRE((d.mailbox >= 0 && d.ready >= 0));
  const std::string text = trace::detail::format_summary(tl, s);
  BOOST_TEST(text.find("queues (engine messages in the mailbox") != std::string::npos);
}
