#define BOOST_TEST_MODULE actors_requests
#include <boost/test/unit_test.hpp>

// Requests by message: an event-based actor of the application asks the
// engine's request actor (Engine::request_actor) for backward and grad
// passes and gets the results, or an error carrying the engine's message,
// as response messages. Each case runs with the engine owning its own actor
// system (the application's is another one) and embedded in the
// application's system, which has 1 scheduler thread (Note [Requests across
// actor systems]). That the requester's thread stays free:
// test_request_progress.cpp.

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <stdexcept>
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

// ---------------------------------------------------------------------------
// 100 backward requests from an event-based actor

constexpr int kRequests = 100;
constexpr int kInFlight = 4;

/// What the requester saw.
struct Tally {
  int answered = 0;   ///< responses with the right gradients
  int wrong = 0;      ///< responses with wrong gradients
  int errors = 0;     ///< error answers
  int off_thread = 0; ///< answers handled off the application's scheduler thread
  std::string first_problem;
};

struct RequesterState {
  caf::actor engine;
  std::promise<Tally>* done = nullptr;
  std::thread::id home; ///< the application's (only) scheduler thread
  int sent = 0;
  Tally tally;
};

using Requester = caf::stateful_actor<RequesterState>;

void send_next(Requester* self);

/// After an answer: the next request, or the tally once all are answered.
void finish_one(Requester* self) {
  auto& st = self->state;
  if (st.sent < kRequests) {
    send_next(self);
  } else if (st.tally.answered + st.tally.wrong + st.tally.errors == kRequests) {
    st.done->set_value(st.tally);
    self->quit();
  }
}

/// Request i: loss = sum(x * x * c) on sim:0, so d loss / dx = 2 x c.
void send_next(Requester* self) {
  auto& st = self->state;
  const double i = st.sent++;
  Tensor x = Tensor::from_vector({1.0 + i, -0.5 * i, 2.0}, {3}).set_requires_grad(true);
  Tensor c = Tensor::from_vector({3.0, i, 1.0 - i}, {3});
  Tensor xs = x.to(sim0);
  Tensor loss = sum(mul(mul(xs, xs), c.to(sim0))).to(Device::cpu());
  std::vector<double> expected = {2 * (1.0 + i) * 3.0, 2 * (-0.5 * i) * i, 2 * 2.0 * (1.0 - i)};
  self->request(st.engine, kWaitLimit, msg::BackwardRequest{{loss}, {.inputs = {x}}})
    .then(
      [self, x, expected](msg::BackwardResponse& r) {
        auto& t = self->state.tally;
        if (std::this_thread::get_id() != self->state.home)
          ++t.off_thread;
        const bool ok = r.grads.size() == 1 && r.grads[0].defined() &&
                        close(r.grads[0].to_vector(), expected, 1e-12) && x.grad().defined() &&
                        close(x.grad().to_vector(), expected, 1e-12);
        ++(ok ? t.answered : t.wrong);
        if (!ok && t.first_problem.empty())
          t.first_problem = "wrong gradient for request " + std::to_string(self->state.sent);
        finish_one(self);
      },
      [self](caf::error& e) {
        auto& t = self->state.tally;
        ++t.errors;
        if (t.first_problem.empty())
          t.first_problem = self->system().render(e);
        finish_one(self);
      });
}

caf::behavior requester(Requester* self, caf::actor engine, std::promise<Tally>* done) {
  self->state.engine = std::move(engine);
  self->state.done = done;
  self->state.home = std::this_thread::get_id();
  for (int k = 0; k < kInFlight; ++k)
    send_next(self);
  return {[](ping_atom) {}};
}

BOOST_AUTO_TEST_CASE(an_event_based_actor_runs_100_backward_requests) {
  for (auto [placement, name] : kPlacements) {
    BOOST_TEST_CONTEXT(name) {
      App app(placement);
      std::promise<Tally> done;
      auto result = done.get_future();
      auto actor = app.system->spawn(requester, app.requests, &done);
      if (result.wait_for(2 * kWaitLimit) != std::future_status::ready) {
        caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
        BOOST_FAIL("the 100 requests were not all answered within 60 s");
      }
      Tally t = result.get();
      BOOST_TEST_INFO("first problem: " << t.first_problem);
      BOOST_TEST(t.answered == kRequests);
      BOOST_TEST(t.wrong == 0);
      BOOST_TEST(t.errors == 0);
      BOOST_TEST(t.off_thread == 0); // answers run on the application's own scheduler
    }
  }
}

