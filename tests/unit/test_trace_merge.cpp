#define BOOST_TEST_MODULE unit_trace_merge
#include <boost/test/unit_test.hpp>

// Merging the recordings of several processes (tools/trace/detail/merge.h): the
// clock offsets estimated from message pairs with known skews (Note [Clock
// offsets from message pairs]), causality with messages one way only, and
// a merge of two hand-made recordings: one process each, the gradient and
// its reply paired across them, timestamps corrected, the cross-process
// critical path, and the merged file read back.

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <unistd.h>

#include "actorgrad/tools/trace/detail/chrome_json.h"
#include "actorgrad/tools/trace/detail/clock_offsets.h"
#include "actorgrad/tools/trace/detail/merge.h"
#include "actorgrad/tools/trace/detail/summary.h"
#include "tests/support/chrome_trace_check.h"

using namespace actorgrad;
using namespace actorgrad::trace;
using namespace actorgrad::trace::detail;

namespace {

constexpr std::int64_t us = 1000;
constexpr std::int64_t ms = 1000 * us;

/// Requests from `a` to `b` answered by replies, delays uniform in [lo,
/// hi] each way, `theta` = b's clock minus a's; times on each own clock.
void exchange(std::vector<ClockSample>& out, std::size_t a, std::size_t b, std::int64_t theta_a,
              std::int64_t theta_b, int n, std::int64_t lo, std::int64_t hi, std::mt19937& rng,
              std::uint64_t& flow) {
  std::uniform_int_distribution<std::int64_t> delay(lo, hi);
  std::int64_t t = 0; // true time
  for (int i = 0; i < n; ++i, t += ms) {
    const std::int64_t d1 = delay(rng), d2 = delay(rng);
    ++flow;
    out.push_back({a, b, t + theta_a, t + d1 + theta_b, flow});
    out.push_back({b, a, t + d1 + 100 * us + theta_b, t + d1 + 100 * us + d2 + theta_a, flow});
  }
}

} // namespace

BOOST_AUTO_TEST_CASE(offsets_from_request_reply_pairs_recover_known_skews) {
  // Process 1's clock is 5 ms ahead of 0's, process 2's 3 ms behind; 0
  // talks to 1, 1 to 2 (so 2's offset is found through 1). Each estimate
  // is off by at most half the difference of its two delays (60 us here);
  // the median of 41 is much closer.
  const std::int64_t theta[] = {0, 5 * ms, -3 * ms};
  std::mt19937 rng(7);
  std::vector<ClockSample> samples;
  std::uint64_t flow = 0;
  exchange(samples, 0, 1, theta[0], theta[1], 41, 40 * us, 160 * us, rng, flow);
  exchange(samples, 1, 2, theta[1], theta[2], 41, 40 * us, 160 * us, rng, flow);
  const std::vector<std::int64_t> est = estimate_clock_offsets(3, samples);
  BOOST_TEST_REQUIRE(est.size() == 3u);
  BOOST_TEST(est[0] == 0);
  for (int p : {1, 2})
    BOOST_TEST(std::llabs(est[p] - theta[p]) <= 30 * us,
               "process " << p << ": " << est[p] << " ns against " << theta[p]);
  for (const ClockSample& m : samples) // and so no message arrives before it left
    BOOST_TEST(m.recv_ns - est[m.to] >= m.send_ns - est[m.from]);
}

BOOST_AUTO_TEST_CASE(messages_one_way_bound_the_offset_by_causality) {
  // 0 -> 1 only, 50-150 us each. A receiver 5 ms behind: the wall-clock
  // alignment (offset 0) would put receipts before sends, so the offset is
  // the bound, the smallest r - s. A receiver ahead: 0 is allowed and kept.
  for (std::int64_t theta : {-5 * ms, 5 * ms}) {
    std::vector<ClockSample> samples;
    std::int64_t smallest = INT64_MAX;
    for (int i = 0; i < 20; ++i) {
      const std::int64_t s = i * ms, d = (50 + 5 * i) * us;
      samples.push_back({0, 1, s, s + d + theta, 0});
      smallest = std::min(smallest, d + theta);
    }
    const std::vector<std::int64_t> est = estimate_clock_offsets(2, samples);
    BOOST_TEST(est[1] == (theta < 0 ? smallest : 0), "theta " << theta);
    for (const ClockSample& m : samples)
      BOOST_TEST(m.recv_ns - est[1] >= m.send_ns);
  }
  BOOST_TEST(estimate_clock_offsets(3, {}) == std::vector<std::int64_t>(3, 0));
}

