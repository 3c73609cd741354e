#define BOOST_TEST_MODULE node_edges
#include <boost/test/unit_test.hpp>

// Note [Edges inside the node] (libengine/autograd/node.h): a node keeps up
// to two edges and one input's metadata inside itself, and a longer list on
// the heap. Whatever the counts, on either side of that boundary, a node
// must read, edit, validate and run the same.

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "actorgrad/libengine/autograd/graph_builder.h"
#include "actorgrad/libengine/autograd/node.h"
#include "actorgrad/libengine/engine/errors.h"
#include "actorgrad/libengine/engine/executor.h"
#include "tests/support/executor_fixture.h"
#include "tests/support/lambda_node.h"

using namespace actorgrad;
using actorgrad::testing::ExecutorFromEnv;
using actorgrad::testing::LambdaNode;

BOOST_TEST_GLOBAL_FIXTURE(ExecutorFromEnv);

namespace {

std::vector<Tensor> leaves(int n) {
  std::vector<Tensor> xs;
  for (int i = 0; i < n; ++i)
    xs.push_back(Tensor::ones({1}).set_requires_grad());
  return xs;
}

/// A node with `inputs` inputs of shape {1} and an edge to each of `to`:
/// output i is (i + 1) times the sum of the gradients it receives.
std::shared_ptr<LambdaNode> spread(int inputs, const std::vector<Tensor>& to) {
  edge_list edges;
  for (const Tensor& x : to)
    edges.push_back(gradient_edge(x));
  const auto outputs = static_cast<int>(to.size());
  auto fn = make_node<LambdaNode>(
    "Spread",
    [outputs](variable_list&& grads) {
      double total = 0;
      for (const Tensor& g : grads)
        total += g.item();
      variable_list out;
      for (int i = 0; i < outputs; ++i)
        out.push_back(Tensor::full({1}, total * (i + 1)));
      return out;
    },
    std::move(edges));
  for (int j = 0; j < inputs; ++j)
    fn->add_input_metadata(Tensor::zeros({1}));
  return fn;
}

/// Runs backward from every input j of `fn` with gradient j + 1.
void run(const std::shared_ptr<LambdaNode>& fn) {
  edge_list roots;
  variable_list grads;
  for (std::uint32_t j = 0; j < fn->num_inputs(); ++j) {
    roots.push_back(Edge{fn, j});
    grads.push_back(Tensor::full({1}, j + 1.0));
  }
  default_executor().execute(roots, std::move(grads), ExecuteOptions{true, false, true}, {});
}

} // namespace

