/// @file test_torch_crosscheck.cpp
/// Cross-checks actorgrad's gradients against libtorch's on the same small
/// float64 models with identical inputs and parameters: an MLP with softmax
/// cross-entropy, a residual block, and a second-order case (the gradient of
/// a gradient norm). Every case runs on both executors (reference and
/// actor). Built only when libtorch is found (tests/CMakeLists.txt).

// libtorch first: its headers are large and must not see our macros.
#include <torch/torch.h>

#define BOOST_TEST_MODULE torch_crosscheck
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "actors/engine.h"
#include "libengine/autograd.h"
#include "libengine/engine/reference_executor.h"
#include "libengine/ops.h"
#include "libengine/tensor/tensor.h"

namespace ag = actorgrad;

namespace {

constexpr double kRelTol = 1e-6;

/// One leaf, held by both libraries with the same float64 values.
struct Leaf {
  std::string name;
  ag::Tensor ours;
  torch::Tensor theirs;
};

/// Makes leaves with identical values (drawn from a fixed seed) in both libraries.
class LeafFactory {
public:
  explicit LeafFactory(std::uint64_t seed) : rng_(seed) {}

  Leaf make(const std::string& name, const std::vector<std::int64_t>& shape, double scale,
            bool requires_grad = true) {
    std::int64_t n = 1;
    for (auto s : shape)
      n *= s;
    std::normal_distribution<double> normal(0.0, scale);
    std::vector<double> v(static_cast<std::size_t>(n));
    for (auto& x : v)
      x = normal(rng_);
    Leaf l{name, ag::Tensor::from_vector(v, shape, ag::DType::f64),
           torch::tensor(v, torch::dtype(torch::kFloat64)).reshape(shape).clone()};
    if (requires_grad) {
      l.ours.set_requires_grad(true);
      l.theirs.requires_grad_(true);
    }
    return l;
  }