namespace {

/// A recording of one process: a pass (GraphTask `task`, one node from
/// `from` to `to`) on its caller and its agent's remote ends.
Timeline process(const std::string& name, std::uint64_t task, std::int64_t from, std::int64_t to,
                 std::vector<RemoteEnd> ends) {
  Timeline tl;
  tl.processes.push_back({name, 4000, 1'700'000'000'000'000'000, 0});
  tl.actors = {"caller 1", "distributed agent"};
  tl.slices.push_back({0, task, "Pass" + name, 1, 0, Device::cpu(), 0, from, to, std::nullopt, {}});
  for (RemoteEnd& e : ends)
    e.actor = 1;
  tl.remote_ends = std::move(ends);
  tl.normalize();
  return tl;
}

} // namespace

BOOST_AUTO_TEST_CASE(a_merge_pairs_the_messages_corrects_the_clocks_and_finds_the_path) {
  // Process B's clock is 2 ms ahead. True times (A's clock): A's pass 0-100
  // us, its gradient sent at 100, received at 150 (50 us), B's pass 160-500,
  // the reply sent at 510, received at 600 (90 us). B records 2 ms more.
  const Timeline a = process("rank 0", 1, 0, 100 * us,
                             {{MessageKind::remote_grad, true, 77, 1, "B", 0, 100 * us},
                              {MessageKind::remote_ack, false, 77, 1, "B", 0, 600 * us}});
  const Timeline b = process("rank 1", 5, 2160 * us, 2500 * us,
                             {{MessageKind::remote_grad, false, 77, 5, "A", 0, 2150 * us},
                              {MessageKind::remote_ack, true, 77, 5, "A", 0, 2510 * us},
                              {MessageKind::remote_grad, true, 99, 5, "C", 0, 2400 * us}});
  const Timeline m = merge_timelines({a, b});
  BOOST_TEST_REQUIRE(m.processes.size() == 2u);
  BOOST_TEST(m.processes[1].name == "rank 1");
  BOOST_TEST(m.actors.size() == 4u);
  BOOST_TEST(m.process_of_actor(3) == 1u);
  // NTP: ((2150 - 100) - (600 - 2510)) / 2 = 1980 us (off by half the
  // delays' difference, 20 us).
  BOOST_TEST(m.processes[1].shift_ns == -1980 * us);
  BOOST_TEST_REQUIRE(m.messages.size() == 2u);
  for (const Message& msg : m.messages) {
    BOOST_TEST(msg.flow == 77u);
    BOOST_TEST(m.process_of_actor(msg.from_actor) != m.process_of_actor(*msg.to_actor));
    BOOST_TEST(*msg.recv_ns >= msg.send_ns);
  }
  BOOST_TEST((m.messages[0].kind == MessageKind::remote_grad));
  BOOST_TEST(m.messages[0].to_graph_task == 5u);
  BOOST_TEST_REQUIRE(m.remote_ends.size() == 1u, "the gradient to C, not in the merge");
  BOOST_TEST(m.remote_ends[0].flow == 99u);

  const Summary s = summarize(m);
  BOOST_TEST(s.critical_paths.size() == 2u, "GraphTask 1 on rank 0 and 5 on rank 1");
  BOOST_TEST_REQUIRE(s.process_paths.size() == 1u);
  const ProcessPath& p = s.process_paths[0];
  BOOST_TEST_REQUIRE(p.steps.size() == 4u, "pass, RemoteGrad, pass, RemoteAck");
  BOOST_TEST(!p.steps[0].message);
  BOOST_TEST(s.critical_paths[p.steps[0].index].process == 0u);
  BOOST_TEST(p.steps[1].message);
  BOOST_TEST(describe_step(m, s, p.steps[1]).find("RemoteGrad rank 0 -> rank 1") == 0u,
             describe_step(m, s, p.steps[1]));
  BOOST_TEST(s.critical_paths[p.steps[2].index].process == 1u);
  BOOST_TEST((m.messages[p.steps[3].index].kind == MessageKind::remote_ack));
  BOOST_TEST(p.end_ns - p.start_ns == 600 * us);
  BOOST_TEST(format_summary(m, s).find("cross-process critical path") != std::string::npos);

  // Written and read back: processes, their tracks and the arrows survive.
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("actorgrad_merge_" + std::to_string(::getpid()) + ".json"))
                             .string();
  {
    std::ofstream out(path);
    write_chrome_json(m, out);
  }
  const Timeline back = read_chrome_json(path);
  std::ostringstream json;
  json << std::ifstream(path).rdbuf();
  std::remove(path.c_str());
  testing::check_chrome_structure(json.str(), back);
  BOOST_TEST(back.processes.size() == 2u);
  BOOST_TEST(back.processes[1].shift_ns == m.processes[1].shift_ns);
  BOOST_TEST(back.actor_process == m.actor_process);
  BOOST_TEST(back.messages.size() == 2u);
  BOOST_TEST(back.remote_ends.size() == 1u);
  BOOST_TEST(summarize(back).process_paths.size() == 1u);
}
