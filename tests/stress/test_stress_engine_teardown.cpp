#define BOOST_TEST_MODULE stress_engine_teardown
#include <boost/test/unit_test.hpp>

// Stress: an Engine is destroyed while threads that used it are still
// alive (idle, their calls done): a thread whose graph stayed on the cpu,
// one whose synchronous call crossed to a sim device (its thread got a
// mailbox), one that waited for backward_async, one whose nested call
// crossed to a sim device. The engine is built and destroyed by a thread of
// its own; the destructor must return in bounded time (a hang fails the
// case), and the threads must then finish normally. A second case destroys
// an engine on another thread than the one that built it. Repeated for the time budget
// (ACTORGRAD_STRESS_SECONDS; 5 s by default, at least 3 rounds).

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "actorgrad/actors/engine.h"
#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/autograd/custom_function.h"
#include "actorgrad/libengine/autograd/grad_mode.h"
#include "actorgrad/libengine/ops.h"
#include "tests/stress/stress_util.h"

using namespace actorgrad;
using namespace actorgrad::testing;

namespace {

const Seconds kCallLimit{30};    ///< the calls of a round
const Seconds kDestroyLimit{10}; ///< ~Engine
const Seconds kExitLimit{10};    ///< a foreign thread's end, after ~Engine
const Device kSim0 = Device::sim(0), kSim1 = Device::sim(1);

/// The calls the foreign threads make: each returns "" when its gradients
/// are right.
std::string cpu_only(Engine& eng) {
  Tensor x = Tensor::from_vector({1, -2}, {2}).set_requires_grad();
  auto g = grad({sum(mul(x, x))}, {x}, {}, eng);
  return g[0].to_vector() == std::vector<double>{2, -4} ? "" : "cpu-only call: wrong gradient";
}

std::string crossing(Engine& eng) {
  Tensor x = Tensor::from_vector({1, -2}, {2}).set_requires_grad();
  Tensor loss = sum(mul(x.to(kSim0), 3.0)).to(Device::cpu());
  auto g = grad({loss}, {x}, {}, eng);
  return g[0].to_vector() == std::vector<double>{3, 3} ? "" : "crossing call: wrong gradient";
}

std::string asynchronous(Engine& eng) {
  Tensor x = Tensor::from_vector({1, -2}, {2}, DType::f64, kSim1).set_requires_grad();
  auto f = eng.backward_async({sum(mul(x, x)).to(Device::cpu())});
  if (!ready_within(f, kCallLimit))
    return "backward_async did not complete";
  f.get();
  return x.grad().to_vector() == std::vector<double>{2, -4} ? "" : "async call: wrong gradient";
}

/// A cpu node whose backward runs a nested call crossing to sim:1.
std::string nested_crossing(Engine& eng) {
  auto ok = std::make_shared<bool>(false);
  auto forward = [](FunctionContext&, const variable_list& in) {
    return variable_list{in[0].detach()};
  };
  auto backward = [ok](FunctionContext&, const variable_list& g) {
    AutoGradMode enable(true);
    Tensor z = Tensor::ones({2}, DType::f64, kSim1).set_requires_grad();
    Tensor dz = grad({sum(mul(z, 4.0)).to(Device::cpu())}, {z})[0];
    *ok = dz.to_vector() == std::vector<double>{4, 4};
    return variable_list{g[0]};
  };
  Tensor x = Tensor::from_vector({1, -2}, {2}).set_requires_grad();
  Tensor y = apply_custom_function("NestedCrossing", {x}, forward, backward)[0];
  auto g = grad({sum(y)}, {x}, {}, eng);
  return g[0].to_vector() == std::vector<double>{1, 1} && *ok ? "" : "nested call: wrong gradient";
}

/// A thread that makes one call, reports it, then stays alive until told
/// to end. Its state is shared, so a thread left behind by a hang never
/// touches a finished round's stack.
struct Foreign {
  struct State {
    std::promise<std::string> called; ///< the call's result ("" when right)
    std::promise<void> release;       ///< set by the main thread: end now
    std::promise<void> ended;         ///< set by the joiner once the thread is joined
  };
  std::shared_ptr<State> state = std::make_shared<State>();
  std::future<std::string> called = state->called.get_future();
  std::future<void> ended = state->ended.get_future();
  std::thread joiner; ///< joins the foreign thread (its thread-local destructors included)

