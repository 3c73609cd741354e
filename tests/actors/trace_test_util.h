#pragma once
/// @file trace_test_util.h
/// Graphs and engines shared by the recording tests (test_recorder*.cpp,
/// test_trace_report*.cpp).

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "actorgrad/actors/engine.h"
#include "actorgrad/libengine/autograd.h"
#include "tests/actors/actor_test_util.h"

namespace actorgrad::testing {

/// An Engine serving sim:0 and sim:1 that counts the nodes it runs
/// (an observer: testing::on_node_start).
struct CountingEngine {
  std::atomic<std::size_t> nodes_run{0};
  Engine engine;

  CountingEngine() : engine(config(nodes_run)) {}

private:
  static EngineConfig config(std::atomic<std::size_t>& counter) {
    EngineConfig c;
    c.devices = {Device::sim(0), Device::sim(1)};
    c.observer =
      on_node_start([&counter](Device, const GraphTaskBase&, const NodeInfo&) { ++counter; });
    return c;
  }
};

/// Busy-waits for `d` of wall time.
inline void spin_for(std::chrono::microseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) {
  }
}

/// y = x recorded as a node `name` on x's device whose backward spins for
/// `cost` and passes the gradient on.
inline Tensor spinning_op(const Tensor& x, const std::string& name,
                          std::chrono::microseconds cost) {
  return lambda_op(x, name,
                   [cost](variable_list&& g) {
                     spin_for(cost);
                     return std::move(g);
                   })
    .first;
}

/// A loss whose backward crosses cpu, sim:0 and sim:1 many times: a chain
/// hopping over the three devices with a branch that rejoins it.
inline Tensor cross_device_loss(const Tensor& x) {
  const Device devices[] = {Device::cpu(), Device::sim(0), Device::sim(1)};
  Tensor h = x;
  Tensor side = x * 0.5;
  for (int i = 0; i < 12; ++i) {
    h = to_device(h, devices[i % 3]) * 1.1;
    if (i % 4 == 3)
      h = h + to_device(side, devices[i % 3]);
  }
  return sum(to_device(h, Device::cpu()));
}

/// A leaf [3] on the CPU.
inline Tensor leaf3() {
  return Tensor::from_vector({1, 2, 3}, {3}, DType::f64).set_requires_grad();
}

} // namespace actorgrad::testing
