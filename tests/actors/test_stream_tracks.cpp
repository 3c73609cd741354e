#define BOOST_TEST_MODULE actors_stream_tracks
#include <boost/test/unit_test.hpp>

// Stream tracks (Note [Stream tracks] in actors/trace/recorder.h): on
// asynchronous sim devices every item of device work a recorded node
// launches appears once on its stream's track, after its launch and in
// stream order, a wait ends after the work it waits for, the Chrome trace
// pairs each launch with its span, and the critical path follows the
// device work when that is what gated the call.

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "actorgrad/device/event.h"
#include "actorgrad/device/guards.h"
#include "actorgrad/device/sim/sim_backend.h"
#include "actorgrad/tools/trace/detail/chrome_json.h"
#include "actorgrad/tools/trace/detail/summary.h"
#include "actorgrad/tools/trace/timeline.h"
#include "tests/actors/trace_test_util.h"
#include "tests/support/chrome_trace_check.h"

using namespace actorgrad;
using namespace actorgrad::testing;
using namespace std::chrono_literals;

namespace {

/// y = x on x's sim device, as node `name`, whose backward launches
/// `kernels` kernels named "spin" on the device's current stream, each
/// spinning `cost` there, and passes the gradient on.
Tensor launching_op(const Tensor& x, const std::string& name, int kernels,
                    std::chrono::microseconds cost) {
  const Device d = x.device();
  return lambda_op(x, name,
                   [=](variable_list&& g) {
                     for (int i = 0; i < kernels; ++i)
                       sim::launch(current_stream(d), "spin", DeviceWork::kernel, {},
                                   [cost] { spin_for(cost); });
                     return std::move(g);
                   })
    .first;
}

/// The device spans launched by the execution `sl`.
std::vector<const trace::DeviceSpan*> launched_by(const trace::Timeline& tl,
                                                  const trace::Slice& sl) {
  std::vector<const trace::DeviceSpan*> out;
  for (const trace::DeviceSpan& d : tl.device_spans)
    if (d.graph_task == sl.graph_task && d.sequence_nr == sl.sequence_nr && d.node == sl.node &&
        sl.start_ns <= d.launch_ns && d.launch_ns <= sl.end_ns)
      out.push_back(&d);
  return out;
}

std::size_t stream_named(const trace::Timeline& tl, const std::string& name) {
  auto it = std::find(tl.streams.begin(), tl.streams.end(), name);
  BOOST_TEST_REQUIRE((it != tl.streams.end()), "a track for " << name);
  return static_cast<std::size_t>(it - tl.streams.begin());
}

} // namespace

