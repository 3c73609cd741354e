/// @file test_torch_crosscheck.cpp
/// Cross-checks actorgrad's gradients against libtorch's on the same small
/// float64 models with identical inputs and parameters: an MLP with softmax
/// cross-entropy, a residual block, a model joining tensors with cat and
/// stack, second-order cases (the gradient of a gradient norm), and
/// parameter updates with the in-place sub_/mul_/div_/add_ (values and
/// version counters). Every case runs on both executors (reference and
/// actor). Built only when libtorch is found (tests/CMakeLists.txt).

// libtorch first: its headers are large and must not see our macros.
#include <torch/torch.h>

#define BOOST_TEST_MODULE torch_crosscheck
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "actorgrad/actors/engine.h"
#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/autograd/grad_mode.h"
#include "actorgrad/libengine/engine/errors.h"
#include "actorgrad/libengine/engine/reference_executor.h"
#include "actorgrad/libengine/ops.h"
#include "actorgrad/libengine/tensor/tensor.h"

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
  std::vector<Leaf> leaves; // x, W1, b1, W2, b2, W3, b3
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
  std::vector<Leaf> leaves; // x, W1, b1, W2, b2
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

/// a [4, 3], b [2, 3], c [4, 3], W [3, 5]:
/// k = cat(a, tanh(b), c) [10, 3] and s = stack(a * c, c, a) along dim 1 [4, 3, 3];
/// loss = mean(tanh(k W)^2) + 0.1 * sum(s * cat(s[..., 1:], s[..., :1], -1)).
struct JoinCase {
  std::vector<Leaf> leaves; // a, b, c, W

  explicit JoinCase(std::uint64_t seed) {
    LeafFactory f(seed);
    leaves.push_back(f.make("a", {4, 3}, 1.0));
    leaves.push_back(f.make("b", {2, 3}, 1.0));
    leaves.push_back(f.make("c", {4, 3}, 1.0));
    leaves.push_back(f.make("W", {3, 5}, 0.5));
  }

  ag::Tensor ours_loss() const {
    const auto& L = leaves;
    auto k = ag::cat({L[0].ours, ag::tanh(L[1].ours), L[2].ours});
    auto s = ag::stack({L[0].ours * L[2].ours, L[2].ours, L[0].ours}, 1);
    auto rolled = ag::cat({ag::narrow(s, -1, 1, 2), ag::narrow(s, -1, 0, 1)}, -1);
    return ag::mean(ag::pow(ag::tanh(ag::matmul(k, L[3].ours)), 2.0)) + ag::sum(s * rolled) * 0.1;
  }

  torch::Tensor their_loss() const {
    const auto& L = leaves;
    auto k = torch::cat({L[0].theirs, torch::tanh(L[1].theirs), L[2].theirs});
    auto s = torch::stack({L[0].theirs * L[2].theirs, L[2].theirs, L[0].theirs}, 1);
    auto rolled = torch::cat({s.narrow(-1, 1, 2), s.narrow(-1, 0, 1)}, -1);
    return torch::pow(torch::tanh(torch::matmul(k, L[3].theirs)), 2.0).mean() +
           (s * rolled).sum() * 0.1;
  }
};

void backward(const ag::Tensor& loss, ag::Executor& ex) { ag::backward({loss}, {}, ex); }

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

/// The gradients of the loss of `c` with respect to the leaves `wrt` (with
/// create_graph, through the grad() API of both libraries), then the
/// backward of their squared norm into every leaf.
template <class Case>
void check_gradient_norm(const Case& c, const std::vector<std::size_t>& wrt, ag::Executor& ex) {
  const auto& L = c.leaves;
  ag::variable_list our_inputs;
  std::vector<torch::Tensor> their_inputs;
  for (auto i : wrt) {
    our_inputs.push_back(L[i].ours);
    their_inputs.push_back(L[i].theirs);
  }
  auto our_g = ag::grad({c.ours_loss()}, our_inputs, {.create_graph = true}, ex);
  auto their_g = torch::autograd::grad({c.their_loss()}, their_inputs, {}, true, true);
  BOOST_TEST_REQUIRE(our_g.size() == their_g.size());
  for (std::size_t i = 0; i < our_g.size(); ++i)
    check_close("d loss / d " + L[wrt[i]].name, our_g[i], their_g[i]);
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
}

