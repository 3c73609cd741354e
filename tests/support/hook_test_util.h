#pragma once
/// @file hook_test_util.h
/// A small graph and checks shared by the hook tests.

#include <boost/test/unit_test.hpp>

#include <vector>

#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/ops.h"

namespace actorgrad::testing {

/// x (leaf, [2, 3] on `d`) -> y = x * 2 (MulBackward) -> loss = sum(y).
struct SmallGraph {
  Tensor x, y, loss;
  explicit SmallGraph(Device d = Device::cpu()) {
    x = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, DType::f64, d).set_requires_grad();
    y = mul(x, 2.0);
    loss = sum(y);
  }
};

/// The values of `t` (copied to the host).
inline std::vector<double> values(const Tensor& t) {
  BOOST_REQUIRE_MESSAGE(t.defined(), "tensor is undefined");
  return t.to(Device::cpu()).to_vector();
}

/// x's gradient in SmallGraph.
inline const std::vector<double> kTwos(6, 2.0);

/// After an error, a fresh backward still runs and gives the right result.
inline void check_engine_still_works(Executor& ex = default_executor()) {
  SmallGraph g;
  backward({g.loss}, {}, ex);
  BOOST_TEST(values(g.x.grad()) == kTwos, boost::test_tools::per_element());
}

} // namespace actorgrad::testing