BOOST_AUTO_TEST_CASE(every_edge_and_input_count_reads_and_runs_alike) {
  for (int outputs : {1, 2, 3, 5}) {
    for (int inputs : {1, 2, 3}) {
      BOOST_TEST_CONTEXT(outputs << " outputs, " << inputs << " inputs") {
        auto xs = leaves(outputs);
        auto fn = spread(inputs, xs);
        BOOST_TEST_REQUIRE(fn->num_outputs() == static_cast<std::size_t>(outputs));
        BOOST_TEST_REQUIRE(fn->next_edges().size() == static_cast<std::size_t>(outputs));
        for (int i = 0; i < outputs; ++i) {
          BOOST_TEST(fn->next_edges()[i].function == gradient_edge(xs[i]).function);
          BOOST_TEST(&fn->next_edge(i) == &fn->next_edges()[i]);
        }
        BOOST_TEST_REQUIRE(fn->num_inputs() == static_cast<std::size_t>(inputs));
        run(fn);
        const double total = inputs * (inputs + 1) / 2.0; // 1 + 2 + ... + inputs
        for (int i = 0; i < outputs; ++i) {
          BOOST_TEST_REQUIRE(xs[i].grad().defined());
          BOOST_TEST(xs[i].grad().item() == total * (i + 1));
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(an_edge_set_past_the_inline_ones_is_the_one_that_runs) {
  auto xs = leaves(5);
  auto fn = spread(1, {xs[0], xs[1], xs[2], xs[3]});
  fn->set_next_edge(3, gradient_edge(xs[4])); // the fourth edge, on the heap
  fn->set_next_edge(1, Edge{});               // an inline one, now no gradient
  run(fn);
  BOOST_TEST(xs[0].grad().item() == 1.0);
  BOOST_TEST(!xs[1].grad().defined());
  BOOST_TEST(xs[2].grad().item() == 3.0);
  BOOST_TEST(!xs[3].grad().defined());
  BOOST_TEST(xs[4].grad().item() == 4.0);
  BOOST_CHECK_THROW(fn->next_edge(4), std::out_of_range);
}

BOOST_AUTO_TEST_CASE(each_inputs_metadata_is_checked_past_the_inline_one) {
  // The third input of the next node expects shape {2}: a gradient of shape
  // {3} for it is an error that names the node and the input.
  auto x = Tensor::ones({2}).set_requires_grad();
  auto next = make_node<LambdaNode>(
    "Next", [](variable_list&& g) { return variable_list{g[2]}; }, edge_list{gradient_edge(x)});
  next->add_input_metadata(Tensor::zeros({1}));
  next->add_input_metadata(Tensor::zeros({1}));
  next->add_input_metadata(Tensor::zeros({2}));
  BOOST_TEST(next->input_metadata(2).sizes() == Shape({2}));
  auto bad = make_node<LambdaNode>(
    "Bad",
    [](variable_list&&) {
      return variable_list{Tensor::ones({1}), Tensor::ones({1}), Tensor::ones({3})};
    },
    edge_list{Edge{next, 0}, Edge{next, 1}, Edge{next, 2}});
  bad->add_input_metadata(Tensor::zeros({1}));
  try {
    default_executor().execute({Edge{bad, 0}}, {Tensor::ones({1})}, ExecuteOptions{}, {});
    BOOST_FAIL("a gradient of the wrong shape was accepted");
  } catch (const EngineError& e) {
    const std::string what = e.what();
    BOOST_TEST_INFO(what);
    BOOST_TEST(what.find("Bad") != std::string::npos);
    BOOST_TEST(what.find("index 2") != std::string::npos);
    BOOST_TEST(what.find("got [3]") != std::string::npos);
    BOOST_TEST(what.find("compatible with [2]") != std::string::npos);
  }
  BOOST_TEST(!x.grad().defined());
}

BOOST_AUTO_TEST_CASE(a_shape_past_the_inline_dimensions_is_checked_and_reduced) {
  // InputMetadata keeps up to 5 dimensions inside itself; this one has 6.
  const Shape six{1, 1, 1, 1, 1, 2};
  auto x = Tensor::ones(six).set_requires_grad();
  auto through = make_node<LambdaNode>(
    "Through", [](variable_list&& g) { return std::move(g); }, edge_list{gradient_edge(x)});
  through->add_input_metadata(Tensor::zeros(six));
  BOOST_TEST(through->input_metadata(0).sizes() == six);
  const auto wide = [&](Shape out) {
    auto fn = make_node<LambdaNode>(
      "Wide", [out](variable_list&&) { return variable_list{Tensor::ones(out)}; },
      edge_list{Edge{through, 0}});
    fn->add_input_metadata(Tensor::zeros({1}));
    return fn;
  };

  // Broadcast to 3 x ...: summed back to the metadata's shape.
  default_executor().execute({Edge{wide({3, 1, 1, 1, 1, 2}), 0}}, {Tensor::ones({1})},
                             ExecuteOptions{}, {});
  BOOST_TEST_REQUIRE(x.grad().defined());
  BOOST_TEST(x.grad().shape() == six);
  BOOST_TEST(x.grad().data<double>()[0] == 3.0);
  BOOST_TEST(x.grad().data<double>()[1] == 3.0);

  // Not expandable: an error naming both shapes, and the engine still runs.
  try {
    default_executor().execute({Edge{wide({1, 1, 1, 1, 1, 3}), 0}}, {Tensor::ones({1})},
                               ExecuteOptions{}, {});
    BOOST_FAIL("a gradient of the wrong shape was accepted");
  } catch (const EngineError& e) {
    const std::string what = e.what();
    BOOST_TEST_INFO(what);
    BOOST_TEST(what.find("got [1, 1, 1, 1, 1, 3] but expected shape compatible with "
                         "[1, 1, 1, 1, 1, 2]") != std::string::npos);
  }
  default_executor().execute({Edge{wide(six), 0}}, {Tensor::ones({1})}, ExecuteOptions{}, {});
  BOOST_TEST(x.grad().data<double>()[0] == 4.0);
}
