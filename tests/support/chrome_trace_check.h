#pragma once
/// @file chrome_trace_check.h
/// Boost.Test checks of a Chrome trace file's structure (tools/trace/
/// chrome_json.h): every event on a named track of a named process (one
/// per recording merged, else 1; a track in one process only), timestamps
/// monotonic per track, node slices with their args, and every message a
/// paired flow arrow (`s` and `f` with the same id, cat, name and bp "e",
/// each end inside a slice on its track), as is every launch of device work
/// but a record (from the launching node to its span on the stream's
/// track), queue counters non-negative and present where messages were
/// received. Header-only; include it from a
/// Boost.Test binary (after boost/test/unit_test.hpp).

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>

#include "actorgrad/tools/trace/timeline.h"

namespace actorgrad::testing {

/// Checks the Chrome trace structure of `json`; returns its node slice count.
inline std::size_t check_chrome_structure(const std::string& json, const trace::Timeline& tl) {
  boost::property_tree::ptree root;
  std::istringstream in(json);
  BOOST_REQUIRE_NO_THROW(boost::property_tree::read_json(in, root));
  BOOST_TEST(root.get<std::string>("displayTimeUnit") == "ns");
  const boost::property_tree::ptree& events = root.get_child("traceEvents");

  std::map<int, std::string> thread_names, process_names;
  std::map<int, int> pid_of_tid;
  std::map<int, double> last_ts;
  struct FlowEnd {
    int tid;
    double ts;
    std::string cat, name, bp;
  };
  std::map<std::string, std::vector<FlowEnd>> starts, finishes; // by id
  std::map<int, std::vector<std::pair<double, double>>> slices; // tid -> [ts, ts+dur]
  std::size_t node_slices = 0;
  std::size_t counters = 0;
  for (const auto& [key, e] : events) {
    BOOST_TEST(key.empty(), "traceEvents is an array");
    const std::string ph = e.get<std::string>("ph");
    const int pid = e.get<int>("pid");
    const int tid = e.get<int>("tid");
    if (ph == "M") {
      if (e.get<std::string>("name") == "process_name")
        process_names[pid] = e.get<std::string>("args.name");
      if (e.get<std::string>("name") == "thread_name") {
        BOOST_TEST(process_names.count(pid) == 1u, "process " << pid << " named before its tracks");
        thread_names[tid] = e.get<std::string>("args.name");
        BOOST_TEST(pid_of_tid.emplace(tid, pid).second, "tid " << tid << " in one process");
      }
      continue;
    }
    BOOST_TEST_REQUIRE(thread_names.count(tid) == 1u, "tid " << tid << " named before use");
    BOOST_TEST(pid == pid_of_tid[tid], "an event in its track's process");
    const double ts = e.get<double>("ts");
    BOOST_TEST(ts >= last_ts[tid], "timestamps monotonic on track " << thread_names[tid]);
    last_ts[tid] = ts;
    if (ph == "X") {
      const double dur = e.get<double>("dur");
      BOOST_TEST(dur >= 0);
      slices[tid].push_back({ts, ts + dur});
      if (e.get<std::string>("cat") == "node") {
        ++node_slices;
        for (const char* field :
             {"graph_task", "sequence_nr", "depth", "device", "stream", "actor"})
          BOOST_TEST(e.get_child_optional(std::string("args.") + field).has_value(),
                     "node slice args have " << field);
        BOOST_TEST(e.get<std::string>("args.actor") == thread_names[tid]);
        BOOST_TEST(e.get<std::string>("args.stream") == "default");
      }
    } else if (ph == "s" || ph == "f") {
      auto& side = ph == "s" ? starts : finishes;
      side[e.get<std::string>("id")].push_back(
        {tid, ts, e.get<std::string>("cat"), e.get<std::string>("name"), e.get<std::string>("bp")});
    } else if (ph == "C") { // queue counters (tools/trace/detail/queue_depth.h)
      ++counters;
      BOOST_TEST(e.get<long>("args.mailbox") >= 0);
      BOOST_TEST(e.get<long>("args.ready") >= 0);
    } else {
      BOOST_FAIL("unexpected phase " << ph);
    }
  }
  BOOST_TEST(thread_names.size() == tl.actors.size() + tl.streams.size(),
             "one track per actor and per stream");
  BOOST_TEST(process_names.size() == std::max<std::size_t>(1, tl.processes.size()),
             "one process per recording");
  BOOST_TEST(starts.size() == finishes.size());
  for (const auto& [id, s] : starts) {
    BOOST_TEST_CONTEXT("flow " << id) {
      BOOST_TEST_REQUIRE(s.size() == 1u);
      BOOST_TEST_REQUIRE(finishes.count(id) == 1u, "every flow arrow has both ends");
      const FlowEnd& f = finishes.at(id).front();
      BOOST_TEST(finishes.at(id).size() == 1u);
      BOOST_TEST(s[0].cat == f.cat);
      BOOST_TEST(s[0].name == f.name);
      BOOST_TEST((s[0].bp == "e" && f.bp == "e"));
      BOOST_TEST(s[0].ts <= f.ts);
      for (const FlowEnd* end : {&s[0], &f}) {
        const auto& on_track = slices[end->tid];
        BOOST_TEST(
          std::any_of(on_track.begin(), on_track.end(),
                      [&](const auto& sl) { return sl.first <= end->ts && end->ts <= sl.second; }),
          "a flow end lies in a slice it binds to");
      }
    }
  }
  std::size_t received = 0;
  for (const auto& m : tl.messages)
    received += m.received();
  std::size_t launched = 0;
  for (const auto& d : tl.device_spans)
    launched += d.kind != DeviceWork::record;
  BOOST_TEST(starts.size() == received + launched,
             "one arrow per received message and per launch that ran");
  BOOST_TEST((received == 0 || counters > 0), "queue counter events where messages were received");
  return node_slices;
}

} // namespace actorgrad::testing