// ---------------------------------------------------------------------------
// Error answers

/// `a` is an error of `code` whose message names every one of `parts`.
template <class Response>
void check_error(const Answer<Response>& a, caf::sec code, const std::vector<std::string>& parts) {
  BOOST_REQUIRE_MESSAGE(!a.response, "a bad request was answered with a response");
  BOOST_TEST((a.error == code), "error code " << int(a.error.code()));
  const std::string text = msg::error_text(a.error);
  BOOST_TEST_INFO("error text: " << text);
  BOOST_TEST(contains_all(text, parts));
}

BOOST_AUTO_TEST_CASE(a_bad_request_is_answered_with_an_error_naming_the_problem) {
  for (auto [placement, name] : kPlacements) {
    BOOST_TEST_CONTEXT(name) {
      App app(placement);
      // A root that does not require grad: an argument error.
      Tensor constant = sum(Tensor::ones({2}));
      check_error(ask<msg::BackwardResponse>(app, msg::BackwardRequest{{constant}, {}}),
                  caf::sec::invalid_argument, {"does not require grad"});

      // A gradient of the wrong shape for an output on sim:0.
      Tensor x = Tensor::uniform({2, 2}, -1, 1, 3, DType::f64, sim0).set_requires_grad(true);
      Tensor y = tanh(x);
      Tensor wrong = Tensor::ones({3}, DType::f64, sim0);
      check_error(
        ask<msg::GradResponse>(app, msg::GradRequest{{y}, {x}, {.grad_outputs = {wrong}}}),
        caf::sec::invalid_argument, {"shape", "[3]", "[2, 2]"});

      // A node that fails during the pass, and an unused input.
      auto [z, node] = lambda_op(x, "RequestThrower", [](variable_list&&) -> variable_list {
        throw std::runtime_error("request failure");
      });
      Tensor loss = sum(z).to(Device::cpu());
      check_error(
        ask<msg::BackwardResponse>(app, msg::BackwardRequest{{loss}, {.retain_graph = true}}),
        caf::sec::runtime_error, {"RequestThrower", "request failure"});
      Tensor unused = Tensor::ones({1}).set_requires_grad(true);
      Tensor ok = sum(mul(x, x)).to(Device::cpu());
      check_error(ask<msg::GradResponse>(app, msg::GradRequest{{ok}, {x, unused}}),
                  caf::sec::runtime_error, {"inputs[1]", "not have been used"});

      // The engine answers the next request correctly.
      Tensor good = sum(mul(x, x)).to(Device::cpu());
      auto a = ask<msg::GradResponse>(app, msg::GradRequest{{good}, {x}});
      BOOST_REQUIRE_MESSAGE(a.response, "error: " << msg::error_text(a.error));
      BOOST_REQUIRE_EQUAL(a.response->grads.size(), 1u);
      BOOST_TEST(a.response->grads[0].to_vector() == mul(x, 2.0).to_vector(),
                 boost::test_tools::per_element());
      // allow_unused: an undefined gradient, not an error.
      Tensor again = sum(mul(x, x)).to(Device::cpu());
      auto u =
        ask<msg::GradResponse>(app, msg::GradRequest{{again}, {x, unused}, {.allow_unused = true}});
      BOOST_REQUIRE_MESSAGE(u.response, "error: " << msg::error_text(u.error));
      BOOST_TEST(!u.response->grads.at(1).defined());
    }
  }
}

BOOST_AUTO_TEST_CASE(a_request_to_a_destroyed_engine_is_answered_receiver_down) {
  App app(Placement::own_system);
  app.engine.reset();
  Tensor x = Tensor::ones({2}).set_requires_grad(true);
  auto a = ask<msg::GradResponse>(app, msg::GradRequest{{sum(mul(x, x))}, {x}});
  BOOST_TEST(!a.response);
  BOOST_TEST((a.error == caf::sec::request_receiver_down));
}

} // namespace
