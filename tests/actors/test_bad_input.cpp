#define BOOST_TEST_MODULE actors_bad_input
#include <boost/test/unit_test.hpp>

// Bad arguments and bad gradients on the actor engine: each is an
// EngineError whose message names the problem (tensor, device, shape,
// node); nothing hangs; the engine stays usable after each.

#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor.hpp>

#include "actorgrad/actors/engine.h"
#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/engine/errors.h"
#include "tests/actors/actor_test_util.h"

using namespace actorgrad;
using namespace actorgrad::testing;

namespace {

/// The engine of this test binary: created and destroyed by the global
/// fixture, inside main. (A static Engine destroyed by exit() crashes in
/// ~actor_system after an async call from the main thread: see the report.)
/// After an error: a backward across cpu and sim:0 still works.
void check_engine_works() {
  Tensor x = Tensor::from_vector({1, 2}, {2}, DType::f64, Device::sim(0)).set_requires_grad(true);
  Tensor y = Tensor::from_vector({3, 4}, {2}).set_requires_grad(true);
  Tensor loss = add(sum(mul(x, x)).to(Device::cpu()), sum(mul(y, y)));
  bounded([&] { backward({loss}, {}, engine()); });
  BOOST_TEST(x.grad().to_vector() == (std::vector<double>{2, 4}), boost::test_tools::per_element());
  BOOST_TEST(y.grad().to_vector() == (std::vector<double>{6, 8}), boost::test_tools::per_element());
  auto g = bounded([&] {
    Tensor l2 = sum(mul(x, y.to(Device::sim(0)))).to(Device::cpu());
    return grad({l2}, {x, y}, {}, engine());
  });
  BOOST_TEST(g[0].to_vector() == (std::vector<double>{3, 4}), boost::test_tools::per_element());
  BOOST_TEST(g[1].to_vector() == (std::vector<double>{1, 2}), boost::test_tools::per_element());
}

/// `call` must throw an EngineError whose message contains every part, within
/// the time bound; then the engine must still work.
void expect_error(const std::string& what, std::function<void()> call,
                  std::vector<std::string> parts) {
  BOOST_TEST_CONTEXT(what) {
    std::string message;
    bool engine_error = false;
    bounded([&] {
      try {
        call();
        message = "no error";
      } catch (const EngineError& e) {
        engine_error = true;
        message = e.what();
      } catch (const std::exception& e) {
        message = std::string("not an EngineError: ") + e.what();
      }
    });
    BOOST_TEST(engine_error, message);
    BOOST_TEST(contains_all(message, parts), "message: " << message);
    check_engine_works();
  }
}

Tensor sim0_leaf() {
  return Tensor::from_vector({1, 2, 3, 4}, {2, 2}, DType::f64, Device::sim(0))
    .set_requires_grad(true);
}

} // namespace

using SharedEngineFixture = SharedEngine<1>;
BOOST_TEST_GLOBAL_FIXTURE(SharedEngineFixture);

BOOST_AUTO_TEST_CASE(grad_tensor_on_the_wrong_device) {
  Tensor x = sim0_leaf();
  Tensor y = tanh(x); // on sim:0
  expect_error("backward",
               [&] {
                 backward({y}, {.grad_tensors = {Tensor::ones({2, 2})}}, engine());
               },
               {"device", "grad_tensors[0]", "cpu", "sim:0"});
  expect_error("grad",
               [&] {
                 grad({y}, {x}, {.grad_outputs = {Tensor::ones({2, 2})}}, engine());
               },
               {"device", "cpu", "sim:0"});
  expect_error("backward_async",
               [&] {
                 engine().backward_async({y}, {.grad_tensors = {Tensor::ones({2, 2})}}).get();
               },
               {"device", "cpu", "sim:0"});
}

BOOST_AUTO_TEST_CASE(grad_tensor_of_the_wrong_shape) {
  Tensor x = sim0_leaf();
  Tensor y = tanh(x);
  expect_error("backward",
               [&] {
                 backward({y}, {.grad_tensors = {Tensor::ones({3}, DType::f64, Device::sim(0))}},
                          engine());
               },
               {"shape", "[3]", "[2, 2]"});
  expect_error("grad_async",
               [&] {
                 Tensor wrong = Tensor::ones({4, 1}, DType::f64, Device::sim(0));
                 engine().grad_async({y}, {x}, {.grad_outputs = {wrong}}).get();
               },
               {"shape", "[4, 1]", "[2, 2]"});
  // Several roots: the count of grad_tensors must match.
  expect_error("count",
               [&] {
                 backward({y, mul(y, 2.0)},
                          {.grad_tensors = {Tensor::ones({2, 2}, DType::f64, Device::sim(0))}},
                          engine());
               },
               {"1 grad_tensors", "2 tensors"});
  // A non-scalar root needs a grad_tensor.
  expect_error("implicit", [&] { backward({y}, {}, engine()); }, {"scalar", "[2, 2]"});
}

