#define BOOST_TEST_MODULE tensor_kernels
#include <boost/test/unit_test.hpp>

#include <cctype>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "actorgrad/libengine/ops.h"
#include "actorgrad/libengine/tensor/kernels.h"
#include "actorgrad/libengine/tensor/shape.h"
#include "tests/support/message_has.h"

using namespace actorgrad;

namespace {

void check_values(const Tensor& t, const Shape& shape, const std::vector<double>& expected,
                  double tol = 1e-12) {
  BOOST_REQUIRE(t.defined());
  BOOST_TEST(t.shape() == shape, "shape " << shape_str(t.shape()) << " != " << shape_str(shape));
  auto v = t.to_vector();
  BOOST_REQUIRE_EQUAL(v.size(), expected.size());
  for (std::size_t i = 0; i < v.size(); ++i)
    BOOST_TEST(std::abs(v[i] - expected[i]) <= tol,
               "element " << i << ": " << v[i] << " != " << expected[i]);
}

using actorgrad::testing::message_has;

Tensor seq(const Shape& shape, double start = 0) {
  std::vector<double> v(static_cast<std::size_t>(numel_of(shape)));
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = start + static_cast<double>(i);
  return Tensor::from_vector(v, shape);
}

/// out[i][j] = sum_k a[i][k] b[k][j], with 1-D operands promoted as torch.matmul does.
std::vector<double> naive_matmul(const Tensor& a, const Tensor& b) {
  const std::int64_t n = a.dim() == 1 ? 1 : a.size(0), k = a.size(-1);
  const std::int64_t m = b.dim() == 1 ? 1 : b.size(1);
  auto av = a.to_vector(), bv = b.to_vector();
  std::vector<double> out(static_cast<std::size_t>(n * m), 0.0);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < m; ++j)
      for (std::int64_t p = 0; p < k; ++p)
        out[i * m + j] += av[i * k + p] * bv[p * m + j];
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(shapes)

BOOST_AUTO_TEST_CASE(helpers) {
  BOOST_TEST(numel_of({}) == 1);
  BOOST_TEST(numel_of({2, 3, 4}) == 24);
  BOOST_TEST((contiguous_strides({2, 3, 4}) == Shape{12, 4, 1}));
  BOOST_TEST(shape_str({2, 3}) == "[2, 3]");
  BOOST_TEST(wrap_dim(-1, 3) == 2);
  BOOST_CHECK_THROW(wrap_dim(3, 3), std::exception);
  BOOST_TEST(is_expandable_to({3, 1}, {2, 3, 4}));
  BOOST_TEST(!is_expandable_to({3, 2}, {3, 4}));
}

BOOST_AUTO_TEST_CASE(eye_is_the_identity) {
  check_values(Tensor::eye(3), {3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1});
  check_values(Tensor::eye(1, DType::f32), {1, 1}, {1});
  BOOST_TEST(Tensor::eye(0).numel() == 0);
  const Tensor a = seq({3, 3}, 1);
  check_values(matmul(a, Tensor::eye(3)), {3, 3}, a.to_vector());
  BOOST_CHECK_EXCEPTION(Tensor::eye(-2), std::invalid_argument, message_has({"eye", "-2"}));
}

BOOST_AUTO_TEST_CASE(broadcast_shapes_follow_numpy) {
  BOOST_TEST((broadcast_shapes({3, 1}, {1, 4}) == Shape{3, 4}));
  BOOST_TEST((broadcast_shapes({4}, {2, 3, 4}) == Shape{2, 3, 4}));
  BOOST_TEST((broadcast_shapes({}, {2}) == Shape{2}));
  BOOST_CHECK_EXCEPTION(broadcast_shapes({3}, {4}), std::invalid_argument,
                        message_has({"[3]", "[4]"}));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(elementwise)

BOOST_AUTO_TEST_CASE(binary_ops_broadcast) {
  auto a = Tensor::from_vector({1, 2, 3}, {3, 1});
  auto b = Tensor::from_vector({10, 20, 30, 40}, {1, 4});
  check_values(kernels::add(a, b), {3, 4}, {11, 21, 31, 41, 12, 22, 32, 42, 13, 23, 33, 43});
  check_values(kernels::mul(a, b), {3, 4}, {10, 20, 30, 40, 20, 40, 60, 80, 30, 60, 90, 120});
  check_values(kernels::add(a, b, -1.0), {3, 4},
               {-9, -19, -29, -39, -8, -18, -28, -38, -7, -17, -27, -37});
  auto v = Tensor::from_vector({1, 2, 3, 4}, {4});
  auto c = seq({2, 3, 4});
  auto d = kernels::sub(c, v);
  BOOST_TEST((d.shape() == Shape{2, 3, 4}));
  auto dv = d.to_vector();
  for (std::size_t i = 0; i < dv.size(); ++i)
    BOOST_TEST(dv[i] == static_cast<double>(i) - static_cast<double>(i % 4 + 1));
  BOOST_CHECK_EXCEPTION(kernels::add(seq({3}), seq({4})), std::invalid_argument,
                        message_has({"[3]", "[4]"}));
}

BOOST_AUTO_TEST_CASE(unary_ops) {
  auto x = Tensor::from_vector({-1.0, 0.5, 2.0}, {3});
  check_values(kernels::relu(x), {3}, {0, 0.5, 2});
  check_values(kernels::neg(x), {3}, {1, -0.5, -2});
  check_values(kernels::exp(x), {3}, {std::exp(-1.0), std::exp(0.5), std::exp(2.0)});
  check_values(kernels::tanh(x), {3}, {std::tanh(-1.0), std::tanh(0.5), std::tanh(2.0)});
  check_values(kernels::sigmoid(x), {3},
               {1 / (1 + std::exp(1.0)), 1 / (1 + std::exp(-0.5)), 1 / (1 + std::exp(-2.0))});
  check_values(kernels::pow_scalar(x, 2.0), {3}, {1, 0.25, 4});
  check_values(kernels::gt_scalar(x, 0.0), {3}, {0, 1, 1});
  check_values(kernels::log(kernels::exp(x)), {3}, {-1, 0.5, 2});
}

BOOST_AUTO_TEST_CASE(float32_kernels) {
  auto x = Tensor::from_vector({1.5, 2.5}, {2}, DType::f32);
  auto y = kernels::mul_scalar(x, 2.0);
  BOOST_TEST((y.dtype() == DType::f32));
  check_values(y, {2}, {3, 5});
  check_values(kernels::cast(y, DType::f64), {2}, {3, 5});
  BOOST_TEST((kernels::cast(y, DType::f64).dtype() == DType::f64));
  BOOST_CHECK_EXCEPTION(kernels::add(x, seq({2})), std::invalid_argument,
                        message_has({"float32", "float64"}));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(reductions)

BOOST_AUTO_TEST_CASE(sum_over_dims) {
  auto x = seq({2, 3, 4}); // x[i][j][k] = 12i + 4j + k
  check_values(kernels::sum(x), {}, {276});
  auto s0 = kernels::sum(x, {0});
  BOOST_TEST((s0.shape() == Shape{3, 4}));
  BOOST_TEST(s0.at({1, 2}) == (4 + 2) + (12 + 4 + 2));
  check_values(kernels::sum(x, {1, 2}), {2}, {66, 210});
  check_values(kernels::sum(x, {-1}, true), {2, 3, 1}, {6, 22, 38, 54, 70, 86});
  check_values(kernels::sum(x, {0, 2}, true), {1, 3, 1}, {60, 92, 124});
}

// A float32 sum accumulates in float64 (as the CUDA kernels do): along a
// 100,000-element lane, a float32 running sum was off by about 1e-5 of the
// result, which the H100 run of tests/cuda found against the GPU's sum.
BOOST_AUTO_TEST_CASE(float32_sums_accumulate_in_float64) {
  const auto x64 = Tensor::randn({3, 100000}, 305);
  const auto x32 = kernels::cast(x64, DType::f32);
  const auto exact = kernels::sum(kernels::cast(x32, DType::f64), {1}).to_vector();
  const auto lanes = kernels::sum(x32, {1}).to_vector();
  const auto whole = kernels::sum(x32).to_vector();
  double total = 0;
  for (std::size_t r = 0; r < exact.size(); ++r) {
    // float64 sums rounded once to float32: within an ulp of the exact sums.
    BOOST_TEST(std::abs(lanes[r] - exact[r]) <= std::abs(exact[r]) * 1.2e-7);
    total += exact[r];
  }
  BOOST_TEST(std::abs(whole[0] - total) <= std::abs(total) * 1.2e-7);
}

BOOST_AUTO_TEST_CASE(mean_amax_sum_to) {
  auto x = seq({2, 3});
  check_values(mean(x), {}, {2.5});
  check_values(mean(x, {1}), {2}, {1, 4});
  check_values(mean(x, {0}, true), {1, 3}, {1.5, 2.5, 3.5});
  check_values(kernels::amax(Tensor::from_vector({1, 5, 2, 7, 0, 3}, {2, 3}), 1, false), {2},
               {5, 7});
  check_values(kernels::sum_to(seq({2, 3, 4}), {3, 1}), {3, 1}, {60, 92, 124});
  check_values(kernels::sum_to(seq({2, 3}), {3}), {3}, {3, 5, 7});
  BOOST_TEST(!kernels::any_nan(x));
  BOOST_TEST(kernels::any_nan(Tensor::from_vector({1, std::nan("")}, {2})));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(linear_algebra)

BOOST_AUTO_TEST_CASE(matmul_matches_a_naive_triple_loop) {
  struct Case {
    Shape a, b, out;
  };
  std::uint64_t seed = 7;
  for (const auto& c : std::vector<Case>{{{5, 7}, {7, 3}, {5, 3}},
                                         {{1, 1}, {1, 1}, {1, 1}},
                                         {{7}, {7, 3}, {3}},
                                         {{5, 7}, {7}, {5}},
                                         {{7}, {7}, {}}}) {
    auto a = Tensor::randn(c.a, seed++);
    auto b = Tensor::randn(c.b, seed++);
    check_values(kernels::matmul(a, b), c.out, naive_matmul(a, b), 1e-12);
  }
  BOOST_CHECK_EXCEPTION(kernels::matmul(seq({2, 3}), seq({4, 2})), std::exception,
                        message_has({"[2, 3]", "[4, 2]"}));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(softmax)

BOOST_AUTO_TEST_CASE(rows_sum_to_one_and_log_softmax_agrees) {
  auto x = Tensor::randn({4, 5}, 3);
  // large values must not overflow
  auto big = Tensor::from_vector({1000, 1001, 1002}, {1, 3});
  for (const auto& t : {x, kernels::mul_scalar(x, 30.0), big}) {
    auto s = kernels::softmax(t, 1);
    auto rows = kernels::sum(s, {1}).to_vector();
    for (double r : rows)
      BOOST_TEST(std::abs(r - 1.0) < 1e-12);
    for (double p : s.to_vector())
      BOOST_TEST((p >= 0.0 && p <= 1.0));
    auto ls = kernels::log_softmax(t, 1);
    BOOST_TEST(kernels::max_abs_diff(kernels::exp(ls), s) < 1e-12);
  }
  auto cols = kernels::sum(kernels::softmax(x, 0), {0}).to_vector();
  for (double c : cols)
    BOOST_TEST(std::abs(c - 1.0) < 1e-12);
  check_values(kernels::softmax(big, 1), {1, 3},
               {1 / (1 + std::exp(1.0) + std::exp(2.0)),
                std::exp(1.0) / (1 + std::exp(1.0) + std::exp(2.0)),
                std::exp(2.0) / (1 + std::exp(1.0) + std::exp(2.0))});
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(shape_and_data)

BOOST_AUTO_TEST_CASE(transpose_expand_index_narrow) {
  auto x = seq({2, 3});
  check_values(kernels::transpose(x, 0, 1), {3, 2}, {0, 3, 1, 4, 2, 5});
  check_values(kernels::expand(Tensor::from_vector({1, 2}, {2, 1}), {2, 3}), {2, 3},
               {1, 1, 1, 2, 2, 2});
  check_values(kernels::index_select(x, 1, {2, 0, 2}), {2, 3}, {2, 0, 2, 5, 3, 5});
  check_values(kernels::index_select(x, 0, {1}), {1, 3}, {3, 4, 5});
  check_values(kernels::index_add_into_zeros({2, 3}, 1, {2, 2}, Tensor::ones({2, 2})), {2, 3},
               {0, 0, 2, 0, 0, 2});
  check_values(kernels::narrow(x, 1, 1, 2), {2, 2}, {1, 2, 4, 5});
  check_values(kernels::narrow_into_zeros({2, 3}, 1, 1, Tensor::ones({2, 2})), {2, 3},
               {0, 1, 1, 0, 1, 1});
  check_values(reshape(x, {3, -1}), {3, 2}, {0, 1, 2, 3, 4, 5});
}

BOOST_AUTO_TEST_CASE(index_out_of_range_names_the_index) {
  auto x = seq({3, 2});
  BOOST_CHECK_EXCEPTION(kernels::index_select(x, 0, {0, 7}), std::logic_error, message_has({"7"}));
  BOOST_CHECK_EXCEPTION(kernels::index_select(x, 1, {-5}), std::logic_error, message_has({"-5"}));
  BOOST_CHECK_THROW(kernels::narrow(x, 0, 2, 2), std::exception);
}

BOOST_AUTO_TEST_CASE(view_shares_storage_and_version) {
  auto x = seq({2, 3});
  auto v = kernels::view(x, {3, 2});
  BOOST_TEST((v.shape() == Shape{3, 2}));
  BOOST_TEST(v.data<double>() == x.data<double>());
  BOOST_TEST(!v.is_same(x));
  const auto before = x.version();
  v.mul_(2.0);
  BOOST_TEST(x.version() == before + 1);
  BOOST_TEST(v.version() == x.version());
  BOOST_TEST(x.at({1, 2}) == 10.0); // the base sees the write through the view
  auto d = x.detach();
  d.fill_(1.0);
  BOOST_TEST(x.version() == before + 2);
  BOOST_TEST(x.at({0, 0}) == 1.0);
  auto c = kernels::clone(x);
  BOOST_TEST(c.data<double>() != x.data<double>());
  c.fill_(5.0);
  BOOST_TEST(x.at({0, 0}) == 1.0);
  BOOST_CHECK_THROW(kernels::view(x, {4, 2}), std::exception);
}

BOOST_AUTO_TEST_CASE(in_place_ops_bump_the_version) {
  auto x = seq({2, 2});
  std::uint32_t expected = x.version();
  auto step = [&](const char* what) {
    ++expected;
    BOOST_TEST(x.version() == expected, what);
  };
  x.add_(Tensor::ones({2, 2}), 2.0);
  step("add_");
  check_values(x, {2, 2}, {2, 3, 4, 5});
  x.add_(Tensor::from_vector({1, 2}, {2})); // broadcast
  step("add_ broadcast");
  check_values(x, {2, 2}, {3, 5, 5, 7});
  x.mul_(2);
  step("mul_");
  check_values(x, {2, 2}, {6, 10, 10, 14});
  x.sub_(Tensor::from_vector({1, 2}, {2}), 3.0); // self -= alpha * other, broadcast
  step("sub_");
  check_values(x, {2, 2}, {3, 4, 7, 8});
  x.mul_(Tensor::from_vector({2, 3}, {2, 1}));
  step("mul_ tensor");
  check_values(x, {2, 2}, {6, 8, 21, 24});
  x.div_(Tensor::from_vector({3, 4}, {2}));
  step("div_");
  check_values(x, {2, 2}, {2, 2, 7, 6});
  BOOST_CHECK_EXCEPTION(x.div_(Tensor::ones({3})), std::invalid_argument,
                        message_has({"div_", "[3]", "[2, 2]"}));
  BOOST_CHECK_EXCEPTION(x.sub_(Tensor::ones({2, 2}, DType::f32)), std::invalid_argument,
                        message_has({"sub_"}));
  BOOST_TEST(x.version() == expected); // refused ops change nothing
  x.copy_(seq({2, 2}, 10));
  step("copy_");
  check_values(x, {2, 2}, {10, 11, 12, 13});
  x.fill_(3);
  step("fill_");
  x.zero_();
  step("zero_");
  check_values(x, {2, 2}, {0, 0, 0, 0});
  BOOST_TEST(kernels::add(x, x).version() == 0u); // out-of-place results are fresh
}

BOOST_AUTO_TEST_CASE(cat_and_stack) {
  auto a = seq({2, 3});
  auto b = seq({1, 3}, 10);
  check_values(kernels::cat({a, b}, 0), {3, 3}, {0, 1, 2, 3, 4, 5, 10, 11, 12});
  check_values(kernels::cat({a, seq({2, 1}, 20), a}, -1), {2, 7},
               {0, 1, 2, 20, 0, 1, 2, 3, 4, 5, 21, 3, 4, 5});
  check_values(kernels::cat({seq({2, 0}), a}, 1), {2, 3}, a.to_vector()); // empty along dim
  auto c = seq({2, 3}, 6);
  check_values(kernels::stack({a, c}, 0), {2, 2, 3}, seq({2, 2, 3}).to_vector());
  check_values(kernels::stack({a, c}, -1), {2, 3, 2}, {0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11});
  check_values(kernels::stack({Tensor::scalar(1), Tensor::scalar(2)}, 0), {2}, {1, 2});
  // on a sim device, and a result that does not alias its inputs
  auto s = kernels::cat({a.to(Device::sim(1)), b.to(Device::sim(1))}, 0);
  BOOST_TEST((s.device() == Device::sim(1)));
  check_values(s, {3, 3}, {0, 1, 2, 3, 4, 5, 10, 11, 12});
  BOOST_TEST(kernels::cat({a}, 0).data<double>() != a.data<double>());
}

BOOST_AUTO_TEST_CASE(cat_and_stack_errors_name_the_tensor) {
  auto a = seq({2, 3});
  BOOST_CHECK_EXCEPTION(kernels::cat({}, 0), std::invalid_argument, message_has({"cat", "empty"}));
  BOOST_CHECK_EXCEPTION(kernels::cat({a, Tensor()}, 0), std::invalid_argument,
                        message_has({"cat", "tensors[1] is undefined"}));
  BOOST_CHECK_EXCEPTION(kernels::cat({a, seq({2, 2})}, 0), std::invalid_argument,
                        message_has({"cat", "tensors[1]", "[2, 2]", "[2, 3]", "dimension 0"}));
  BOOST_CHECK_EXCEPTION(kernels::cat({a, seq({2, 3, 1})}, 1), std::invalid_argument,
                        message_has({"tensors[1]", "[2, 3, 1]"}));
  BOOST_CHECK_EXCEPTION(kernels::cat({a, Tensor::ones({2, 3}, DType::f32)}, 0),
                        std::invalid_argument, message_has({"tensors[1]", "float32", "float64"}));
  BOOST_CHECK_EXCEPTION(kernels::cat({a, a.to(Device::sim(0))}, 0), std::invalid_argument,
                        message_has({"tensors[1]", "sim:0", "cpu"}));
  BOOST_CHECK_EXCEPTION(kernels::cat({a, a}, 2), std::out_of_range, message_has({"cat", "2"}));
  BOOST_CHECK_EXCEPTION(kernels::cat({Tensor::scalar(1)}, 0), std::invalid_argument,
                        message_has({"cat", "0-dim"}));
  BOOST_CHECK_EXCEPTION(kernels::stack({a, seq({3, 2})}, 0), std::invalid_argument,
                        message_has({"stack", "tensors[1]", "[3, 2]", "[2, 3]"}));
  BOOST_CHECK_EXCEPTION(kernels::stack({a, a}, 3), std::out_of_range, message_has({"stack", "3"}));
  check_values(kernels::stack({a, a}, -3), {2, 2, 3}, kernels::cat({a, a}, 0).to_vector());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(devices)

BOOST_AUTO_TEST_CASE(mismatch_names_both_devices) {
  auto a = Tensor::ones({2}, DType::f64, Device::cpu());
  auto b = Tensor::ones({2}, DType::f64, Device::sim(0));
  BOOST_TEST((b.device() == Device::sim(0)));
  BOOST_TEST(b.describe().find("sim:0") != std::string::npos, b.describe());
  BOOST_CHECK_EXCEPTION(kernels::add(a, b), std::invalid_argument, message_has({"cpu", "sim:0"}));
  BOOST_CHECK_EXCEPTION(kernels::matmul(b, a), std::invalid_argument,
                        message_has({"cpu", "sim:0"}));
  auto moved = kernels::to_device(b, Device::cpu());
  BOOST_TEST((moved.device() == Device::cpu()));
  check_values(kernels::add(a, moved), {2}, {2, 2});
}

BOOST_AUTO_TEST_CASE(describe_and_factories) {
  auto t = Tensor::zeros({2, 3}, DType::f32, Device::sim(1));
  BOOST_TEST(t.describe() == "float32[2, 3] on sim:1");
  BOOST_TEST(Tensor::scalar(4.5).item() == 4.5);
  BOOST_TEST(Tensor::scalar(4.5).dim() == 0);
  BOOST_CHECK_THROW(Tensor::from_vector({1, 2, 3}, {2, 2}), std::exception);
  for (double u : Tensor::uniform({100}, -2, 3, 1).to_vector())
    BOOST_TEST((u >= -2 && u < 3));
  BOOST_TEST(Tensor::randn({5}, 9).to_vector() == Tensor::randn({5}, 9).to_vector());
}

BOOST_AUTO_TEST_SUITE_END()