  Foreign(std::function<std::string(Engine&)> call, Engine& eng) {
    std::thread th([s = state, call, &eng] {
      try {
        s->called.set_value(call(eng));
      } catch (const std::exception& e) {
        s->called.set_value(std::string("threw: ") + e.what());
      }
      s->release.get_future().wait();
    });
    joiner = std::thread([s = state, th = std::move(th)]() mutable {
      th.join();
      s->ended.set_value();
    });
  }
};

/// An Engine built and destroyed by one thread of its own (so the threads
/// that merely use it are foreign to it); destroy() is bounded.
class OwnedEngine {
public:
  OwnedEngine() {
    std::promise<Engine*> built;
    auto ready = built.get_future();
    std::thread owner([s = state_, built = std::move(built)]() mutable {
      auto eng = std::make_unique<Engine>(EngineConfig{{kSim0, kSim1}});
      built.set_value(eng.get());
      s->destroy.get_future().wait();
      eng.reset();
      s->destroyed.set_value();
    });
    engine_ = ready.get();
    owner_ = std::move(owner);
  }
  ~OwnedEngine() {
    if (owner_.joinable())
      owner_.detach(); // destroy() timed out or was not called: left behind
  }
  Engine& engine() { return *engine_; }
  /// Tells the owner to destroy the engine; false when ~Engine did not
  /// return within `limit` (hung() is set then).
  bool destroy(Seconds limit) {
    auto done = state_->destroyed.get_future();
    state_->destroy.set_value();
    if (!ready_within(done, limit)) {
      hung() = true;
      return false;
    }
    owner_.join();
    return true;
  }

private:
  struct State {
    std::promise<void> destroy, destroyed;
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
  Engine* engine_ = nullptr;
  std::thread owner_;
};

} // namespace

BOOST_TEST_GLOBAL_FIXTURE(ExitAfterHang);

BOOST_AUTO_TEST_SUITE(stress)

BOOST_AUTO_TEST_CASE(engine_destroyed_while_threads_that_used_it_live) {
  const Seconds length = budget(5);
  const auto deadline = after(length);
  const std::vector<std::pair<const char*, std::function<std::string(Engine&)>>> calls = {
    {"cpu-only call", cpu_only},
    {"call crossing to sim:0", crossing},
    {"backward_async on sim:1", asynchronous},
    {"nested call crossing to sim:1", nested_crossing}};
  int rounds = 0;
  for (; (rounds < 3 || Clock::now() < deadline) && !hung(); ++rounds) {
    BOOST_TEST_CONTEXT("round " << rounds) {
      OwnedEngine owned;
      std::vector<std::unique_ptr<Foreign>> threads;
      for (const auto& c : calls)
        threads.push_back(std::make_unique<Foreign>(c.second, owned.engine()));
      const auto calls_limit = after(kCallLimit);
      for (std::size_t i = 0; i < calls.size(); ++i) {
        if (threads[i]->called.wait_until(calls_limit) != std::future_status::ready) {
          hung() = true;
          BOOST_ERROR(calls[i].first << ": no result within " << int(kCallLimit.count())
                                     << " s (hang)");
          continue;
        }
        const std::string r = threads[i]->called.get();
        BOOST_TEST(r.empty(), calls[i].first << ": " << r);
      }

      // Destroy the engine while all four threads live.
      if (!hung() && !owned.destroy(kDestroyLimit))
        BOOST_ERROR("~Engine did not return within " << int(kDestroyLimit.count()) << " s while "
                                                     << threads.size()
                                                     << " threads that used it were alive (hang)");

      // The threads end normally once released, ~Engine having returned or not.
      for (auto& t : threads)
        t->state->release.set_value();
      for (std::size_t i = 0; i < threads.size(); ++i) {
        if (!ready_within(threads[i]->ended, kExitLimit)) {
          hung() = true;
          BOOST_ERROR("the thread that made the " << calls[i].first << " did not end within "
                                                  << int(kExitLimit.count()) << " s");
          threads[i]->joiner.detach();
          continue;
        }
        threads[i]->joiner.join();
      }
    }
  }
  BOOST_TEST_MESSAGE(rounds << " rounds of 4 threads and a destroyed engine");
}

// The thread that built an engine is alive (here: waiting) while another
// thread destroys it.
BOOST_AUTO_TEST_CASE(engine_destroyed_on_another_thread_than_the_one_that_built_it) {
  auto eng = std::make_unique<Engine>(EngineConfig{{kSim0, kSim1}});
  BOOST_TEST(crossing(*eng) == "");
  auto destroyed = run_bounded([e = eng.release()] { delete e; }, kDestroyLimit);
  BOOST_TEST(destroyed.has_value(), "~Engine on another thread did not return within "
                                      << int(kDestroyLimit.count()) << " s (hang)");
}

BOOST_AUTO_TEST_SUITE_END()
