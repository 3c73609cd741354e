#define BOOST_TEST_MODULE gradcheck_ops
#include <boost/test/unit_test.hpp>

#include <cmath>

#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/autograd/grad_mode.h"
#include "actorgrad/libengine/autograd/graph_builder.h"
#include "actorgrad/libengine/autograd/node.h"
#include "actorgrad/libengine/ops.h"
#include "tests/support/executor_fixture.h"
#include "tests/support/gradcheck.h"

using namespace actorgrad;
using actorgrad::testing::GradcheckOptions;
using actorgrad::testing::TensorFn;

// The macro pastes the name into an identifier: it must be unqualified.
using actorgrad::testing::ExecutorFromEnv;
BOOST_TEST_GLOBAL_FIXTURE(ExecutorFromEnv);

namespace {

std::uint64_t next_seed = 1;

/// A random float64 leaf that requires grad, entries in [lo, hi).
Tensor rnd(const Shape& shape, double lo = -1.0, double hi = 1.0) {
  return Tensor::uniform(shape, lo, hi, next_seed++).set_requires_grad(true);
}
/// A random positive leaf (for log, pow, div denominators).
Tensor pos(const Shape& shape) { return rnd(shape, 0.5, 2.0); }
/// A random leaf whose entries are at least 0.2 away from 0 (for relu).
Tensor away_from_zero(const Shape& shape) {
  auto v = Tensor::uniform(shape, 0.2, 1.0, next_seed++).to_vector();
  for (std::size_t i = 0; i < v.size(); i += 2)
    v[i] = -v[i];
  return Tensor::from_vector(v, shape).set_requires_grad(true);
}
/// A constant (no grad) input.
Tensor constant(const Shape& shape) { return Tensor::uniform(shape, -1.0, 1.0, next_seed++); }

/// First- and second-order gradcheck of `f` at `inputs`.
void check(const TensorFn& f, const std::vector<Tensor>& inputs, GradcheckOptions o = {}) {
  auto first = testing::gradcheck(f, inputs, o);
  BOOST_TEST(first.ok, "first order: " << first.message);
  auto second = testing::gradgradcheck(f, inputs, o);
  BOOST_TEST(second.ok, "second order: " << second.message);
}

using V = const std::vector<Tensor>&;

/// d(x*x) with a deliberately wrong backward (3g instead of 2xg), to show
/// that the first-order checker can fail.
struct WrongSquareBackward final : Node {
  using Node::Node;
  variable_list apply(variable_list&& g) override { return {mul(g[0], 3.0)}; }
  std::string name() const override { return "WrongSquareBackward"; }
};
/// d(x*x) = 2xg with x saved detached: right to first order, but its
/// gradient does not depend on x differentiably, so the second order is
/// wrong (what gradgradcheck must catch).
struct DetachedSquareBackward final : Node {
  DetachedSquareBackward(edge_list next, Tensor x) : Node(std::move(next)), x_(x.detach()) {}
  variable_list apply(variable_list&& g) override { return {mul(g[0], mul(x_, 2.0))}; }
  std::string name() const override { return "DetachedSquareBackward"; }
  Tensor x_;
};
template <class NodeT, class... Extra>
Tensor custom_square(const Tensor& x, Extra&&... extra) {
  Tensor y;
  {
    NoGradGuard ng;
    y = mul(x, x);
  }
  if (any_requires_grad({x}))
    set_history(y, make_node<NodeT>(collect_next_edges({x}), std::forward<Extra>(extra)...));
  return y;
}

} // namespace

BOOST_AUTO_TEST_SUITE(checker)

BOOST_AUTO_TEST_CASE(detects_a_wrong_first_derivative) {
  auto r =
    testing::gradcheck([](V x) { return custom_square<WrongSquareBackward>(x[0]); }, {pos({3})});
  BOOST_TEST(!r.ok);
  BOOST_TEST(r.max_abs_err > 0.1);
  BOOST_TEST(r.message.find("input 0") != std::string::npos, r.message);
}

BOOST_AUTO_TEST_CASE(detects_a_wrong_second_derivative) {
  auto f = [](V x) { return custom_square<DetachedSquareBackward>(x[0], x[0]); };
  auto first = testing::gradcheck(f, {pos({3})});
  BOOST_TEST(first.ok, first.message);
  auto second = testing::gradgradcheck(f, {pos({3})});
  BOOST_TEST(!second.ok);
  BOOST_TEST(second.message.find("input 0") != std::string::npos, second.message);
  // only the 3 entries of x are wrong: the derivative with respect to
  // grad_output is still right
  BOOST_TEST(second.message.rfind("3 entries differ", 0) == 0u, second.message);
}

