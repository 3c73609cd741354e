/// @file test_reliability.cpp
/// Regression tests for engine bugs found under stress (issue "Reliability"):
///  1. a nested backward that used a device worker dropped the outer call's
///     monitor of it, so the outer call hung when the worker died later;
///  2. ~Engine hung while a thread that had crossed to a device (and so
///     created an actor on its own thread) was still alive;
///  3. bad EngineConfig values crashed the process or were accepted;
///  4. (guarded against) a failed call's late messages reaching the next
///     call through the caller mailbox it would otherwise have parked;
/// and the stack guard: a huge max_recursion_depth cannot overflow a
/// thread's stack. A hang fails the test by timeout, then ends the process
/// (a stuck engine cannot be destroyed).

#define BOOST_TEST_MODULE actors_reliability
#include <boost/test/unit_test.hpp>

#include <pthread.h>

#include <caf/exit_reason.hpp>
#include <caf/send.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "actorgrad/actors/default_engine.h"
#include "actorgrad/actors/engine.h"
#include "actorgrad/device/cuda/cuda_backend.h"
#include "actorgrad/device/cuda/plugin_loader.h"
#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/engine/errors.h"
#include "tests/actors/actor_test_util.h"

using namespace actorgrad;
using testing::contains_all;
using testing::lambda_op;

namespace {

const Device sim0 = Device::sim(0);

/// Runs `fn` on its own thread; if it has not returned after `limit`, the
/// test fails and the process ends (what is stuck cannot be cleaned up).
template <class F>
void within(std::chrono::seconds limit, const char* what, F fn) {
  std::packaged_task<void()> task(std::move(fn));
  auto done = task.get_future();
  std::thread t(std::move(task));
  if (done.wait_for(limit) != std::future_status::ready) {
    std::fprintf(stderr, "FAILED: %s did not finish within %lld s (hang)\n", what,
                 static_cast<long long>(limit.count()));
    std::fflush(stderr);
    std::_Exit(1);
  }
  t.join();
  done.get(); // rethrows a failure of fn
}

} // namespace

// Bug 1: the outer call monitors sim:0; a CPU node of it makes a nested
// backward through sim:0 (same coordinating actor, monitors sim:0 again and
// stops monitoring at its end); then sim:0 is killed while the outer call
// still waits for it. The outer call must fail naming sim:0, not hang.
BOOST_AUTO_TEST_CASE(nested_call_keeps_the_outer_calls_monitor) {
  Engine engine(EngineConfig{{sim0}});
  Engine* e = &engine;
  Tensor x = Tensor::uniform({3}, -1, 1, 1).set_requires_grad(true);
  Tensor on_sim = x.to(sim0);
  // Runs on sim:0 after the nested call: kills its own worker, so its
  // output never arrives.
  Tensor killed = lambda_op(on_sim, "KillsSim0", [e](variable_list&& g) {
                    caf::anon_send_exit(e->worker(sim0), caf::exit_reason::kill);
                    return std::move(g);
                  }).first;
  // Runs on the caller (CPU) before: a nested backward through sim:0.
  Tensor nests = lambda_op(killed.to(Device::cpu()), "NestsThroughSim0", [](variable_list&& g) {
                   AutoGradMode forward(true); // nodes run with grad mode off
                   Tensor y = Tensor::ones({2}).set_requires_grad(true);
                   Tensor z = sum(mul(y.to(sim0), y.to(sim0))).to(Device::cpu());
                   variable_list dy = grad({z}, {y});
                   BOOST_TEST(dy[0].to_vector() == (std::vector<double>{2.0, 2.0}));
                   return std::move(g);
                 }).first;
  std::string message;
  within(std::chrono::seconds(20), "the outer backward after its worker died", [&] {
    try {
      backward({sum(nests)}, {}, engine);
      message = "backward returned normally";
    } catch (const EngineError& err) {
      message = err.what();
    }
  });
  BOOST_TEST(contains_all(message, {"sim:0", "worker", "stopped"}), message);
  // The engine replaced the worker and works again.
  Tensor w = Tensor::ones({2}).set_requires_grad(true);
  backward({sum(mul(w.to(sim0), w.to(sim0))).to(Device::cpu())}, {}, engine);
  BOOST_TEST(w.grad().to_vector() == (std::vector<double>{2.0, 2.0}));
}

