#pragma once
/// @file random_dag.h
/// Seeded random autograd DAGs over several devices: mixed ops, fan-in,
/// fan-out, several roots with their gradients (tests/actors/test_equivalence,
/// tests/stress/test_stress).

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "actorgrad/device/device.h"
#include "actorgrad/libengine/tensor/tensor.h"

namespace actorgrad::testing {

/// The devices a RandomDagGenerator spreads values over by default.
inline const std::vector<Device>& default_dag_devices() {
  static const std::vector<Device> devices{Device::cpu(), Device::sim(0), Device::sim(1),
                                           Device::sim(2)};
  return devices;
}

/// One random DAG: its leaves, every value, the roots and their gradients.
struct RandomDag {
  std::vector<Tensor> leaves; ///< require grad
  std::vector<Tensor> values; ///< every tensor that requires grad (leaves first)
  std::vector<Tensor> roots;
  std::vector<Tensor> root_grads; ///< one per root
  std::string description;        ///< seed and ops, for failure messages
  std::size_t devices_used = 0;
};

/// Builds random DAGs from a seed: float64 values in [-1, 1] spread over
/// `devices`; ops add / mul (broadcasting), tanh, sigmoid, exp(tanh),
/// matmul / outer, sums, reshapes, index_select with repeats, device copies
/// and products with a constant. Every tensor is created on the calling
/// thread's current streams. The same seed always gives the same graph.
class RandomDagGenerator {
public:
  explicit RandomDagGenerator(std::uint64_t seed,
                              std::vector<Device> devices = default_dag_devices())
    : rng_(seed), seed_(seed), devices_(std::move(devices)) {}

  /// A new graph (each call draws the next one from the generator).
  RandomDag build();

  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool coin(double p) { return std::bernoulli_distribution(p)(rng_); }
  /// Each of `values` with probability `p`, in order; the last one when
  /// that draws none.
  std::vector<Tensor> subset(const std::vector<Tensor>& values, double p) {
    std::vector<Tensor> picked;
    for (const auto& v : values)
      if (coin(p))
        picked.push_back(v);
    if (picked.empty())
      picked.push_back(values.back());
    return picked;
  }
  std::mt19937_64& rng() { return rng_; }

private:
  Shape random_shape();
  Device random_device();
  const Tensor& pick(const std::vector<Tensor>& values);
  Tensor random_op(const std::vector<Tensor>& values, std::string& what);
  Tensor broadcastable_partner(const std::vector<Tensor>& values, const Tensor& a);
  Tensor matmul_op(const std::vector<Tensor>& values, const Tensor& a, std::string& what);
  Tensor sum_op(const Tensor& a, std::string& what);
  Tensor reshape_op(const Tensor& a, std::string& what);
  Tensor index_select_op(const Tensor& a, std::string& what);

  std::mt19937_64 rng_;
  std::uint64_t seed_;
  std::vector<Device> devices_;
  Tensor constant_;
};

} // namespace actorgrad::testing