BOOST_AUTO_TEST_CASE(passes_a_correct_function_with_a_constant_input) {
  auto c = constant({3});
  auto r = testing::gradcheck([](V x) { return mul(x[0], x[1]); }, {rnd({3}), c});
  BOOST_TEST(r.ok, r.message);
  BOOST_TEST(r.max_abs_err < 1e-6);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(elementwise)

BOOST_AUTO_TEST_CASE(add_op) {
  check([](V x) { return add(x[0], x[1]); }, {rnd({2, 3}), rnd({2, 3})});
}
BOOST_AUTO_TEST_CASE(sub_op) {
  check([](V x) { return sub(x[0], x[1]); }, {rnd({2, 3}), rnd({2, 3})});
}
BOOST_AUTO_TEST_CASE(mul_op) {
  check([](V x) { return mul(x[0], x[1]); }, {rnd({2, 3}), rnd({2, 3})});
}
BOOST_AUTO_TEST_CASE(div_op) {
  check([](V x) { return div(x[0], x[1]); }, {rnd({2, 3}), pos({2, 3})});
}
BOOST_AUTO_TEST_CASE(neg_op) {
  check([](V x) { return neg(x[0]); }, {rnd({4})});
}
BOOST_AUTO_TEST_CASE(add_scalar) {
  check([](V x) { return add(x[0], 2.5); }, {rnd({4})});
}
BOOST_AUTO_TEST_CASE(mul_scalar) {
  check([](V x) { return mul(x[0], -1.5); }, {rnd({4})});
}
BOOST_AUTO_TEST_CASE(scalar_operators) {
  check([](V x) { return (2.0 * x[0] - 1.0) / 4.0 + 3.0; }, {rnd({2, 2})});
}
BOOST_AUTO_TEST_CASE(pow_scalar_exponents) {
  for (double e : {2.0, 3.0, 2.5, -1.5, 0.5})
    check([e](V x) { return pow(x[0], e); }, {pos({3})});
}
BOOST_AUTO_TEST_CASE(pow_tensor_exponent) {
  check([](V x) { return pow(x[0], x[1]); }, {pos({2, 3}), rnd({2, 3})});
}
BOOST_AUTO_TEST_CASE(exp_op) {
  check([](V x) { return exp(x[0]); }, {rnd({2, 3})});
}
BOOST_AUTO_TEST_CASE(log_op) {
  check([](V x) { return log(x[0]); }, {pos({2, 3})});
}
BOOST_AUTO_TEST_CASE(tanh_op) {
  check([](V x) { return tanh(x[0]); }, {rnd({2, 3})});
}
BOOST_AUTO_TEST_CASE(sigmoid_op) {
  check([](V x) { return sigmoid(x[0]); }, {rnd({2, 3})});
}
BOOST_AUTO_TEST_CASE(relu_op) {
  // relu'' is 0 almost everywhere: the second-order check still runs the
  // double backward (and its derivative with respect to grad_output).
  check([](V x) { return relu(x[0]); }, {away_from_zero({2, 4})});
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(broadcasting)

BOOST_AUTO_TEST_CASE(column_with_row) {
  using BinOp = Tensor (*)(const Tensor&, const Tensor&);
  for (BinOp op : {BinOp{&add}, BinOp{&sub}, BinOp{&mul}})
    check([op](V x) { return (*op)(x[0], x[1]); }, {rnd({3, 1}), rnd({1, 4})});
  check([](V x) { return div(x[0], x[1]); }, {rnd({3, 1}), pos({1, 4})});
}
BOOST_AUTO_TEST_CASE(vector_with_rank3) {
  check([](V x) { return mul(x[0], x[1]); }, {rnd({4}), rnd({2, 3, 4})});
  check([](V x) { return add(x[0], x[1]); }, {rnd({2, 3, 4}), rnd({4})});
  check([](V x) { return div(x[0], x[1]); }, {rnd({2, 3, 4}), pos({4})});
}
BOOST_AUTO_TEST_CASE(scalar_tensor_with_matrix) {
  check([](V x) { return mul(x[0], x[1]); }, {rnd({}), rnd({2, 3})});
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(linear_algebra)

BOOST_AUTO_TEST_CASE(matmul_2d_2d) {
  check([](V x) { return matmul(x[0], x[1]); }, {rnd({3, 4}), rnd({4, 2})});
}
BOOST_AUTO_TEST_CASE(matmul_1d_2d) {
  check([](V x) { return matmul(x[0], x[1]); }, {rnd({4}), rnd({4, 2})});
}
BOOST_AUTO_TEST_CASE(matmul_2d_1d) {
  check([](V x) { return matmul(x[0], x[1]); }, {rnd({3, 4}), rnd({4})});
}
BOOST_AUTO_TEST_CASE(matmul_1d_1d) {
  check([](V x) { return matmul(x[0], x[1]); }, {rnd({4}), rnd({4})});
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(reductions)

BOOST_AUTO_TEST_CASE(sum_all) {
  check([](V x) { return sum(x[0]); }, {rnd({2, 3})});
}
BOOST_AUTO_TEST_CASE(sum_dims) {
  check([](V x) { return sum(x[0], {0}); }, {rnd({2, 3})});
  check([](V x) { return sum(x[0], {-1}); }, {rnd({2, 3})});
  check([](V x) { return sum(x[0], {0, 2}); }, {rnd({2, 3, 2})});
}
BOOST_AUTO_TEST_CASE(sum_keepdim) {
  check([](V x) { return sum(x[0], {1}, true); }, {rnd({2, 3})});
  check([](V x) { return sum(x[0], {0, 2}, true); }, {rnd({2, 3, 2})});
}
BOOST_AUTO_TEST_CASE(mean_all) {
  check([](V x) { return mean(x[0]); }, {rnd({2, 3})});
}
BOOST_AUTO_TEST_CASE(mean_dims) {
  check([](V x) { return mean(x[0], {1}); }, {rnd({2, 3})});
  check([](V x) { return mean(x[0], {0, 2}, true); }, {rnd({2, 3, 2})});
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(shape_ops)

BOOST_AUTO_TEST_CASE(reshape_op) {
  check([](V x) { return reshape(x[0], {3, -1}); }, {rnd({2, 6})});
}
BOOST_AUTO_TEST_CASE(view_op) {
  // a product with x afterwards makes the second order non-trivial
  check([](V x) { return mul(view(x[0], {6, 2}), view(x[0], {6, 2})); }, {rnd({2, 3, 2})});
}
BOOST_AUTO_TEST_CASE(transpose_op) {
  check([](V x) { return transpose(x[0], 0, 1); }, {rnd({2, 3})});
  check([](V x) { return transpose(x[0], 0, 2); }, {rnd({2, 3, 4})});
  check([](V x) { return matmul(transpose(x[0], 0, 1), x[0]); }, {rnd({3, 2})});
}
BOOST_AUTO_TEST_CASE(expand_op) {
  check([](V x) { return expand(x[0], {2, 3, 4}); }, {rnd({3, 1})});
  check([](V x) { return mul(expand(x[0], {3, 4}), x[1]); }, {rnd({4}), rnd({3, 4})});
}
BOOST_AUTO_TEST_CASE(sum_to_op) {
  check([](V x) { return sum_to(x[0], {3, 1}); }, {rnd({2, 3, 4})});
  check([](V x) { return sum_to(x[0], {4}); }, {rnd({2, 3, 4})});
}
BOOST_AUTO_TEST_CASE(clone_op) {
  check([](V x) { return mul(clone(x[0]), x[0]); }, {rnd({2, 3})});
}
BOOST_AUTO_TEST_CASE(index_select_op) {
  check([](V x) { return index_select(x[0], 0, {2, 0, 2}); }, {rnd({3, 2})});
  check(
    [](V x) {
      return mul(index_select(x[0], 1, {1, 1, 0}), x[1]);
    },
    {rnd({2, 3}), rnd({2, 3})});
}
BOOST_AUTO_TEST_CASE(narrow_op) {
  check([](V x) { return narrow(x[0], 1, 1, 2); }, {rnd({2, 4})});
  check([](V x) { return exp(narrow(x[0], 0, 1, 1)); }, {rnd({3, 2})});
}
BOOST_AUTO_TEST_CASE(cat_op) {
  check([](V x) { return cat({x[0], x[1]}); }, {rnd({2, 3}), rnd({1, 3})});
  check([](V x) { return cat({x[0], x[1], x[2]}, -1); }, {rnd({2, 1}), rnd({2, 3}), rnd({2, 2})});
  check([](V x) { return cat({x[0], x[1]}, 1); }, {rnd({2, 2, 3}), constant({2, 1, 3})});
  check([](V x) { return cat({x[0]}, 0); }, {rnd({3})});
  // one input twice, and a product after: a non-trivial second order
  check(
    [](V x) {
      return mul(cat({x[0], x[1], x[0]}), cat({x[1], x[0], x[1]}));
    },
    {rnd({2, 2}), rnd({2, 2})});
}
BOOST_AUTO_TEST_CASE(stack_op) {
  check([](V x) { return stack({x[0], x[1]}); }, {rnd({2, 3}), rnd({2, 3})});
  check(
    [](V x) {
      return stack({x[0], x[1], x[2]}, 1);
    },
    {rnd({2, 3}), constant({2, 3}), rnd({2, 3})});
  check([](V x) { return stack({x[0], x[1]}, -1); }, {rnd({2, 3}), rnd({2, 3})});
  check([](V x) { return stack({x[0], x[1]}); }, {rnd({}), rnd({})});
  check([](V x) { return exp(stack({x[0], mul(x[0], x[1])}, 2)); }, {rnd({2, 3}), rnd({2, 3})});
}
BOOST_AUTO_TEST_CASE(in_place_ops_on_a_constant) {
  // sub_, mul_ and div_ (broadcasting) change a fresh constant that the
  // products then use: the gradients of x[0] and x[1] depend on its values.
  auto denominator = Tensor::uniform({3}, 0.5, 2.0, next_seed++);
  check(
    [denominator](V x) {
      Tensor c = clone(x[2]); // does not require grad: in-place ops allowed
      c.mul_(x[3]).sub_(x[4], 0.5).div_(denominator);
      return mul(mul(x[0], c), x[1]);
    },
    {rnd({2, 3}), rnd({3}), constant({2, 3}), constant({2, 3}), constant({1, 3})});
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(activations_and_losses)

BOOST_AUTO_TEST_CASE(softmax_op) {
  check([](V x) { return softmax(x[0], 1); }, {rnd({2, 4})});
  check([](V x) { return softmax(x[0], 0); }, {rnd({3, 2})});
}
BOOST_AUTO_TEST_CASE(log_softmax_op) {
  check([](V x) { return log_softmax(x[0], -1); }, {rnd({2, 4})});
  check([](V x) { return log_softmax(x[0], 0); }, {rnd({3, 2})});
}
BOOST_AUTO_TEST_CASE(nll_loss_op) {
  check([](V x) { return nll_loss(x[0], {2, 0, 1}); }, {rnd({3, 4})});
  check([](V x) { return nll_loss(log_softmax(x[0], 1), {3, 3}); }, {rnd({2, 4})});
}
BOOST_AUTO_TEST_CASE(cross_entropy_op) {
  check([](V x) { return cross_entropy(x[0], {1, 0, 3}); }, {rnd({3, 4})});
}
BOOST_AUTO_TEST_CASE(small_mlp) {
  // cross_entropy(tanh(x W1 + b1) W2)
  check(
    [](V x) {
      auto h = tanh(add(matmul(x[0], x[1]), x[2]));
      return cross_entropy(matmul(h, x[3]), {0, 2});
    },
    {rnd({2, 3}), rnd({3, 4}), rnd({4}), rnd({4, 3})});
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(dtype)

BOOST_AUTO_TEST_CASE(to_dtype_roundtrip_through_float32) {
  // Values pass through float32, so the steps and tolerances are coarser.
  GradcheckOptions o;
  o.eps = 1e-3;
  o.atol = 1e-3;
  o.rtol = 1e-3;
  check([](V x) { return to_dtype(mul(to_dtype(x[0], DType::f32), 2.0), DType::f64); },
        {rnd({2, 3})}, o);
}

BOOST_AUTO_TEST_CASE(to_dtype_gradient_has_the_input_dtype) {
  auto x = rnd({2, 3});
  auto y = to_dtype(x, DType::f32);
  BOOST_TEST((y.dtype() == DType::f32));
  BOOST_TEST(y.requires_grad());
  backward({sum(mul(y, 3.0))});
  BOOST_REQUIRE(x.grad().defined());
  BOOST_TEST((x.grad().dtype() == DType::f64));
  for (double g : x.grad().to_vector())
    BOOST_TEST(g == 3.0);
}

BOOST_AUTO_TEST_SUITE_END()
