#define BOOST_TEST_MODULE actors_thread_exit
#include <boost/test/unit_test.hpp>

// A thread that ends inside a node of its own backward call (pthread_exit,
// or a cancellation acted on at a cancellation point) unwinds through the
// engine as through any C++ code: its destructors run, it ends with its exit
// value, and the engine serves the next call. CPython ends a thread this way
// when it wants the GIL while the interpreter shuts down
// (PyThread_exit_thread), so a Python hook in a daemon thread's backward must
// end that thread, not the process (PyTorch issues 38228 and 38230). See
// Note [A thread that exits inside a node] in
// libengine/engine/detail/current_exception_or_unwind.h.

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "actorgrad/actors/engine.h"
#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/ops.h"
#include "tests/actors/actor_test_util.h"
#include "tests/support/child_process.h"

using namespace actorgrad;
using namespace actorgrad::testing;

using SharedEngineFixture = SharedEngine<1>;
BOOST_TEST_GLOBAL_FIXTURE(SharedEngineFixture);

namespace {

/// What a node of the thread under test passes to pthread_exit.
int exit_value = 0;

/// One thread that runs `body` (a backward whose node ends the thread).
struct ExitingThread {
  std::function<void()> body;
  /// Set by the destructor of a local of the thread's start function: the
  /// thread was unwound, not cut short.
  std::atomic<bool> unwound{false};
  /// Set when `body` returned (it must not).
  std::atomic<bool> returned{false};
  /// Set by the node before it waits to be cancelled.
  std::atomic<bool> in_node{false};
  pthread_t thread{};

  static void* start(void* self) {
    auto* t = static_cast<ExitingThread*>(self);
    struct Sentinel {
      std::atomic<bool>& flag;
      ~Sentinel() { flag = true; }
    } sentinel{t->unwound};
    t->body();
    t->returned = true;
    return nullptr;
  }

  void launch() { BOOST_REQUIRE_EQUAL(pthread_create(&thread, nullptr, &start, this), 0); }

  /// Joins the thread (at most 30 s); its exit value.
  void* join() {
    timespec deadline{};
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 30;
    void* result = nullptr;
    const int rc = pthread_timedjoin_np(thread, &result, &deadline);
    BOOST_REQUIRE_MESSAGE(rc == 0, "the thread did not end within 30 s (pthread_timedjoin_np: " +
                                     std::to_string(rc) + ")");
    return result;
  }
};

/// A node that ends its thread with pthread_exit(&exit_value).
variable_list exit_thread(variable_list&&) { pthread_exit(&exit_value); }

/// The same engine still computes d/dx sum(x * x on `d`) = 2x.
void check_engine_works(Device d) {
  Tensor x = Tensor::from_vector({1, 2, 3}, {3}, DType::f64).set_requires_grad(true);
  Tensor loss = sum(mul(x.to(d), x.to(d))).to(Device::cpu());
  bounded([&] { backward({loss}, {}, engine()); });
  BOOST_REQUIRE(x.grad().defined());
  BOOST_TEST(x.grad().to_vector() == (std::vector<double>{2, 4, 6}),
             boost::test_tools::per_element());
}

/// Checks that `t`, launched, ends with `expected` as its exit value,
/// unwound, and that the engine still works.
void check_ended(ExitingThread& t, void* expected) {
  BOOST_TEST(t.join() == expected);
  BOOST_TEST(t.unwound.load(), "the thread's locals were not destroyed");
  BOOST_TEST(!t.returned.load(), "the backward returned after its node ended the thread");
  check_engine_works(Device::cpu());
  check_engine_works(Device::sim(0));
}

/// Runs `body` on a thread of its own, which one of its nodes ends with
/// pthread_exit(&exit_value); checks as check_ended.
void check_thread_ends(std::function<void()> body) {
  ExitingThread t;
  t.body = std::move(body);
  t.launch();
  check_ended(t, &exit_value);
}

} // namespace

BOOST_AUTO_TEST_CASE(a_thread_that_exits_in_a_node_of_a_cpu_graph_ends_cleanly) {
  check_thread_ends([] {
    Tensor x = Tensor::uniform({4}, -1, 1, 1).set_requires_grad(true);
    Tensor y = lambda_op(mul(x, x), "ExitingNode", exit_thread).first;
    backward({sum(y)}, {}, engine());
  });
}

