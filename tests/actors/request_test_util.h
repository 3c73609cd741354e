#pragma once
/// @file request_test_util.h
/// Helpers of the tests of requests by message (test_requests.cpp,
/// test_request_progress.cpp): an application's actor system with an Engine
/// on its own system or embedded in it, and asking the engine from an
/// event-based actor.

#include <boost/test/unit_test.hpp>

#include <future>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/send.hpp>

#include "actorgrad/actors/engine.h"
#include "actorgrad/actors/requests.h"
#include "tests/actors/actor_test_util.h"

namespace actorgrad::testing {

inline const Device sim0 = Device::sim(0);

/// A message the tests' actors send themselves (or never get).
using ping_atom = caf::atom_constant<caf::atom("ping")>;

/// Where the engine lives relative to the application's actor system.
enum class Placement { own_system, embedded };

/// The application's actor system (1 scheduler thread) and an Engine that
/// serves sim:0, on its own actor system or embedded in the application's.
struct App {
  explicit App(Placement placement) {
    cfg.set("scheduler.max-threads", 1);
    system = std::make_unique<caf::actor_system>(cfg);
    engine = placement == Placement::own_system
               ? std::make_unique<Engine>(EngineConfig{{sim0}})
               : std::make_unique<Engine>(*system, EngineConfig{{sim0}});
    requests = engine->request_actor();
  }
  ~App() {
    engine.reset(); // an embedded engine goes before the system it lives in
    system.reset();
  }
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> system;
  std::unique_ptr<Engine> engine;
  caf::actor requests; ///< engine->request_actor()
};

inline const std::vector<std::pair<Placement, const char*>> kPlacements = {
  {Placement::own_system, "engine on its own actor system"},
  {Placement::embedded, "engine embedded in the application's actor system"}};

/// A response, or the error answered instead.
template <class Response>
struct Answer {
  std::optional<Response> response;
  caf::error error;
};

/// Sends `request` to the engine from a fresh event-based actor of the
/// application and returns what it was answered.
template <class Response, class Request>
Answer<Response> ask(App& app, Request request) {
  auto answer = std::make_shared<std::promise<Answer<Response>>>();
  auto result = answer->get_future();
  caf::actor engine = app.requests;
  auto actor = app.system->spawn([=](caf::event_based_actor* self) -> caf::behavior {
    self->request(engine, kWaitLimit, request)
      .then(
        [=](Response& r) {
          answer->set_value({std::move(r), {}});
          self->quit();
        },
        [=](caf::error& e) {
          answer->set_value({std::nullopt, std::move(e)});
          self->quit();
        });
    return {[](ping_atom) {}};
  });
  if (result.wait_for(kWaitLimit) != std::future_status::ready) {
    caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
    BOOST_FAIL("no answer to the request within 30 s");
  }
  return result.get();
}

} // namespace actorgrad::testing
