#define BOOST_TEST_MODULE distributed_trace
#include <boost/test/unit_test.hpp>

// Traces of a distributed backward across three processes (issue #61):
// two `actorgrad worker --trace DIR/w_%r.json` processes and the caller,
// which records its own Runtime's engine, run x -> a: linear -> caller:
// tanh -> c: linear -> loss three times; each worker writes its trace
// (named by its rank: its host-port) when stopped. `actorgrad trace
// --merge` joins the three: one process per recording, every gradient and
// reply between processes a flow arrow paired across them (the Chrome
// trace checks), every message received after it was sent on the merged
// clock, and the cross-process critical path of each backward, from the
// caller's pass through both workers back to it, in the summary and the
// HTML report. A worker that ran no backward pass writes nothing.

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

#include "actorgrad/actors/engine.h"
#include "actorgrad/tools/trace/detail/chrome_json.h"
#include "actorgrad/tools/trace/detail/summary.h"
#include "actorgrad/tools/trace/trace_request.h"
#include "tests/distributed/dist_test_util.h"
#include "tests/distributed/worker_process.h"
#include "tests/support/chrome_trace_check.h"

using namespace actorgrad;
using namespace actorgrad::testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// A fresh directory for this test's traces.
fs::path trace_dir(const std::string& tag) {
  const fs::path dir =
    fs::temp_directory_path() / ("actorgrad_dist_trace_" + tag + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

/// Stops `w` with SIGTERM (it writes its trace then) and waits for it.
void stop(WorkerProcess& w) {
  w.process().signal(SIGTERM);
  const auto code = w.process().wait(20s);
  BOOST_TEST_REQUIRE(code.has_value(), "the worker stopped");
  BOOST_TEST(*code == 0, w.process().out());
}

/// `w_<rank>.json` of worker `w`, as `%r` names it.
std::string worker_trace(const fs::path& dir, const WorkerProcess& w) {
  return (dir / ("w_127.0.0.1-" + std::to_string(w.port()) + ".json")).string();
}

} // namespace

BOOST_AUTO_TEST_CASE(merged_trace_of_three_processes_pairs_every_flow_and_shows_the_path) {
  const fs::path dir = trace_dir("three");
  const std::string spec = (dir / "w_%r.json").string();
  WorkerProcess wa({"--trace", spec}), wc({"--trace", spec}), idle({"--trace", spec});
  constexpr int kBackwards = 3;
  {
    remote::Runtime rt;
    auto a = rt.connect("127.0.0.1", wa.port());
    auto c = rt.connect("127.0.0.1", wc.port());
    rt.connect("127.0.0.1", idle.port()); // connected, never asked for a backward
    rt.engine().start_recording();
    for (int i = 0; i < kBackwards; ++i)
      BOOST_TEST(two_layer_difference(rt, a, c, 40 + i, "W", "V") <= 1e-12);
    const std::string written =
      trace::write_recording(rt.engine().stop_recording(), {(dir / "caller.json").string(), 0},
                             trace::TraceProcess::current(rt.name()));
    BOOST_TEST(written == (dir / "caller.json").string());
  }
  for (WorkerProcess* w : {&wa, &wc, &idle})
    stop(*w);
  BOOST_TEST(!fs::exists(worker_trace(dir, idle)), "a worker with no backward writes nothing");
  BOOST_TEST(idle.process().out().find("no trace written") != std::string::npos);

  const std::string merged = (dir / "all.json").string(), html = (dir / "all.html").string(),
                    summary = (dir / "summary.txt").string();
  const testing::RunResult r = testing::run(
    {actorgrad_binary(), "trace", "--merge", (dir / "caller.json").string(), worker_trace(dir, wa),
     worker_trace(dir, wc), "--out", merged, "--html", html, "--summary", summary},
    60s);
  BOOST_TEST_REQUIRE(r.status == 0, r.err);

  const trace::Timeline tl = trace::detail::read_chrome_json(merged);
  testing::check_chrome_structure(read_file(merged), tl);
  BOOST_TEST_REQUIRE(tl.processes.size() == 3u);
  BOOST_TEST(tl.processes[1].name == wa.name());
  BOOST_TEST(tl.processes[2].name == wc.name());
  BOOST_TEST(tl.remote_ends.empty(), "every message between processes paired");
  std::size_t grads = 0, acks = 0;
  for (const trace::Message& m : tl.messages) {
    if (!trace::crosses_processes(m.kind))
      continue;
    BOOST_TEST_REQUIRE(m.received());
    BOOST_TEST(tl.process_of_actor(m.from_actor) != tl.process_of_actor(*m.to_actor));
    BOOST_TEST(*m.recv_ns >= m.send_ns, "received after it was sent, on the merged clock");
    (m.kind == trace::MessageKind::remote_grad ? grads : acks) += 1;
  }
  // Per backward: caller -> c, c -> caller (h's gradient), caller -> a,
  // a -> caller (x's gradient); each answered.
  BOOST_TEST(grads == 4u * kBackwards);
  BOOST_TEST(acks == 4u * kBackwards);

  const trace::detail::Summary s = trace::detail::summarize(tl);
  BOOST_TEST_REQUIRE(s.process_paths.size() == std::size_t{kBackwards});
  for (const trace::detail::ProcessPath& p : s.process_paths) {
    // The caller's pass, then c, the caller, a and the caller again, each
    // reached by a gradient, then the four replies back.
    BOOST_TEST_REQUIRE(p.steps.size() == 13u);
    std::set<std::size_t> processes;
    for (std::size_t i = 0; i < 9; ++i) {
      BOOST_TEST(p.steps[i].message == (i % 2 == 1), "a pass, a gradient, a pass ...");
      if (!p.steps[i].message)
        processes.insert(s.critical_paths[p.steps[i].index].process);
    }
    BOOST_TEST(processes.size() == 3u, "the path runs through all three processes");
    BOOST_TEST(s.critical_paths[p.steps[0].index].process == 0u, "from the caller's pass");
    for (std::size_t i = 9; i < 13; ++i)
      BOOST_TEST((tl.messages[p.steps[i].index].kind == trace::MessageKind::remote_ack));
    BOOST_TEST(p.end_ns > p.start_ns);
  }
  const std::string page = read_file(html);
  BOOST_TEST(page.find("Cross-process critical path") != std::string::npos);
  BOOST_TEST(page.find("RemoteGrad " + tl.processes[0].name + " -&gt; " + wc.name()) !=
             std::string::npos);
  BOOST_TEST(read_file(summary).find("cross-process critical path") != std::string::npos);
  fs::remove_all(dir);
}