// The task has devices, so its CPU nodes run through the caller's Runner
// rather than the CPU-only loop, and sim:0's worker still runs a node of
// the task when the caller's thread ends: that node finishes, and the
// gradient it sends to the ended caller is dropped. The sim branch is made
// last, so its gradient leaves the CPU first (higher sequence_nr), and the
// exiting node waits until the slow node started.
BOOST_AUTO_TEST_CASE(a_thread_that_exits_while_a_device_runs_its_task_ends_cleanly) {
  std::atomic<bool> slow_node_started{false};
  std::atomic<bool> slow_node_ran{false};
  auto slow_node = [&](variable_list&& g) {
    slow_node_started = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    slow_node_ran = true;
    return std::move(g);
  };
  auto exit_once_started = [&](variable_list&& g) -> variable_list {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!slow_node_started.load() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::yield();
    return exit_thread(std::move(g));
  };
  check_thread_ends([&] {
    Tensor x = Tensor::uniform({4}, -1, 1, 2).set_requires_grad(true);
    Tensor on_cpu = lambda_op(x, "ExitingNode", exit_once_started).first;
    Tensor slow = lambda_op(x.to(Device::sim(0)), "SlowNode", slow_node).first;
    backward({add(sum(slow).to(Device::cpu()), sum(on_cpu))}, {}, engine());
  });
  BOOST_TEST(slow_node_started.load(), "the thread ended before sim:0 ran the slow node");
  BOOST_TEST(slow_node_ran.load());
}

BOOST_AUTO_TEST_CASE(a_thread_that_exits_in_a_nested_call_ends_cleanly) {
  check_thread_ends([] {
    Tensor x = Tensor::uniform({4}, -1, 1, 3).set_requires_grad(true);
    Tensor y = lambda_op(x, "NestingNode", [](variable_list&& g) {
                 AutoGradMode grad_on(true); // a node runs with grad mode off
                 Tensor z = Tensor::uniform({4}, -1, 1, 4).set_requires_grad(true);
                 Tensor w = lambda_op(z, "ExitingNode", exit_thread).first;
                 backward({sum(w)}, {}, engine());
                 return std::move(g);
               }).first;
    backward({sum(y)}, {}, engine());
  });
}

BOOST_AUTO_TEST_CASE(a_thread_cancelled_in_a_node_ends_cleanly) {
  ExitingThread t;
  t.body = [&t] {
    Tensor x = Tensor::uniform({4}, -1, 1, 5).set_requires_grad(true);
    Tensor y = lambda_op(x, "CancelledNode", [&t](variable_list&& g) {
                 t.in_node = true;
                 for (;;)
                   pthread_testcancel(); // a cancellation point
                 return std::move(g);
               }).first;
    backward({sum(y)}, {}, engine());
  };
  t.launch();
  while (!t.in_node.load())
    sched_yield();
  BOOST_REQUIRE_EQUAL(pthread_cancel(t.thread), 0);
  check_ended(t, PTHREAD_CANCELED);
}

namespace {

/// A nest of `levels` backward calls whose innermost node ends the thread.
void nest_and_exit(Engine& eng, int levels) {
  Tensor x = Tensor::uniform({2}, -1, 1, 6).set_requires_grad(true);
  Tensor y = lambda_op(x, "Level" + std::to_string(levels), [&eng, levels](variable_list&& g) {
               if (levels == 0)
                 pthread_exit(&exit_value);
               AutoGradMode grad_on(true);
               nest_and_exit(eng, levels - 1);
               return std::move(g);
             }).first;
  backward({sum(y)}, {}, eng);
}

} // namespace

// The child process of the next test case, which runs it by name (it is
// disabled otherwise): a limit of 1, so the third call of the nest runs on
// a fresh stack, and the thread ends there. It must stop with the message;
// exit status 0 is the failure the parent sees.
BOOST_AUTO_TEST_CASE(child_exits_on_a_fresh_stack, *boost::unit_test::disabled()) {
  EngineConfig cfg;
  cfg.max_recursion_depth = 1;
  Engine eng(cfg);
  ExitingThread t;
  t.body = [&eng] { nest_and_exit(eng, 3); };
  t.launch();
  t.join();
  std::_Exit(0);
}

BOOST_AUTO_TEST_CASE(a_thread_that_exits_on_a_fresh_stack_stops_the_process_saying_why) {
  const std::string self = boost::unit_test::framework::master_test_suite().argv[0];
  actorgrad::testing::ChildProcess child(
    {self, "--run_test=child_exits_on_a_fresh_stack", "--catch_system_errors=no"});
  const auto code = child.wait(std::chrono::seconds(60));
  BOOST_REQUIRE_MESSAGE(code.has_value(), "the child did not end within 60 s");
#ifdef __SANITIZE_THREAD__
  // ThreadSanitizer's pthread_exit stops a thread that exits on a fiber
  // itself (a CHECK of its own, exit status 66), before the engine's handler.
  BOOST_TEST(*code != 0, "stderr: " << child.err());
#else
  BOOST_TEST(*code == 128 + SIGABRT, "exit status " << *code << "; stderr: " << child.err());
  BOOST_TEST(child.err().find("inside a nested backward call past "
                              "EngineConfig::max_recursion_depth") != std::string::npos,
             child.err());
#endif
}
