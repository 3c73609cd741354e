#define BOOST_TEST_MODULE distributed_mlp
#include <boost/test/unit_test.hpp>

// An MLP split across two and three processes on 127.0.0.1 (workers
// started and killed by the test) gives the gradients of the single-process
// run to 1e-12 in float64, for the caller's leaves and each worker's
// parameters; a root that lives on a worker, repeated backward calls in one
// context, fresh contexts and the release of every context are checked too.

#include <string>

#include "actorgrad/actors/remote/dist_context.h"
#include "actorgrad/libengine/ops.h"
#include "tests/distributed/dist_test_util.h"
#include "tests/distributed/worker_process.h"

using namespace actorgrad;
using namespace actorgrad::testing;

namespace {

constexpr double kTol = 1e-12;

void check(const Tensor& got, const Tensor& want, const std::string& what) {
  double d = max_abs_diff(got, want, what);
  BOOST_TEST(d <= kTol, what << ": max |diff| " << d);
}

Tensor mse(const Tensor& out, const Tensor& y) {
  Tensor d = sub(out, y);
  return mean(mul(d, d));
}

} // namespace

BOOST_AUTO_TEST_CASE(two_processes_match_single_process) {
  WorkerProcess wa;
  remote::Runtime rt;
  auto a = rt.connect("127.0.0.1", wa.port());
  BOOST_TEST(a.name() == wa.name());
  Mlp m;
  auto want = m.reference();
  Tensor W1 = clone(m.p["W1"]).set_requires_grad(), b1 = clone(m.p["b1"]).set_requires_grad();
  Tensor W3 = clone(m.p["W3"]).set_requires_grad(), b3 = clone(m.p["b3"]).set_requires_grad();
  a.create_param("W2", m.p["W2"]);
  a.create_param("b2", m.p["b2"]);
  {
    remote::DistContext ctx(rt);
    // caller: layer 1; worker: layer 2 (linear, then tanh in a second call);
    // caller: layer 3 and the loss.
    Tensor h = tanh(add(matmul(m.x, W1), b1));
    h = remote::remote_call(ctx, a, "linear", {h}, {{"W2", "b2"}})[0];
    h = remote::remote_call(ctx, a, "tanh", {h})[0];
    Tensor loss = mse(add(matmul(h, W3), b3), m.y);
    remote::dist_backward(ctx, {loss});
    auto g = remote::get_gradients(ctx);
    check(g.local_grad(m.x), want["x"], "x");
    check(g.local_grad(W1), want["W1"], "W1");
    check(g.local_grad(b1), want["b1"], "b1");
    check(g.local_grad(W3), want["W3"], "W3");
    check(g.local_grad(b3), want["b3"], "b3");
    check(g.remote_grad(a, "W2"), want["W2"], "W2 on " + a.name());
    check(g.remote_grad(a, "b2"), want["b2"], "b2 on " + a.name());
    BOOST_TEST(!m.x.grad().defined()); // gradients go to the context, not .grad

    // A second backward in the same context accumulates.
    remote::dist_backward(ctx, {loss});
    auto g2 = remote::get_gradients(ctx);
    check(g2.remote_grad(a, "W2"), mul(want["W2"], 2.0), "W2 after two backward calls");
    check(g2.local_grad(W1), mul(want["W1"], 2.0), "W1 after two backward calls");
    BOOST_TEST(a.stats().contexts == 1u);
  }
  // Released everywhere when the context ends.
  BOOST_TEST(a.stats().contexts == 0u);
  BOOST_TEST(a.stats().pending == 0u);
  BOOST_TEST(rt.stats().contexts == 0u);

  // A fresh context starts from zero.
  remote::DistContext ctx2(rt);
  Tensor h = tanh(add(matmul(m.x, W1), b1));
  h = remote::remote_call(ctx2, a, "linear", {h}, {{"W2", "b2"}})[0];
  h = remote::remote_call(ctx2, a, "tanh", {h})[0];
  remote::dist_backward(ctx2, {mse(add(matmul(h, W3), b3), m.y)});
  check(remote::get_gradients(ctx2).remote_grad(a, "W2"), want["W2"], "W2 in a new context");
  BOOST_TEST(ctx2.id() != 0u);
}

BOOST_AUTO_TEST_CASE(three_processes_match_single_process) {
  WorkerProcess wa, wb;
  remote::Runtime rt;
  auto a = rt.connect("127.0.0.1", wa.port());
  auto b = rt.connect("127.0.0.1", wb.port());
  Mlp m;
  auto want = m.reference();
  a.create_param("W1", m.p["W1"]);
  a.create_param("b1", m.p["b1"]);
  b.create_param("W2", m.p["W2"]);
  b.create_param("b2", m.p["b2"]);
  a.create_param("W3", m.p["W3"]);
  a.create_param("b3", m.p["b3"]);
  remote::DistContext ctx(rt);
  // x (caller) -> A: layer 1 -> B: layer 2 -> A: layer 3 -> B: loss.
  Tensor h = remote::remote_call(ctx, a, "linear", {m.x}, {{"W1", "b1"}})[0];
  h = remote::remote_call(ctx, a, "tanh", {h})[0];
  h = remote::remote_call(ctx, b, "linear", {h}, {{"W2", "b2"}})[0];
  h = remote::remote_call(ctx, b, "tanh", {h})[0];
  h = remote::remote_call(ctx, a, "linear", {h}, {{"W3", "b3"}})[0];
  Tensor loss = remote::remote_call(ctx, b, "mse", {h, m.y})[0];
  BOOST_TEST(loss.dim() == 0);
  remote::dist_backward(ctx, {loss});
  auto g = remote::get_gradients(ctx);
  check(g.local_grad(m.x), want["x"], "x");
  for (const char* p : {"W1", "b1", "W3", "b3"})
    check(g.remote_grad(a, p), want[p], std::string(p) + " on " + a.name());
  for (const char* p : {"W2", "b2"})
    check(g.remote_grad(b, p), want[p], std::string(p) + " on " + b.name());
  BOOST_TEST(g.remote.size() == 2u);
  ctx.release();
  BOOST_TEST(a.stats().contexts == 0u);
  BOOST_TEST(b.stats().contexts == 0u);
  BOOST_TEST(b.stats().pending == 0u);
}

BOOST_AUTO_TEST_CASE(tensors_cross_as_raw_bytes_with_dtype_and_shape) {
  WorkerProcess wa;
  remote::Runtime rt;
  auto a = rt.connect("127.0.0.1", wa.port());
  remote::DistContext ctx(rt);
  for (DType dt : {DType::f64, DType::f32}) {
    Tensor t = Tensor::randn({3, 5, 2}, 7, dt);
    Tensor back = remote::remote_call(ctx, a, "identity", {t})[0];
    BOOST_TEST((back.dtype() == dt));
    BOOST_TEST((back.shape() == t.shape()));
    BOOST_TEST((back.to_vector() == t.to_vector())); // bitwise equal
  }
  Tensor s = remote::remote_call(ctx, a, "identity", {Tensor::scalar(2.5)})[0];
  BOOST_TEST(s.dim() == 0);
  BOOST_TEST(s.item() == 2.5);
  Tensor e = remote::remote_call(ctx, a, "identity", {Tensor::zeros({0, 4})})[0];
  BOOST_TEST((e.shape() == Shape{0, 4}));
  // A parameter round trip.
  a.create_param("p", Tensor::from_vector({1, 2, 3}, {3}));
  BOOST_TEST((a.fetch_param("p").to_vector() == std::vector<double>{1, 2, 3}));
}