// Bug 2: threads that used the engine (a call crossing to sim:0, an async
// call, a nested call from another engine's device worker) are still alive
// when the engine is destroyed; the destructor must return.
BOOST_AUTO_TEST_CASE(engine_destroyed_while_threads_that_used_it_live) {
  auto engine = std::make_unique<Engine>(EngineConfig{{sim0}});
  Engine* e = engine.get();
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> used;
  std::thread user([&, released] {
    Tensor w = Tensor::ones({2}).set_requires_grad(true);
    backward({sum(w.to(sim0)).to(Device::cpu())}, {}, *e);
    Tensor v = Tensor::ones({2}).set_requires_grad(true);
    e->backward_async({sum(v.to(sim0)).to(Device::cpu())}).get();
    used.set_value();
    released.wait(); // alive while the engine is destroyed
  });
  used.get_future().get();
  // Another engine's device worker makes a call on `engine` from a node.
  {
    Engine other(EngineConfig{{Device::sim(1)}});
    Tensor u = Tensor::ones({2}).set_requires_grad(true);
    Tensor through = lambda_op(u.to(Device::sim(1)), "CallsTheFirstEngine", [e](variable_list&& g) {
                       AutoGradMode forward(true); // nodes run with grad mode off
                       Tensor w = Tensor::ones({2}).set_requires_grad(true);
                       backward({sum(w.to(sim0)).to(Device::cpu())}, {}, *e);
                       return std::move(g);
                     }).first;
    backward({sum(through).to(Device::cpu())}, {}, other);
    within(std::chrono::seconds(20), "~Engine with live threads that used it",
           [&] { engine.reset(); });
  }
  release.set_value();
  user.join();
}

// Bug 3: bad configurations are refused with a message naming the setting.
BOOST_AUTO_TEST_CASE(bad_configurations_are_refused_by_name) {
  auto refused = [](EngineConfig cfg, std::vector<std::string> parts) {
    try {
      Engine engine(std::move(cfg));
      BOOST_ERROR("accepted a bad EngineConfig (" << parts.front() << ")");
    } catch (const std::invalid_argument& e) {
      BOOST_TEST(contains_all(e.what(), parts), e.what());
    }
  };
  EngineConfig zero_threads;
  zero_threads.scheduler_threads = 0;
  refused(zero_threads, {"scheduler_threads", "at least 1"});
  for (int depth : {0, -3}) {
    EngineConfig c;
    c.max_recursion_depth = depth;
    refused(c, {"max_recursion_depth", std::to_string(depth)});
  }
  EngineConfig negative_spin;
  negative_spin.spin_before_block = std::chrono::nanoseconds(-1);
  refused(negative_spin, {"spin_before_block", "-1 ns"});
  refused(EngineConfig{{sim0, Device::sim(1), sim0}}, {"sim:0", "twice"});
  refused(EngineConfig{{Device::cpu()}}, {"cpu"});
  // One past the last CUDA device: without the CUDA plugin (not built, or
  // not found) that is cuda:0, and the reason names the plugin.
  const Device no_gpu = Device::cuda(static_cast<std::int16_t>(cuda::device_count()));
  refused(EngineConfig{{no_gpu}}, {no_gpu.str(), "cannot be served",
                                   cuda::find_plugin() ? "CUDA device" : "libactorgrad_cuda.so"});
  // The embedding constructor checks too.
  {
    Engine host;
    EngineConfig c;
    c.max_recursion_depth = 0;
    BOOST_CHECK_THROW(Engine(host.system(), c), std::invalid_argument);
  }
  // A good configuration still works after all that.
  Engine ok(EngineConfig{{sim0}});
  Tensor w = Tensor::ones({2}).set_requires_grad(true);
  backward({sum(w.to(sim0)).to(Device::cpu())}, {}, ok);
  BOOST_TEST(w.grad().to_vector() == (std::vector<double>{1.0, 1.0}));
}

