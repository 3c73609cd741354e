#pragma once
/// @file dist_test_util.h
/// The float64 MLP the distributed tests split across processes, its
/// single-process gradients, and a comparison helper.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <thread>

#include <unistd.h>

#include <boost/test/unit_test.hpp>

#include "actors/remote/runtime.h"
#include "libengine/autograd.h"
#include "libengine/ops.h"

namespace actorgrad::dist_test {

/// Inputs and parameters of the MLP: x [8, 4] -> 16 -> 16 -> 3, tanh, mse.
struct Mlp {
  Tensor x = Tensor::randn({8, 4}, 11).set_requires_grad();
  Tensor y = Tensor::randn({8, 3}, 12);
  std::map<std::string, Tensor> p = {
    {"W1", Tensor::randn({4, 16}, 21)}, {"b1", Tensor::randn({16}, 22)},
    {"W2", Tensor::randn({16, 16}, 23)}, {"b2", Tensor::randn({16}, 24)},
    {"W3", Tensor::randn({16, 3}, 25)}, {"b3", Tensor::randn({3}, 26)}};

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
  BOOST_TEST_REQUIRE((a.shape() == b.shape()), what << ": shape " << a.describe() << " vs "
                                                   << b.describe());
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

} // namespace actorgrad::dist_test
