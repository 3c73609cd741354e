#pragma once
/// @file dist_test_util.h
/// The float64 MLP the distributed tests split across processes, its
/// single-process gradients, and a comparison helper.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <string>
#include <thread>

#include <unistd.h>

#include <boost/test/unit_test.hpp>

#include "actorgrad/actors/remote/dist_context.h"
#include "actorgrad/actors/remote/runtime.h"
#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/ops.h"

namespace actorgrad::testing {

/// Inputs and parameters of the MLP: x [8, 4] -> 16 -> 16 -> 3, tanh, mse.
struct Mlp {
  Tensor x = Tensor::randn({8, 4}, 11).set_requires_grad();
  Tensor y = Tensor::randn({8, 3}, 12);
  std::map<std::string, Tensor> p = {
    {"W1", Tensor::randn({4, 16}, 21)},  {"b1", Tensor::randn({16}, 22)},
    {"W2", Tensor::randn({16, 16}, 23)}, {"b2", Tensor::randn({16}, 24)},
    {"W3", Tensor::randn({16, 3}, 25)},  {"b3", Tensor::randn({3}, 26)}};

  /// Gradients of the single-process run, by name (and "x").
  std::map<std::string, Tensor> reference() const {
    std::map<std::string, Tensor> leaf;
    for (auto& [k, v] : p)
      leaf[k] = clone(v).set_requires_grad();
    Tensor xr = clone(x.detach()).set_requires_grad();
    Tensor h = tanh(add(matmul(xr, leaf["W1"]), leaf["b1"]));
    h = tanh(add(matmul(h, leaf["W2"]), leaf["b2"]));
    Tensor out = add(matmul(h, leaf["W3"]), leaf["b3"]);
    Tensor d = sub(out, y);
    Tensor loss = mean(mul(d, d));
    variable_list inputs = {xr};
    for (auto& [k, v] : leaf)
      inputs.push_back(v);
    auto g = grad({loss}, inputs);
    std::map<std::string, Tensor> result{{"x", g[0]}};
    std::size_t i = 1;
    for (auto& [k, v] : leaf)
      result[k] = g[i++];
    return result;
  }
};

/// Largest absolute difference; fails the test when shapes differ or `a` is undefined.
inline double max_abs_diff(const Tensor& a, const Tensor& b, const std::string& what) {
  BOOST_TEST_REQUIRE(a.defined(), what << ": no gradient");
  BOOST_TEST_REQUIRE((a.shape() == b.shape()),
                     what << ": shape " << a.describe() << " vs " << b.describe());
  auto va = a.to_vector();
  auto vb = b.to_vector();
  double m = 0;
  for (std::size_t i = 0; i < va.size(); ++i)
    m = std::max(m, std::abs(va[i] - vb[i]));
  return m;
}

/// A marker file path unique to this process and `tag` (test.slow_backward
/// creates it when its backward starts).
inline std::string marker_path(const std::string& tag) {
  return (std::filesystem::temp_directory_path() /
          ("actorgrad_dist_" + tag + "_" + std::to_string(::getpid())))
    .string();
}

/// Waits at most `wait` until `path` exists; returns whether it does.
inline bool wait_for_file(const std::string& path, std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (!std::filesystem::exists(path) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return std::filesystem::exists(path);
}

/// The message of the remote::DistError `fn` throws ("" when it throws none).
template <class F>
std::string error_of(F&& fn) {
  try {
    fn();
  } catch (const remote::DistError& e) {
    return e.what();
  }
  return {};
}

/// Largest |a - b|; infinite when `a` is undefined or the shapes differ.
/// No Boost.Test assertion: safe on any thread.
inline double max_diff(const Tensor& a, const Tensor& b) {
  if (!a.defined() || a.shape() != b.shape())
    return std::numeric_limits<double>::infinity();
  const auto va = a.to_vector(), vb = b.to_vector();
  double m = 0;
  for (std::size_t i = 0; i < va.size(); ++i)
    m = std::max(m, std::abs(va[i] - vb[i]));
  return m;
}

/// x -> a: linear(W) -> caller: tanh -> c: linear(V) -> mean(out^2), with a
/// dist_backward across the processes (x, W, V drawn from seeds `seed`,
/// +1, +2; W and V held by the workers as parameters `w` and `v`). Returns
/// the largest difference of the gradients of x, W and V from a
/// single-process run. Safe on any thread.
inline double two_layer_difference(remote::Runtime& rt, const remote::RemoteWorker& a,
                                   const remote::RemoteWorker& c, std::uint64_t seed,
                                   const std::string& w, const std::string& v) {
  Tensor x = Tensor::randn({5, 4}, seed).set_requires_grad();
  Tensor W = Tensor::randn({4, 6}, seed + 1), V = Tensor::randn({6, 2}, seed + 2);
  a.create_param(w, W);
  c.create_param(v, V);
  remote::DistContext ctx(rt);
  Tensor h = tanh(remote::remote_call(ctx, a, "linear", {x}, {{w}})[0]);
  Tensor out = remote::remote_call(ctx, c, "linear", {h}, {{v}})[0];
  remote::dist_backward(ctx, {mean(mul(out, out))});
  auto g = remote::get_gradients(ctx);

  Tensor Wl = clone(W).set_requires_grad(), Vl = clone(V).set_requires_grad();
  Tensor xl = clone(x.detach()).set_requires_grad();
  Tensor ol = matmul(tanh(matmul(xl, Wl)), Vl);
  auto want = grad({mean(mul(ol, ol))}, {xl, Wl, Vl});
  return std::max({max_diff(g.local_grad(x), want[0]), max_diff(g.remote_grad(a, w), want[1]),
                   max_diff(g.remote_grad(c, v), want[2])});
}

} // namespace actorgrad::testing