BOOST_AUTO_TEST_CASE(tensors_that_do_not_require_grad) {
  Tensor c = Tensor::ones({2});
  expect_error("backward", [&] { backward({sum(c)}, {}, engine()); },
               {"tensors", "does not require grad"});
  expect_error("grad", [&] { grad({sum(c)}, {c}, {}, engine()); }, {"does not require grad"});
  expect_error("undefined", [&] { backward({Tensor()}, {}, engine()); },
               {"tensors[0]", "undefined"});
}

BOOST_AUTO_TEST_CASE(empty_root_list) {
  Tensor x = sim0_leaf();
  expect_error("backward", [&] { backward({}, {}, engine()); }, {"empty"});
  expect_error("grad", [&] { grad({}, {x}, {}, engine()); }, {"empty"});
  expect_error("grad without inputs", [&] { grad({sum(x)}, {}, {}, engine()); },
               {"empty", "inputs"});
  expect_error("execute", [&] { engine().execute({}, {}, ExecuteOptions{}, {}); }, {"no roots"});
  expect_error("backward_async", [&] { engine().backward_async({}).get(); }, {"empty"});
}

BOOST_AUTO_TEST_CASE(input_that_does_not_require_grad) {
  Tensor x = sim0_leaf();
  Tensor c = Tensor::ones({2, 2}, DType::f64, Device::sim(0));
  Tensor loss = sum(mul(x, c)).to(Device::cpu());
  expect_error("grad",
               [&] {
                 grad({loss}, {x, c}, {.retain_graph = true}, engine());
               },
               {"inputs[1]", "does not require grad", "sim:0"});
  expect_error(
    "backward inputs=", [&] { backward({loss}, {.retain_graph = true, .inputs = {c}}, engine()); },
    {"inputs[0]", "does not require grad"});
  // An input that requires grad but is not used.
  Tensor unused = Tensor::ones({1}).set_requires_grad(true);
  expect_error("unused",
               [&] {
                 grad({loss}, {x, unused}, {.retain_graph = true}, engine());
               },
               {"inputs[1]", "not have been used"});
}

BOOST_AUTO_TEST_CASE(node_on_a_device_the_engine_does_not_serve) {
  // A leaf on sim:3: its nodes run on sim:3, which this engine lacks.
  Tensor x = Tensor::from_vector({1, 2}, {2}, DType::f64, Device::sim(3)).set_requires_grad(true);
  Tensor loss = sum(mul(x, x)).to(Device::cpu());
  expect_error("backward", [&] { backward({loss}, {.retain_graph = true}, engine()); },
               {"sim:3", "serves only", "cpu, sim:0"});
  expect_error("grad", [&] { grad({loss}, {x}, {.retain_graph = true}, engine()); }, {"sim:3"});
  expect_error("grad_async",
               [&] { engine().grad_async({loss}, {x}, {.retain_graph = true}).get(); }, {"sim:3"});
  // Reached through sim:0 in the middle of the graph.
  Tensor y = Tensor::from_vector({1, 2}, {2}, DType::f64, Device::sim(0)).set_requires_grad(true);
  Tensor mixed = add(sum(mul(y, y)).to(Device::cpu()), loss);
  expect_error("mixed", [&] { backward({mixed}, {.retain_graph = true}, engine()); }, {"sim:3"});
  BOOST_TEST(!y.grad().defined());
  // The root itself on sim:3.
  expect_error("root", [&] { backward({sum(x)}, {.retain_graph = true}, engine()); }, {"sim:3"});
  BOOST_CHECK_THROW(engine().worker(Device::sim(3)), EngineError);
}

// A custom node returning a bad gradient (on sim:0 and on the cpu): the
// error names the node, the index and the expected device or shape.
BOOST_AUTO_TEST_CASE(node_returns_bad_gradients) {
  for (Device d : {Device::sim(0), Device::cpu()}) {
    BOOST_TEST_CONTEXT("node on " << d.str()) {
      Tensor x = Tensor::from_vector({1, 2, 3}, {3}, DType::f64, d).set_requires_grad(true);
      const Device other = d.is_cpu() ? Device::sim(0) : Device::cpu();
      Tensor wrong_dev = lambda_op(x, "WrongDeviceNode", [other](variable_list&& g) {
                           return variable_list{g[0].to(other)};
                         }).first;
      expect_error("device", [&] { backward({sum(wrong_dev).to(Device::cpu())}, {}, engine()); },
                   {"WrongDeviceNode", "expected device " + d.str(), "got " + other.str()});

      Tensor wrong_shape = lambda_op(x, "WrongShapeNode", [](variable_list&& g) {
                             return variable_list{Tensor::ones({2}, DType::f64, g[0].device())};
                           }).first;
      expect_error("shape", [&] { backward({sum(wrong_shape).to(Device::cpu())}, {}, engine()); },
                   {"WrongShapeNode", "[2]", "[3]"});

      Tensor wrong_count = lambda_op(x, "WrongCountNode", [](variable_list&& g) {
                             return variable_list{g[0], g[0]};
                           }).first;
      expect_error("count", [&] { backward({sum(wrong_count).to(Device::cpu())}, {}, engine()); },
                   {"WrongCountNode", "expected 1, got 2"});
      BOOST_TEST(!x.grad().defined());
    }
  }
}
