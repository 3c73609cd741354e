/// @file test_trace_parallelism.cpp
/// The parallelism of a pass (tools/trace/detail/parallelism.h, Note [Parallelism
/// of a pass]) on hand-made timelines whose numbers are known: each track's
/// busy % of the pass, the parallelism achieved (node time / wall time),
/// the longest chain of dependent nodes through local feeds and messages,
/// the bound it gives, and the summary's text of them.
#define BOOST_TEST_MODULE trace_parallelism
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "actorgrad/tools/trace/detail/parallelism.h"
#include "actorgrad/tools/trace/detail/summary.h"
#include "tests/support/hand_made_trace.h"

using namespace actorgrad::trace;
using namespace actorgrad::trace::detail;
using actorgrad::testing::slice;

namespace {

/// A Grad message of pass 1 from the node `producer` on actor `from` to the
/// node `to` on actor `to_actor`, sent at `send` and received at `recv`.
Message grad(std::size_t from, std::uint64_t producer, std::size_t to_actor, std::uint64_t to,
             std::int64_t send, std::int64_t recv) {
  Message m;
  m.kind = MessageKind::grad;
  m.graph_task = 1;
  m.sequence_nr = to;
  m.from_actor = from;
  m.producer = producer;
  m.to_actor = to_actor;
  m.send_ns = send;
  m.recv_ns = recv;
  return m;
}

/// One pass over the caller (actor 0) and a CPU worker (actor 1):
///
///   caller:      R [0, 100)  A [100, 400)  C [400, 500)
///   cpu worker:        B [150, 350)              D [520, 700)
///
/// R feeds A on the caller and B by a message; A feeds C on the caller; C
/// feeds D by a message and B feeds D on the worker. Node time 880 ns in
/// 700 ns of wall; the heaviest chain R A C D is 680 ns (R B D only 480).
Timeline known() {
  Timeline tl;
  tl.actors = {"caller 1", "cpu worker 7"};
  tl.slices = {slice(0, "R", 0, 100, 10), slice(0, "A", 100, 400, 9), slice(0, "C", 400, 500, 7),
               slice(1, "B", 150, 350, 8), slice(1, "D", 520, 700, 6)};
  auto set_inputs = [&](const std::string& node, std::vector<std::uint64_t> from) {
    for (Slice& s : tl.slices)
      if (s.node == node)
        s.local_inputs = from;
  };
  set_inputs("A", {10});
  set_inputs("C", {9});
  set_inputs("D", {8});
  tl.messages = {grad(0, 10, 1, 8, 90, 140), grad(0, 7, 1, 6, 490, 510)};
  tl.normalize();
  return tl;
}

/// The slices of pass 1 of `tl`, by start.
std::vector<std::size_t> pass_slices(const Timeline& tl) {
  std::vector<std::size_t> idx;
  for (std::size_t i = 0; i < tl.slices.size(); ++i)
    idx.push_back(i);
  std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
    return tl.slices[a].start_ns < tl.slices[b].start_ns;
  });
  return idx;
}

std::vector<std::string> names(const Timeline& tl, const std::vector<std::size_t>& chain) {
  std::vector<std::string> out;
  for (std::size_t i : chain)
    out.push_back(tl.slices[i].node);
  return out;
}

} // namespace

BOOST_AUTO_TEST_CASE(busy_percent_parallelism_and_longest_chain_of_a_known_pass) {
  const Timeline tl = known();
  const PassParallelism p = pass_parallelism(tl, 0, 1, pass_slices(tl));
  BOOST_TEST(p.wall_ns == 700);
  BOOST_TEST(p.node_ns == 880);
  BOOST_TEST(p.parallelism == 880.0 / 700.0, boost::test_tools::tolerance(1e-12));
  BOOST_TEST_REQUIRE(p.tracks.size() == 2u);
  BOOST_TEST(tl.actors[p.tracks[0].actor] == "caller 1");
  BOOST_TEST(p.tracks[0].busy_ns == 500);
  BOOST_TEST(p.tracks[0].busy_percent == 100.0 * 500 / 700, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(p.tracks[0].nodes == 3u);
  BOOST_TEST(tl.actors[p.tracks[1].actor] == "cpu worker 7");
  BOOST_TEST(p.tracks[1].busy_ns == 380);
  BOOST_TEST(p.tracks[1].busy_percent == 100.0 * 380 / 700, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(p.tracks[1].nodes == 2u);
  BOOST_TEST((names(tl, p.critical_chain) == std::vector<std::string>{"R", "A", "C", "D"}));
  BOOST_TEST(p.critical_ns == 680);
  BOOST_TEST(p.max_parallelism == 880.0 / 680.0, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(the_chain_follows_the_heavier_branch) {
  // B grows to 500 ns on the worker (and D moves after it): R B D is now
  // 100 + 500 + 180 = 780 ns, heavier than R A C D's 680.
  Timeline tl = known();
  for (Slice& s : tl.slices) {
    if (s.node == "B")
      s.end_ns = 650;
    if (s.node == "D") {
      s.start_ns = 660;
      s.end_ns = 840;
    }
  }
  const PassParallelism p = pass_parallelism(tl, 0, 1, pass_slices(tl));
  BOOST_TEST((names(tl, p.critical_chain) == std::vector<std::string>{"R", "B", "D"}));
  BOOST_TEST(p.critical_ns == 780);
  BOOST_TEST(p.wall_ns == 840);
  BOOST_TEST(p.node_ns == 100 + 300 + 100 + 500 + 180);
}

BOOST_AUTO_TEST_CASE(a_chain_on_one_track_has_parallelism_one_and_no_room_for_workers) {
  Timeline tl;
  tl.actors = {"caller 1"};
  tl.slices = {slice(0, "A", 0, 100, 3), slice(0, "B", 100, 250, 2), slice(0, "C", 250, 300, 1)};
  tl.slices[1].local_inputs = {3};
  tl.slices[2].local_inputs = {2};
  tl.normalize();
  const PassParallelism p = pass_parallelism(tl, 0, 1, pass_slices(tl));
  BOOST_TEST(p.parallelism == 1.0, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(p.tracks[0].busy_percent == 100.0, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(p.critical_ns == 300);
  BOOST_TEST(p.max_parallelism == 1.0, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(the_summary_shows_each_pass_s_parallelism_and_tracks) {
  const Timeline tl = known();
  const Summary s = summarize(tl);
  BOOST_TEST_REQUIRE(s.parallelism.size() == 1u);
  BOOST_TEST(s.parallelism[0].node_ns == 880);
  const std::string text = format_summary(tl, s);
  BOOST_TEST_INFO("summary:\n" << text);
  for (const char* part :
       {"parallelism of GraphTask 1: 1.26x (node time 880 ns in 700 ns wall)",
        "longest chain of dependent nodes 680 ns over 4 nodes: at most 1.29x",
        "caller 1                   busy  71.4%", "cpu worker 7               busy  54.3%"})
    BOOST_TEST(text.find(part) != std::string::npos, "the summary shows: " << part);
}