// Note [Parked caller mailbox] (actors/detail/caller_mailbox_lease.cpp): a caller's
// mailbox is parked for the next call only when nothing of the calls it
// coordinated can still arrive. Here a call fails because sim:0's worker
// dies while a node on sim:1 is still running; once the call has failed,
// that node returns and its gradient travels on to the failed call's
// mailbox. The calls that follow on the same thread must get their own
// gradients and must not be fed (or loop forever on) the stale one.
BOOST_AUTO_TEST_CASE(a_failed_calls_late_messages_do_not_reach_later_calls) {
  const Device sim1 = Device::sim(1);
  Engine engine(EngineConfig{{sim0, sim1}});
  Engine* e = &engine;
  struct Gates {
    std::promise<void> running, release;
    std::shared_future<void> running_f = running.get_future().share();
    std::shared_future<void> release_f = release.get_future().share();
  };
  auto gates = std::make_shared<Gates>(); // outlives the call: its node runs on
  Tensor x = Tensor::ones({2}).set_requires_grad(true);
  // The hook runs inside the node that copies x's gradient back from sim:1,
  // whose output goes to x on the CPU: a message to the caller's mailbox.
  Tensor late = x.to(sim1);
  late.register_hook([gates](const Tensor&) {
    gates->running.set_value();
    gates->release_f.wait_for(std::chrono::seconds(10));
    return Tensor();
  });
  Tensor killer = lambda_op(x.to(sim0), "KillsSim0", [gates, e](variable_list&& g) {
                    gates->running_f.wait_for(std::chrono::seconds(10));
                    caf::anon_send_exit(e->worker(sim0), caf::exit_reason::kill);
                    return std::move(g);
                  }).first;
  Tensor loss = add(sum(late).to(Device::cpu()), sum(killer).to(Device::cpu()));
  within(std::chrono::seconds(60), "calls after a call failed with work in flight", [&] {
    std::string message = "backward returned normally";
    try {
      backward({loss}, {}, engine);
    } catch (const EngineError& err) {
      message = err.what();
    }
    BOOST_TEST(contains_all(message, {"sim:0", "stopped"}), message);
    gates->release.set_value(); // its gradient now heads for the failed call's mailbox
    for (int i = 0; i < 50; ++i) {
      Tensor w = Tensor::from_vector({1.0, 2.0}, {2}).set_requires_grad(true);
      backward({sum(mul(w.to(sim1), w.to(sim1))).to(Device::cpu())}, {}, engine);
      BOOST_TEST(w.grad().to_vector() == (std::vector<double>{2.0, 4.0}), "call " << i);
    }
  });
}

// EngineConfig::spin_before_block (Note [Spinning before blocking] in
// actors/detail/runner.cpp): the same gradients as blocking at once, both
// when each awaited message comes while the waiting thread spins (every
// node hops between the CPU and two sim devices) and when it comes after
// the thread gave up and blocked (a hook sleeps 5 ms on sim:1, twenty times
// the spin).
BOOST_AUTO_TEST_CASE(spinning_before_blocking_changes_no_gradient) {
  const Device sim1 = Device::sim(1);
  const auto gradient = [&](std::chrono::nanoseconds spin, bool slow) {
    EngineConfig config{{sim0, sim1}};
    config.spin_before_block = spin;
    Engine engine(std::move(config));
    Tensor x = Tensor::from_vector({0.5, -1.5, 2.0}, {3}).set_requires_grad(true);
    Tensor y = x;
    for (int i = 0; i < 30; ++i) {
      y = y.to(i % 3 == 0 ? sim0 : i % 3 == 1 ? sim1 : Device::cpu()) * (1.0 + 0.01 * i);
      if (slow && i == 13)
        y.register_hook([](const Tensor&) {
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
          return Tensor();
        });
    }
    backward({sum(y.to(Device::cpu()))}, {}, engine);
    return x.grad().to_vector();
  };
  using std::chrono::microseconds;
  for (bool slow : {false, true}) {
    const auto want = gradient(microseconds(0), slow);
    BOOST_TEST(gradient(microseconds(250), slow) == want, (slow ? "slow" : "fast"));
  }
}

