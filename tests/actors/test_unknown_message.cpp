#define BOOST_TEST_MODULE actors_unknown_message
#include <boost/test/unit_test.hpp>

// A message of a type the engine does not handle, sent to a DeviceWorker
// (whose handle Engine::worker hands out), fails loudly instead of being
// dropped: the worker stops with an exit reason naming the type and the
// worker, a pass that uses the worker fails naming them, and the engine
// replaces the worker, which serves the next call.

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <caf/actor.hpp>
#include <caf/after.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <caf/system_messages.hpp>

#include "actorgrad/actors/engine.h"
#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/engine/errors.h"
#include "tests/actors/actor_test_util.h"

namespace actorgrad::testing {
/// A message no engine actor handles.
struct NotAnEngineMessage {
  int value = 0;
};
} // namespace actorgrad::testing

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorgrad::testing::NotAnEngineMessage)

using namespace actorgrad;
using namespace actorgrad::testing;

namespace {

using Engine1 = SharedEngine<1>;
BOOST_TEST_GLOBAL_FIXTURE(Engine1);

/// Waits (bounded) until Engine::worker(d) is no longer `before`.
bool replaced(Engine& eng, Device d, const caf::actor& before) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (eng.worker(d) == before && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return eng.worker(d) != before;
}

/// A backward on sim:0 and back gives the right gradient.
void check_sim0_works() {
  Tensor x =
    Tensor::from_vector({1, 2, 3}, {3}, DType::f64, Device::sim(0)).set_requires_grad(true);
  Tensor loss = sum(mul(x, x)).to(Device::cpu());
  bounded([&] { backward({loss}, {}, engine()); });
  BOOST_REQUIRE(x.grad().defined());
  BOOST_TEST(x.grad().to_vector() == (std::vector<double>{2, 4, 6}),
             boost::test_tools::per_element());
}

} // namespace

BOOST_AUTO_TEST_CASE(idle_worker_stops_naming_the_type) {
  Engine& eng = engine();
  const Device sim0 = Device::sim(0);
  check_sim0_works();
  caf::actor worker = eng.worker(sim0);
  caf::scoped_actor self{worker->home_system()};
  self->monitor(worker);
  caf::anon_send(worker, NotAnEngineMessage{7});
  std::string reason;
  self->receive([&](const caf::down_msg& m) { reason = worker->home_system().render(m.reason); },
                caf::after(std::chrono::seconds(10)) >>
                  [&] { reason = "no down message in 10 s"; });
  BOOST_TEST_MESSAGE("exit reason: " << reason);
  BOOST_TEST(contains_all(reason, {"unknown type", "NotAnEngineMessage", "sim:0 worker"}), reason);
  BOOST_TEST(replaced(eng, sim0, worker), "the worker of sim:0 was not replaced");
  check_sim0_works();
}

BOOST_AUTO_TEST_CASE(pass_using_the_worker_fails_naming_the_type) {
  Engine& eng = engine();
  const Device sim0 = Device::sim(0);
  caf::actor before = eng.worker(sim0);
  Engine* e = &eng;
  Tensor x = Tensor::uniform({2, 2}, -1, 1, 5).set_requires_grad(true);
  // A node on sim:0 sends the unknown message to its own worker; the next
  // one, on sim:0 too, must then not run.
  auto later_ran = std::make_shared<std::atomic<bool>>(false);
  Tensor h = lambda_op(x.to(sim0), "RunsAfter", [later_ran](variable_list&& g) {
               later_ran->store(true);
               return std::move(g);
             }).first;
  h = lambda_op(h, "SendsUnknown", [e](variable_list&& g) {
        caf::anon_send(e->worker(Device::sim(0)), NotAnEngineMessage{1});
        return std::move(g);
      }).first;
  Tensor loss = sum(h).to(Device::cpu());
  std::string message = "backward returned normally";
  bounded([&] {
    try {
      backward({loss}, {}, eng);
    } catch (const EngineError& err) {
      message = err.what();
    }
  });
  BOOST_TEST_MESSAGE("the pass's error: " << message);
  BOOST_TEST(contains_all(message, {"unknown type", "NotAnEngineMessage", "sim:0"}), message);
  BOOST_TEST(!later_ran->load(), "a node ran on the worker after it received the unknown message");
  BOOST_TEST(replaced(eng, sim0, before), "the worker of sim:0 was not replaced");
  check_sim0_works();
}