// A chain cpu -> sim:0 (K0: 3 kernels) -> sim:1 (K1: 2 kernels) -> cpu,
// three backward calls. The copies between the devices make sim:0's
// stream wait for sim:1's kernels.
BOOST_AUTO_TEST_CASE(every_launch_runs_once_on_its_stream) {
  CountingEngine ce;
  Tensor x = leaf3();
  Tensor k0 = launching_op(to_device(x, Device::sim(0)), "K0", 3, 100us);
  // K1's kernels are long, so that they are still running when the copy to
  // sim:0 makes sim:0's stream wait for them (a wait on finished work is
  // not enqueued), even on a loaded machine.
  Tensor k1 = launching_op(to_device(k0, Device::sim(1)), "K1", 2, 3000us);
  Tensor loss = sum(to_device(k1, Device::cpu()));
  backward({loss}, {.retain_graph = true}, ce.engine); // warm-up: streams and workers exist
  ce.engine.start_recording();
  for (int i = 0; i < 3; ++i)
    backward({loss}, {.retain_graph = true}, ce.engine);
  const trace::Trace t = ce.engine.stop_recording();
  const trace::Timeline tl = trace::build_timeline(t);
  BOOST_TEST_INFO("summary:\n" << trace::detail::format_summary(tl, trace::detail::summarize(tl)));

  // Each launch recorded on an actor ran exactly once, on its stream's track.
  std::map<std::uint64_t, std::string> launches; // id -> stream
  std::map<std::uint64_t, int> runs;
  for (const trace::Track& track : t.tracks)
    for (const trace::Event& e : track.events) {
      if (e.kind == trace::EventKind::launch && e.work != DeviceWork::record)
        launches[e.message_id] = Stream(e.device, static_cast<std::uint32_t>(e.stream)).str();
      if (e.kind == trace::EventKind::device_run) {
        ++runs[e.message_id];
        BOOST_TEST(track.actor == Stream(e.device, static_cast<std::uint32_t>(e.stream)).str(),
                   "a run is on its own stream's track");
      }
    }
  BOOST_TEST(launches.size() == runs.size());
  for (const auto& [id, stream] : launches)
    BOOST_TEST(runs[id] == 1, "launch " << id << " on " << stream << " ran once");

  // K0 launched its 3 kernels on sim:0, K1 its 2 on sim:1, in every call.
  const std::size_t s0 = stream_named(tl, "sim:0/default"), s1 = stream_named(tl, "sim:1/default");
  std::map<std::string, int> executions;
  for (const trace::Slice& sl : tl.slices) {
    if (sl.node != "K0" && sl.node != "K1")
      continue;
    ++executions[sl.node];
    int spins = 0;
    for (const trace::DeviceSpan* d : launched_by(tl, sl))
      if (d->op == "spin") {
        ++spins;
        BOOST_TEST(d->stream == (sl.node == "K0" ? s0 : s1));
        BOOST_TEST(d->duration_ns() >= 100'000);
      }
    BOOST_TEST(spins == (sl.node == "K0" ? 3 : 2), sl.node << " in GraphTask " << sl.graph_task);
  }
  BOOST_TEST(executions["K0"] == 3);
  BOOST_TEST(executions["K1"] == 3);

  // On each stream, in start order: points increase, one item at a time,
  // each after its launch, launched from inside its node's span.
  std::map<std::pair<std::size_t, std::uint64_t>, const trace::DeviceSpan*> at;
  std::vector<const trace::DeviceSpan*> previous(tl.streams.size(), nullptr);
  for (const trace::DeviceSpan& d : tl.device_spans) {
    if (d.kind == DeviceWork::record)
      continue;
    BOOST_TEST(d.start_ns >= d.launch_ns, d.op << " starts after its launch");
    BOOST_TEST(d.end_ns >= d.start_ns);
    if (const trace::DeviceSpan* p = previous[d.stream]) {
      BOOST_TEST(d.point > p->point, "points increase along " << tl.streams[d.stream]);
      BOOST_TEST(d.start_ns >= p->end_ns, "a stream runs one item at a time");
    }
    previous[d.stream] = &d;
    at[{d.stream, d.point}] = &d;
    const bool in_its_node =
      std::any_of(tl.slices.begin(), tl.slices.end(), [&](const trace::Slice& sl) {
        return sl.actor == d.launcher && sl.graph_task == d.graph_task &&
               sl.sequence_nr == d.sequence_nr && sl.start_ns <= d.launch_ns &&
               d.launch_ns <= sl.end_ns;
      });
    BOOST_TEST(in_its_node, d.op << " launched inside " << d.node << "'s span");
  }

  // A wait ends only after everything up to its event's point has run; a
  // record is reached when the item at its point has run.
  int waits = 0, waits_on_spins = 0;
  for (const trace::DeviceSpan& d : tl.device_spans) {
    if (d.kind == DeviceWork::wait) {
      ++waits;
      BOOST_TEST_REQUIRE(d.waits_for.has_value());
      for (const auto& [key, w] : at)
        if (key.first == *d.waits_for && key.second <= d.waits_for_point) {
          BOOST_TEST(w->end_ns <= d.end_ns, "wait on " << tl.streams[d.stream] << " ended after "
                                                       << w->op << " it depends on");
          waits_on_spins += w->op == "spin";
        }
    }
    if (d.kind == DeviceWork::record)
      if (auto it = at.find({d.stream, d.point}); it != at.end())
        BOOST_TEST(d.start_ns >= it->second->end_ns);
  }
  BOOST_TEST_REQUIRE(waits > 0, "the premise: sim:0 waited for sim:1's kernels");
  BOOST_TEST(waits_on_spins > 0);

  // The Chrome trace pairs every launch with its span and reads back.
  std::ostringstream json;
  trace::detail::write_chrome_json(tl, json);
  BOOST_TEST(testing::check_chrome_structure(json.str(), tl) == tl.slices.size());
  const std::string path = "actorgrad_stream_tracks_" + std::to_string(::getpid()) + ".json";
  { std::ofstream(path) << json.str(); }
  const trace::Timeline back = trace::detail::read_chrome_json(path);
  std::remove(path.c_str());
  BOOST_TEST(back.streams == tl.streams);
  BOOST_REQUIRE_EQUAL(back.device_spans.size(), tl.device_spans.size());
  for (std::size_t i = 0; i < tl.device_spans.size(); ++i) {
    const trace::DeviceSpan &a = tl.device_spans[i], &b = back.device_spans[i];
    BOOST_TEST((a.op == b.op && a.kind == b.kind && a.stream == b.stream && a.point == b.point &&
                a.start_ns == b.start_ns && a.end_ns == b.end_ns && a.launch_ns == b.launch_ns &&
                a.launcher == b.launcher && a.node == b.node && a.waits_for == b.waits_for &&
                a.waits_for_point == b.waits_for_point));
  }

  // The summary: the critical path fits in each call, which lasts at least
  // as long as its device work; the op table's totals are the node time and
  // its device time is the kernels' and copies'.
  const trace::detail::Summary s = trace::detail::summarize(tl);
  BOOST_TEST_REQUIRE(s.critical_paths.size() == 3u);
  for (const trace::detail::CriticalPath& p : s.critical_paths) {
    BOOST_TEST(p.length_ns <= p.wall_ns);
    BOOST_TEST(p.wall_ns >= 300'000, "the call lasts at least K0's kernels");
  }
  std::int64_t node_time = 0, op_time = 0, device_time = 0, op_device_time = 0;
  for (const trace::Slice& sl : tl.slices)
    node_time += sl.duration_ns();
  for (const trace::DeviceSpan& d : tl.device_spans)
    if (d.kind == DeviceWork::kernel || d.kind == DeviceWork::copy)
      device_time += d.duration_ns();
  for (const trace::detail::OpStats& op : s.ops) {
    op_time += op.total_ns;
    op_device_time += op.device_ns;
    if (op.name == "K0")
      BOOST_TEST(op.device_ns >= 9 * 100'000);
  }
  BOOST_TEST(std::abs(op_time - node_time) <= node_time / 100);
  BOOST_TEST(op_device_time == device_time);
  BOOST_TEST(s.streams.at(s0).kernels >= 9u);
  BOOST_TEST(s.streams.at(s0).waits >= 1u);
}

// Known costs: on sim:0, K2 launches a 20 ms kernel and then K1 a 2 ms one;
// the launches take microseconds. The call's critical path runs through
// both kernels (the second waits for the first on the stream), so it is at
// least 22 ms long; counting the nodes' spans alone it was well under 1 ms.
// K2's kernel is long so that K1 is launched while it still runs even on
// a loaded machine (with 1 ms, a thread descheduled between the two
// launches failed the test about once in 100 runs next to a busy core).
BOOST_AUTO_TEST_CASE(critical_path_through_device_work) {
  CountingEngine ce;
  Tensor x =
    to_device(Tensor::from_vector({1, 2, 3}, {3}, DType::f64), Device::sim(0)).set_requires_grad();
  Tensor k1 = launching_op(x, "K1", 1, 2000us);
  Tensor k2 = launching_op(k1, "K2", 1, 20000us);
  Tensor loss = sum(k2);
  backward({loss}, {.retain_graph = true}, ce.engine);
  ce.engine.start_recording();
  backward({loss}, {.retain_graph = true}, ce.engine);
  const trace::Timeline tl = trace::build_timeline(ce.engine.stop_recording());
  const trace::detail::Summary s = trace::detail::summarize(tl);
  BOOST_TEST_INFO("summary:\n" << trace::detail::format_summary(tl, s));
  BOOST_TEST_REQUIRE(s.critical_paths.size() == 1u);
  const trace::detail::CriticalPath& p = s.critical_paths[0];
  std::multiset<std::string> device_steps;
  for (const trace::detail::PathStep& step : p.steps)
    if (step.on_device)
      device_steps.insert(tl.device_spans[step.slice].node);
  BOOST_TEST(device_steps.count("K1") == 1u, "K1's kernel is on the path");
  BOOST_TEST(device_steps.count("K2") == 1u, "K2's kernel is on the path");
  BOOST_TEST(p.length_ns >= 22'000'000);
  BOOST_TEST(p.length_ns <= p.wall_ns);
  std::int64_t spans = 0;
  for (const trace::Slice& sl : tl.slices)
    spans += sl.duration_ns();
  BOOST_TEST(spans < 22'000'000, "the premise: the nodes only launched the work");
}

// A node whose forward ran on a pool stream runs its backward there
// (PyTorch's stream semantics): its kernel is on that stream's track.
BOOST_AUTO_TEST_CASE(a_pool_stream_has_its_own_track) {
  CountingEngine ce;
  const Stream pool = stream_from_pool(Device::sim(0));
  Tensor x =
    to_device(Tensor::from_vector({1, 2, 3}, {3}, DType::f64), Device::sim(0)).set_requires_grad();
  Tensor k;
  {
    StreamGuard on_pool(pool);
    k = launching_op(x, "K", 1, 100us);
  }
  Tensor loss = sum(k);
  backward({loss}, {.retain_graph = true}, ce.engine);
  ce.engine.start_recording();
  backward({loss}, {.retain_graph = true}, ce.engine);
  const trace::Timeline tl = trace::build_timeline(ce.engine.stop_recording());
  const std::size_t track = stream_named(tl, pool.str());
  int spins = 0;
  for (const trace::DeviceSpan& d : tl.device_spans)
    if (d.op == "spin") {
      ++spins;
      BOOST_TEST(d.stream == track);
      BOOST_TEST(d.node == "K");
    }
  BOOST_TEST(spins == 1);
}