// Malformed ACTORGRAD_DEVICES values (and a CUDA device past the last one,
// cuda:0 without a GPU): the default engine's first use throws naming the
// value, and the process goes on (the next use tries again). Runs before the
// case below, whose good value creates the default engine for good.
BOOST_AUTO_TEST_CASE(default_engine_refuses_malformed_devices) {
  const std::string no_gpu = "cuda:" + std::to_string(cuda::device_count());
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
    {"sim:x", {"unknown device 'sim:x'", "expected cpu, sim:N or cuda:N"}},
    {"gpu:0", {"unknown device 'gpu:0'"}},
    {"sim:0,cuda", {"unknown device 'cuda'"}},
    {"sim:0,sim:-1", {"unknown device 'sim:-1'"}},
    {no_gpu, {no_gpu, "cannot be served"}},
  };
  for (const auto& [value, parts] : cases) {
    ::setenv("ACTORGRAD_DEVICES", value.c_str(), 1);
    try {
      default_engine();
      BOOST_ERROR("the default engine accepted ACTORGRAD_DEVICES=" << value);
    } catch (const std::invalid_argument& e) {
      BOOST_TEST(contains_all(e.what(), parts), value << ": " << e.what());
    }
  }
}

// ACTORGRAD_DEVICES naming a device that cannot be served: the default
// engine's first use throws naming it, the process goes on, and a good
// value works on the next use.
BOOST_AUTO_TEST_CASE(default_engine_refuses_unservable_devices_and_retries) {
  ::setenv("ACTORGRAD_DEVICES", "sim:0,cuda:7", 1);
  try {
    default_engine();
    BOOST_ERROR("the default engine accepted cuda:7");
  } catch (const std::invalid_argument& e) {
    BOOST_TEST(contains_all(e.what(), {"cuda:7", "cannot be served"}), e.what());
  }
  ::setenv("ACTORGRAD_DEVICES", "sim:1", 1);
  Tensor w = Tensor::ones({2}).set_requires_grad(true);
  backward({sum(w.to(sim0)).to(Device::cpu())}, {}, default_engine());
  BOOST_TEST(w.grad().to_vector() == (std::vector<double>{1.0, 1.0}));
}

namespace {

std::atomic<int> levels_run{0};

/// backward nested `levels` deep, each level inside the node of the one
/// before; returns x's gradient (1).
double nest(int levels) {
  AutoGradMode forward(true); // nodes run with grad mode off
  Tensor x = Tensor::ones({1}).set_requires_grad(true);
  Tensor y = lambda_op(x, "Nest", [levels](variable_list&& g) {
               levels_run.fetch_add(1);
               if (levels > 1)
                 g[0] = mul(g[0], nest(levels - 1));
               return std::move(g);
             }).first;
  backward({sum(y)});
  return x.grad().to_vector()[0];
}

struct NestArgs {
  Engine* engine;
  int levels;
  double result = 0;
  std::exception_ptr error;
};

void* nest_on_thread(void* p) {
  auto* a = static_cast<NestArgs*>(p);
  try {
    a->result = [&] {
      // The default executor inside a node is the running engine; the
      // outermost call goes to the engine under test.
      Tensor x = Tensor::ones({1}).set_requires_grad(true);
      Tensor y = lambda_op(x, "Outer", [a](variable_list&& g) {
                   levels_run.fetch_add(1);
                   g[0] = mul(g[0], nest(a->levels - 1));
                   return std::move(g);
                 }).first;
      backward({sum(y)}, {}, *a->engine);
      return x.grad().to_vector()[0];
    }();
  } catch (...) {
    a->error = std::current_exception();
  }
  return nullptr;
}

} // namespace

// A max_recursion_depth far beyond what a 1 MiB stack holds (3,000 nested
// calls take several MiB): the stack guard moves calls to a fresh stack
// before the stack runs out. Without it this test dies of a stack overflow.
BOOST_AUTO_TEST_CASE(huge_recursion_depth_does_not_overflow_a_small_stack) {
  EngineConfig cfg;
  cfg.max_recursion_depth = 1'000'000;
  Engine engine(cfg);
  NestArgs args{&engine, 3000, 0.0, nullptr};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 1 << 20);
  pthread_t thread;
  BOOST_REQUIRE(pthread_create(&thread, &attr, nest_on_thread, &args) == 0);
  pthread_attr_destroy(&attr);
  pthread_join(thread, nullptr);
  if (args.error)
    std::rethrow_exception(args.error);
  BOOST_TEST(args.result == 1.0);
  BOOST_TEST(levels_run.load() == 3000);
  BOOST_TEST(engine.stats().fresh_stacks > 0, "the stack guard moved no call to a fresh stack");
}
