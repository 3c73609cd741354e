#define BOOST_TEST_MODULE topological_order
#include <boost/test/unit_test.hpp>

// Note [Edited topological numbers] (libengine/autograd/node.cpp): a call
// with inputs prunes the graph below their smallest topological_nr until an
// edit raises the number of a node that has a parent; from then on it prunes
// nothing. The flag is process-wide and never cleared, hence one binary and
// one case, in order.

#include <memory>

#include "actorgrad/libengine/autograd/graph_builder.h"
#include "actorgrad/libengine/autograd/node.h"
#include "actorgrad/libengine/engine/detail/graph_task.h"
#include "actorgrad/libengine/ops.h"

using namespace actorgrad;

namespace {

class PassThrough final : public Node {
public:
  using Node::Node;
  variable_list apply(variable_list&& g) override { return std::move(g); }
};

/// The nodes a grad call of `loss` with respect to `input` numbers.
std::size_t nodes_searched(const Tensor& loss, const Tensor& input) {
  auto task =
    detail::GraphTask::create({gradient_edge(loss)}, {Tensor::ones({1})},
                              ExecuteOptions{true, false, false}, {gradient_edge(input)}, 0)
      .first;
  return task->num_nodes();
}

} // namespace

BOOST_AUTO_TEST_CASE(only_an_edit_of_a_node_with_a_parent_stops_the_pruning) {
  auto x = Tensor::ones({1}).set_requires_grad();
  auto h = mul(mul(mul(x, 3.0), 3.0), 3.0);
  auto loss = sum(mul(h, 2.0));
  // SumBackward, the last MulBackward, h's and the one below it (numbered,
  // not searched); not the first MulBackward nor x's AccumulateGrad.
  BOOST_TEST(nodes_searched(loss, h) == 4u);

  // Building a node, even by edits before it has a parent, keeps the order.
  auto fresh = make_node<PassThrough>(edge_list{Edge{}});
  fresh->set_next_edge(0, gradient_edge(h));
  fresh->add_next_edge(gradient_edge(loss));
  auto parent = make_node<PassThrough>(edge_list{Edge{fresh, 0}});
  BOOST_TEST(!Node::topological_order_edited());
  BOOST_TEST(nodes_searched(loss, h) == 4u);

  // Raising the number of a node with a parent (fresh) may leave its
  // parents' numbers stale: every later call searches the whole graph.
  auto taller = make_node<PassThrough>(edge_list{gradient_edge(loss)});
  taller = make_node<PassThrough>(edge_list{Edge{taller, 0}});
  fresh->set_next_edge(0, Edge{taller, 0});
  BOOST_TEST(Node::topological_order_edited());
  BOOST_TEST(nodes_searched(loss, h) == 6u);
}