BOOST_AUTO_TEST_CASE(grad_of_gradient_norm_matches_libtorch) {
  for_each_executor([](ag::Executor& ex) { check_gradient_norm(MlpCase(14), {1, 3, 5}, ex); });
}

BOOST_AUTO_TEST_CASE(cat_and_stack_gradients_match_libtorch) {
  for_each_executor([](ag::Executor& ex) {
    check_first_order<JoinCase>(21, ex);
    check_gradient_norm(JoinCase(22), {0, 1, 2, 3}, ex);
  });
}

BOOST_AUTO_TEST_CASE(in_place_updates_match_libtorch_values_and_versions) {
  // Three steps of SGD with momentum and a per-column scale, all in place:
  // v = v * 0.9 + grad; p -= 0.05 * v; p /= scale; grad = 0.
  for_each_executor([](ag::Executor& ex) {
    MlpCase c(15);
    std::vector<ag::Tensor> our_v;
    std::vector<torch::Tensor> their_v;
    for (const auto& l : c.leaves) {
      our_v.push_back(ag::Tensor::zeros(l.ours.shape()));
      their_v.push_back(torch::zeros_like(l.theirs));
    }
    const auto momentum = ag::Tensor::scalar(0.9);
    for (int step = 0; step < 3; ++step) {
      backward(c.ours_loss(), ex);
      c.their_loss().backward();
      ag::NoGradGuard our_no_grad;
      torch::NoGradGuard their_no_grad;
      for (std::size_t i = 0; i < c.leaves.size(); ++i) {
        auto& l = c.leaves[i];
        const auto cols = l.ours.size(-1);
        std::vector<double> scale(static_cast<std::size_t>(cols));
        for (std::int64_t j = 0; j < cols; ++j)
          scale[j] = 1.0 + 0.01 * static_cast<double>(j + step);
        our_v[i].mul_(momentum).add_(l.ours.grad());
        their_v[i].mul_(torch::scalar_tensor(0.9, torch::kFloat64)).add_(l.theirs.grad());
        l.ours.sub_(our_v[i], 0.05).div_(ag::Tensor::from_vector(scale, {cols}));
        l.theirs.sub_(their_v[i], 0.05).div_(torch::tensor(scale, torch::kFloat64));
        l.ours.grad().zero_();
        l.theirs.grad().zero_();
      }
    }
    for (std::size_t i = 0; i < c.leaves.size(); ++i) {
      const auto& l = c.leaves[i];
      check_close(l.name + " after 3 steps", l.ours, l.theirs);
      check_close(l.name + " velocity", our_v[i], their_v[i]);
      BOOST_TEST(std::int64_t{l.ours.version()} == l.theirs._version(), l.name);
      BOOST_TEST(std::int64_t{our_v[i].version()} == their_v[i]._version(), l.name << " velocity");
    }
  });
}

BOOST_AUTO_TEST_CASE(in_place_change_of_a_saved_tensor_fails_like_libtorch) {
  using Op = std::function<void(ag::Tensor&, torch::Tensor&)>;
  const std::vector<std::pair<std::string, Op>> ops{
    {"sub_",
     [](ag::Tensor& a, torch::Tensor& t) {
       a.sub_(a, 0.5);
       t.sub_(t, 0.5);
     }},
    {"mul_",
     [](ag::Tensor& a, torch::Tensor& t) {
       a.mul_(a);
       t.mul_(t);
     }},
    {"div_",
     [](ag::Tensor& a, torch::Tensor& t) {
       a.div_(a);
       t.div_(t);
     }},
  };
  for_each_executor([&](ag::Executor& ex) {
    for (const auto& [name, op] : ops) {
      BOOST_TEST_CONTEXT(name) {
        LeafFactory f(16);
        Leaf x = f.make("x", {3}, 1.0, /*requires_grad=*/false);
        Leaf w = f.make("w", {3}, 1.0);
        auto ours = ag::sum(x.ours * w.ours); // saves x for w's gradient
        auto theirs = (x.theirs * w.theirs).sum();
        op(x.ours, x.theirs);
        check_close("x after " + name, x.ours, x.theirs);
        BOOST_TEST(std::int64_t{x.ours.version()} == x.theirs._version());
        BOOST_CHECK_THROW(backward(ours, ex), ag::EngineError);
        BOOST_CHECK_THROW(theirs.backward(), c10::Error);
      }
    }
  });
}
