#define BOOST_TEST_MODULE actors_request_progress
#include <boost/test/unit_test.hpp>

// A request by message does not block the requester's scheduler thread:
// the application's actor system has 1 scheduler thread, and another actor
// of it keeps counting pings while the request's pass runs (a synchronous
// call from an actor, the control, stops it). With the engine on its own
// actor system and embedded in the application's.

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>

#include "actorgrad/actors/engine.h"
#include "actorgrad/actors/requests.h"
#include "tests/actors/request_test_util.h"

using namespace actorgrad;
using namespace actorgrad::testing;

namespace {

constexpr auto kSlowNode = std::chrono::milliseconds(400);

/// Counts pings, one every millisecond, on the application's scheduler.
caf::behavior pinger(caf::event_based_actor* self, std::shared_ptr<std::atomic<int>> pings) {
  self->send(self, ping_atom::value);
  return {[=](ping_atom) {
    pings->fetch_add(1);
    self->delayed_send(self, std::chrono::milliseconds(1), ping_atom::value);
  }};
}

/// Pings counted while one slow grad pass (a node that sleeps 400 ms) runs:
/// asked by message (`by_request`), or (the control) called synchronously
/// from an event-based actor, which blocks the application's only thread.
int pings_during_a_slow_pass(App& app, bool by_request) {
  // Written by the pinger, read by the measuring actor: both on the one
  // scheduler thread; atomic so the test thread may read it too.
  auto pings = std::make_shared<std::atomic<int>>(0);
  auto ping = app.system->spawn(pinger, pings);
  while (pings->load() < 10) // the pinger is running
    std::this_thread::sleep_for(std::chrono::milliseconds(1));

  Tensor x = Tensor::uniform({4}, -1, 1, 7).set_requires_grad(true);
  auto [y, node] = lambda_op(x, "SlowNode", [](variable_list&& g) {
    std::this_thread::sleep_for(kSlowNode);
    return std::move(g);
  });
  Tensor loss = sum(y);
  auto counted = std::make_shared<std::promise<int>>();
  auto result = counted->get_future();
  caf::actor engine_actor = app.requests;
  Engine* engine = app.engine.get();
  auto actor = app.system->spawn([=](caf::event_based_actor* self) -> caf::behavior {
    const int before = pings->load();
    if (!by_request) {
      engine->grad({loss}, {x}); // blocks this thread for the pass
      counted->set_value(pings->load() - before);
      self->quit();
      return {};
    }
    self->request(engine_actor, kWaitLimit, msg::GradRequest{{loss}, {x}})
      .then(
        [=](msg::GradResponse& r) {
          const bool ok =
            r.grads.size() == 1 && r.grads[0].to_vector() == std::vector<double>(4, 1.0);
          counted->set_value(ok ? pings->load() - before : -1);
          self->quit();
        },
        [=](caf::error&) {
          counted->set_value(-2);
          self->quit();
        });
    return {[](ping_atom) {}};
  });
  const bool ready = result.wait_for(kWaitLimit) == std::future_status::ready;
  caf::anon_send_exit(ping, caf::exit_reason::user_shutdown);
  if (!ready) {
    caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
    BOOST_FAIL("the slow pass did not end within 30 s");
  }
  return result.get();
}

BOOST_AUTO_TEST_CASE(other_actors_progress_while_a_request_is_in_flight) {
  for (auto [placement, name] : kPlacements) {
    BOOST_TEST_CONTEXT(name) {
      App app(placement);
      // The control: a synchronous call stops the only scheduler thread.
      const int blocked = pings_during_a_slow_pass(app, false);
      BOOST_TEST(blocked == 0);
      // A request leaves it free: the pinger runs all along (about one
      // ping per ms of the 400 ms pass; 50 leaves room for a loaded machine).
      const int by_request = pings_during_a_slow_pass(app, true);
      BOOST_TEST_INFO("-1: wrong gradient, -2: error answer");
      BOOST_TEST(by_request >= 50);
    }
  }
}

} // namespace
