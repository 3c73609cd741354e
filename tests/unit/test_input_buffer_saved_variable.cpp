#define BOOST_TEST_MODULE input_buffer_saved_variable
#include <boost/test/unit_test.hpp>

#include <string>
#include <thread>
#include <vector>

#include "actorgrad/libengine/autograd/grad_mode.h"
#include "actorgrad/libengine/autograd/node.h"
#include "actorgrad/libengine/autograd/saved_variable.h"
#include "actorgrad/libengine/engine/detail/actorgrad_graph.h"
#include "actorgrad/libengine/engine/detail/input_buffer.h"
#include "actorgrad/libengine/engine/errors.h"
#include "actorgrad/libengine/ops.h"
#include "tests/support/message_has.h"

using namespace actorgrad;
using actorgrad::detail::ActorgradGraph;
using actorgrad::detail::InputBuffer;

namespace {

Tensor vec(std::vector<double> v) {
  return Tensor::from_vector(v, {static_cast<std::int64_t>(v.size())});
}

using actorgrad::testing::message_has;

struct NamedNode final : Node {
  variable_list apply(variable_list&&) override { return {}; }
  std::string name() const override { return "SavingBackward"; }
};

} // namespace

BOOST_AUTO_TEST_SUITE(input_buffer)

BOOST_AUTO_TEST_CASE(slots_add_up_and_undefined_gradients_are_ignored) {
  NoGradGuard no_grad;
  InputBuffer buf(3);
  BOOST_TEST(buf.size() == 3u);
  buf.add(0, vec({1, 2}));
  buf.add(0, vec({10, 20}));
  buf.add(2, vec({5}));
  buf.add(2, Tensor());
  auto vars = InputBuffer::variables(std::move(buf));
  BOOST_REQUIRE(vars.size() == 3u);
  BOOST_TEST(vars[0].to_vector() == (std::vector<double>{11, 22}),
             boost::test_tools::per_element());
  BOOST_TEST(!vars[1].defined());
  BOOST_TEST(vars[2].to_vector() == (std::vector<double>{5}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_gradient_someone_else_holds_is_not_modified) {
  NoGradGuard no_grad;
  auto a = vec({1, 2});
  auto b = vec({3, 4});
  InputBuffer buf(1);
  buf.add(0, Tensor(a));
  buf.add(0, Tensor(b));
  BOOST_TEST(buf[0].to_vector() == (std::vector<double>{4, 6}), boost::test_tools::per_element());
  BOOST_TEST(a.to_vector() == (std::vector<double>{1, 2}), boost::test_tools::per_element());
  BOOST_TEST(b.to_vector() == (std::vector<double>{3, 4}), boost::test_tools::per_element());
  BOOST_TEST(a.version() == 0u);
  BOOST_TEST(b.version() == 0u);
}

BOOST_AUTO_TEST_CASE(under_grad_mode_the_sum_keeps_its_graph) {
  auto x = vec({1, 2}).set_requires_grad(true);
  auto g1 = mul(x, 2.0);
  InputBuffer buf(1);
  buf.add(0, Tensor(g1));
  buf.add(0, mul(x, 3.0));
  BOOST_TEST(buf[0].requires_grad());
  BOOST_TEST((buf[0].grad_fn() != nullptr));
  BOOST_TEST(buf[0].to_vector() == (std::vector<double>{5, 10}), boost::test_tools::per_element());
  BOOST_TEST(g1.to_vector() == (std::vector<double>{2, 4}), boost::test_tools::per_element());
}

// Note [Recycled input lists]: a thread's spent input lists come back as
// its next buffers' slots.
BOOST_AUTO_TEST_CASE(a_recycled_list_comes_back_empty_as_the_next_buffer) {
  NoGradGuard no_grad;
  Tensor held = vec({1, 2});
  variable_list spent{held};
  const Tensor* storage = spent.data();
  InputBuffer::recycle(std::move(spent));
  BOOST_TEST(held.use_count() == 1); // the list let go of its tensor when kept
  InputBuffer buf;
  buf.make_slots(1);
  BOOST_TEST(buf.size() == 1u);
  BOOST_TEST(!buf[0].defined());
  buf.add(0, vec({3}));
  auto vars = InputBuffer::variables(std::move(buf));
  BOOST_TEST(vars.data() == storage); // the same allocation, no new one
  BOOST_TEST(vars[0].to_vector() == (std::vector<double>{3}), boost::test_tools::per_element());
}

// Note [The root's slot list]: a single root of one input takes the call's
// list of root gradients as its slots; a root of more inputs gets its own.
BOOST_AUTO_TEST_CASE(a_root_of_one_input_takes_the_calls_gradient_list) {
  NoGradGuard no_grad;
  NamedNode one;
  one.add_input_metadata(vec({0, 0}));
  variable_list grads{vec({1, 2})};
  const Tensor* storage = grads.data();
  auto vars = InputBuffer::variables(ActorgradGraph::make_root_buffer(one, 0, std::move(grads)));
  BOOST_TEST(vars.data() == storage);
  BOOST_REQUIRE(vars.size() == 1u);
  BOOST_TEST(vars[0].to_vector() == (std::vector<double>{1, 2}), boost::test_tools::per_element());

  NamedNode two;
  two.add_input_metadata(vec({0}));
  two.add_input_metadata(vec({0, 0}));
  variable_list grad{vec({3, 4})};
  storage = grad.data();
  vars = InputBuffer::variables(ActorgradGraph::make_root_buffer(two, 1, std::move(grad)));
  BOOST_TEST(vars.data() != storage);
  BOOST_REQUIRE(vars.size() == 2u);
  BOOST_TEST(!vars[0].defined());
  BOOST_TEST(vars[1].to_vector() == (std::vector<double>{3, 4}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_kept_list_grows_for_a_node_with_more_inputs) {
  InputBuffer::recycle(variable_list(1));
  InputBuffer buf;
  buf.make_slots(5);
  BOOST_TEST(buf.size() == 5u);
  for (std::size_t i = 0; i < 5; ++i)
    BOOST_TEST(!buf[i].defined());
}

BOOST_AUTO_TEST_CASE(long_lists_and_lists_past_the_bound_are_not_kept) {
  variable_list long_list(detail::SpareInputLists::max_size + 1);
  InputBuffer::recycle(std::move(long_list));
  BOOST_TEST(long_list.size() == detail::SpareInputLists::max_size + 1); // left to its owner
  std::vector<variable_list> lists(detail::SpareInputLists::stack::max_kept + 1, variable_list(2));
  for (auto& l : lists)
    InputBuffer::recycle(std::move(l));
  BOOST_TEST(lists.back().capacity() == 2u); // the thread already kept as many as it may
  BOOST_TEST(detail::SpareInputLists::stack::size() == detail::SpareInputLists::stack::max_kept);
}

BOOST_AUTO_TEST_CASE(each_thread_keeps_its_own_lists) {
  InputBuffer drain;
  for (std::size_t i = 0; i < detail::SpareInputLists::stack::max_kept; ++i) {
    drain.make_slots(1);
    variable_list taken = InputBuffer::variables(std::move(drain));
    drain = InputBuffer();
  }
  BOOST_TEST(detail::SpareInputLists::stack::size() == 0u);
  std::size_t kept_there = 0;
  std::thread([&] {
    InputBuffer::recycle(variable_list(3));
    kept_there =
      detail::SpareInputLists::stack::size(); // freed at this thread's exit (LeakSanitizer checks)
  }).join();
  BOOST_TEST(kept_there == 1u);
  BOOST_TEST(detail::SpareInputLists::stack::size() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(saved_variable)

BOOST_AUTO_TEST_CASE(unpack_returns_the_saved_tensor) {
  auto node = make_node<NamedNode>();
  auto t = vec({1, 2});
  SavedVariable sv(t, false);
  BOOST_TEST(sv.was_defined());
  BOOST_TEST(sv.unpack(node.get()).to_vector() == t.to_vector(), boost::test_tools::per_element());
  SavedVariable empty(Tensor(), false);
  BOOST_TEST(!empty.was_defined());
  BOOST_TEST(!empty.unpack(node.get()).defined());
}

BOOST_AUTO_TEST_CASE(in_place_change_after_saving_names_the_node_and_versions) {
  auto node = make_node<NamedNode>();
  auto t = vec({1, 2});
  SavedVariable sv(t, false);
  t.mul_(2);
  t.mul_(2);
  t.mul_(2);
  BOOST_CHECK_EXCEPTION(sv.unpack(node.get()), EngineError,
                        message_has({"SavingBackward", "version 3", "version 0"}));
}

BOOST_AUTO_TEST_CASE(in_place_change_through_a_view_is_noticed) {
  auto node = make_node<NamedNode>();
  auto t = vec({1, 2, 3, 4});
  SavedVariable sv(t, false);
  auto v = reshape(t, {2, 2});
  v.fill_(0);
  BOOST_CHECK_EXCEPTION(sv.unpack(node.get()), EngineError,
                        message_has({"SavingBackward", "version 1"}));
}

BOOST_AUTO_TEST_CASE(unpack_after_release_mentions_retain_graph) {
  auto node = make_node<NamedNode>();
  SavedVariable sv(vec({1}), false);
  sv.reset_data();
  BOOST_CHECK_EXCEPTION(sv.unpack(node.get()), EngineError,
                        message_has({"SavingBackward", "retain_graph"}));
}

BOOST_AUTO_TEST_CASE(a_saved_output_gets_its_grad_fn_back_on_unpack) {
  auto x = vec({1, 2}).set_requires_grad(true);
  auto y = exp(x);
  SavedVariable sv(y, /*is_output=*/true);
  auto fn = y.grad_fn();
  auto back = sv.unpack(fn.get());
  BOOST_TEST(back.requires_grad());
  BOOST_TEST((back.grad_fn() == fn));
  BOOST_TEST(back.output_nr() == y.output_nr());
  BOOST_TEST(back.to_vector() == y.to_vector(), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