  std::vector<std::int64_t> classes(std::int64_t n, std::int64_t num_classes) {
    std::uniform_int_distribution<std::int64_t> pick(0, num_classes - 1);
    std::vector<std::int64_t> t(static_cast<std::size_t>(n));
    for (auto& c : t)
      c = pick(rng_);
    return t;
  }

private:
  std::mt19937_64 rng_;
};

torch::Tensor torch_targets(const std::vector<std::int64_t>& t) {
  return torch::tensor(t, torch::dtype(torch::kInt64));
}

std::vector<double> torch_values(const torch::Tensor& t) {
  auto c = t.detach().to(torch::kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

/// Checks `ours` against `theirs` element by element to kRelTol, relative to
/// the element (with a floor at 1e-3 of the tensor's largest magnitude so
/// that near-zero elements are not held to an impossible standard).
void check_close(const std::string& what, const ag::Tensor& ours, const torch::Tensor& theirs) {
  BOOST_TEST_CONTEXT(what) {
    BOOST_TEST_REQUIRE(ours.defined() == theirs.defined());
    if (!ours.defined())
      return;
    std::vector<std::int64_t> their_shape(theirs.sizes().begin(), theirs.sizes().end());
    BOOST_TEST_REQUIRE(ours.shape() == their_shape, "shape " << ag::shape_str(ours.shape())
                                                             << " vs libtorch's "
                                                             << ag::shape_str(their_shape));
    const auto a = ours.to_vector();
    const auto b = torch_values(theirs);
    BOOST_TEST_REQUIRE(a.size() == b.size());
    double largest = 0;
    for (double x : b)
      largest = std::max(largest, std::abs(x));
    std::size_t bad = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      const double floor = std::max(1e-3 * largest, 1e-300);
      const double tol = kRelTol * std::max({std::abs(a[i]), std::abs(b[i]), floor});
      if (!(std::abs(a[i] - b[i]) <= tol)) {
        if (++bad <= 5)
          BOOST_ERROR("element " << i << ": actorgrad " << a[i] << " vs libtorch " << b[i]);
      }
    }
    BOOST_TEST(bad == 0u, bad << " of " << a.size() << " elements differ");
  }
}

void check_leaf_grads(const std::vector<Leaf>& leaves) {
  for (const auto& l : leaves)
    check_close(l.name + ".grad", l.ours.grad(), l.theirs.grad());
}

/// Runs `body` once with the reference executor and once with a (CPU-only)
/// actor Engine. The executor is passed explicitly to backward/grad rather
/// than installed as the process default: installed executors live until
/// exit, and an Engine must be destroyed before main returns.
void for_each_executor(const std::function<void(ag::Executor&)>& body) {
  {
    BOOST_TEST_CONTEXT("executor reference") {
      ag::ReferenceExecutor reference;
      body(reference);
    }
  }
  {
    BOOST_TEST_CONTEXT("executor actor") {
      ag::Engine engine{ag::EngineConfig{}};
      body(engine);
    }
  }
}

/// x [16, 5] -> tanh(x W1 + b1) -> relu(. W2 + b2) -> . W3 + b3 -> cross-entropy.
struct MlpCase {
  std::vector<Leaf> leaves;  // x, W1, b1, W2, b2, W3, b3
  std::vector<std::int64_t> targets;

  explicit MlpCase(std::uint64_t seed) {
    LeafFactory f(seed);
    leaves.push_back(f.make("x", {16, 5}, 1.0));
    leaves.push_back(f.make("W1", {5, 12}, 0.5));
    leaves.push_back(f.make("b1", {12}, 0.1));
    leaves.push_back(f.make("W2", {12, 12}, 0.4));
    leaves.push_back(f.make("b2", {12}, 0.1));
    leaves.push_back(f.make("W3", {12, 4}, 0.4));
    leaves.push_back(f.make("b3", {4}, 0.1));
    targets = f.classes(16, 4);
  }

  ag::Tensor ours_loss() const {
    const auto& L = leaves;
    auto h1 = ag::tanh(ag::matmul(L[0].ours, L[1].ours) + L[2].ours);
    auto h2 = ag::relu(ag::matmul(h1, L[3].ours) + L[4].ours);
    auto logits = ag::matmul(h2, L[5].ours) + L[6].ours;
    return ag::cross_entropy(logits, targets);
  }

  torch::Tensor their_loss() const {
    const auto& L = leaves;
    auto h1 = torch::tanh(torch::matmul(L[0].theirs, L[1].theirs) + L[2].theirs);
    auto h2 = torch::relu(torch::matmul(h1, L[3].theirs) + L[4].theirs);
    auto logits = torch::matmul(h2, L[5].theirs) + L[6].theirs;
    return torch::nn::functional::cross_entropy(logits, torch_targets(targets));
  }
};

/// y = x + relu(x W1 + b1) W2 + b2; loss = cross-entropy(y) + 0.1 * mean(tanh(y)^2).
struct ResidualCase {
  std::vector<Leaf> leaves;  // x, W1, b1, W2, b2
  std::vector<std::int64_t> targets;

  explicit ResidualCase(std::uint64_t seed) {
    LeafFactory f(seed);
    leaves.push_back(f.make("x", {16, 8}, 1.0));
    leaves.push_back(f.make("W1", {8, 8}, 0.4));
    leaves.push_back(f.make("b1", {8}, 0.1));
    leaves.push_back(f.make("W2", {8, 8}, 0.4));
    leaves.push_back(f.make("b2", {8}, 0.1));
    targets = f.classes(16, 8);
  }

  ag::Tensor ours_loss() const {
    const auto& L = leaves;
    auto inner = ag::relu(ag::matmul(L[0].ours, L[1].ours) + L[2].ours);
    auto y = L[0].ours + ag::matmul(inner, L[3].ours) + L[4].ours;
    return ag::cross_entropy(y, targets) + ag::mean(ag::pow(ag::tanh(y), 2.0)) * 0.1;
  }

  torch::Tensor their_loss() const {
    const auto& L = leaves;
    auto inner = torch::relu(torch::matmul(L[0].theirs, L[1].theirs) + L[2].theirs);
    auto y = L[0].theirs + torch::matmul(inner, L[3].theirs) + L[4].theirs;
    return torch::nn::functional::cross_entropy(y, torch_targets(targets)) +
           torch::pow(torch::tanh(y), 2.0).mean() * 0.1;
  }
};

void backward(const ag::Tensor& loss, ag::Executor& ex) {
  ag::backward({loss}, {}, std::nullopt, false, {}, ex);
}

template <class Case>
void check_first_order(std::uint64_t seed, ag::Executor& ex) {
  Case c(seed);
  auto ours = c.ours_loss();
  auto theirs = c.their_loss();
  check_close("loss", ours, theirs);
  backward(ours, ex);
  theirs.backward();
  check_leaf_grads(c.leaves);
}

} // namespace

BOOST_AUTO_TEST_CASE(mlp_cross_entropy_gradients_match_libtorch) {
  for_each_executor([](ag::Executor& ex) { check_first_order<MlpCase>(11, ex); });
}

BOOST_AUTO_TEST_CASE(residual_block_gradients_match_libtorch) {
  for_each_executor([](ag::Executor& ex) { check_first_order<ResidualCase>(12, ex); });
}

BOOST_AUTO_TEST_CASE(gradients_accumulate_like_libtorch_over_two_backwards) {
  for_each_executor([](ag::Executor& ex) {
    MlpCase c(13);
    for (int i = 0; i < 2; ++i) {
      backward(c.ours_loss(), ex);
      c.their_loss().backward();
    }
    check_leaf_grads(c.leaves);
  });
}

BOOST_AUTO_TEST_CASE(grad_of_gradient_norm_matches_libtorch) {
  for_each_executor([](ag::Executor& ex) {
    MlpCase c(14);
    const auto& L = c.leaves;
    // First order with create_graph, through the grad() API of both libraries.
    ag::variable_list our_inputs{L[1].ours, L[3].ours, L[5].ours};
    std::vector<torch::Tensor> their_inputs{L[1].theirs, L[3].theirs, L[5].theirs};
    auto our_g = ag::grad({c.ours_loss()}, our_inputs, {}, true, true, false, ex);
    auto their_g = torch::autograd::grad({c.their_loss()}, their_inputs, {}, true, true);
    BOOST_TEST_REQUIRE(our_g.size() == their_g.size());
    for (std::size_t i = 0; i < our_g.size(); ++i)
      check_close("d loss / d " + L[2 * i + 1].name, our_g[i], their_g[i]);
    // Second order: backward of the squared gradient norm into every leaf.
    ag::Tensor our_norm = ag::sum(ag::mul(our_g[0], our_g[0]));
    torch::Tensor their_norm = (their_g[0] * their_g[0]).sum();
    for (std::size_t i = 1; i < our_g.size(); ++i) {
      our_norm = our_norm + ag::sum(ag::mul(our_g[i], our_g[i]));
      their_norm = their_norm + (their_g[i] * their_g[i]).sum();
    }
    check_close("gradient norm", our_norm, their_norm);
    backward(our_norm, ex);
    their_norm.backward();
    check_leaf_grads(c.leaves);
  });
}
