/// @file test_cuda_not_loaded.cpp
/// A CPU and sim run maps no CUDA library (Note [CUDA only when used] in
/// device/cuda/plugin.h): after backward passes on the CPU and on sim
/// devices through the actor engine, /proc/self/maps names neither
/// libcudart, libcublas nor the CUDA plugin. Holds trivially in a build
/// without the CUDA backend, and is checked there too.

#define BOOST_TEST_MODULE cuda_not_loaded
#include <boost/test/unit_test.hpp>

#include <fstream>
#include <string>
#include <vector>

#include "actorgrad/actors/engine.h"
#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/ops.h"

using namespace actorgrad;

namespace {

/// The lines of /proc/self/maps naming one of `libraries`.
std::vector<std::string> mapped(const std::vector<std::string>& libraries) {
  std::ifstream maps("/proc/self/maps");
  BOOST_REQUIRE(maps);
  std::vector<std::string> hits;
  for (std::string line; std::getline(maps, line);)
    for (const auto& lib : libraries)
      if (line.find(lib) != std::string::npos)
        hits.push_back(line);
  return hits;
}

} // namespace

BOOST_AUTO_TEST_CASE(cpu_and_sim_backward_map_no_cuda_library) {
  // The check sees this process's libraries: libc must be there.
  BOOST_TEST(!mapped({"libc.so"}).empty());

  Tensor w = Tensor::randn({4, 3}, 1).set_requires_grad(true);
  Tensor x = Tensor::randn({3, 2}, 2);
  sum(relu(matmul(w, x))).backward();
  BOOST_TEST(w.grad().defined());

  const Device sim0 = Device::sim(0);
  Engine engine(EngineConfig{{sim0, Device::sim(1)}});
  Tensor v = Tensor::ones({2, 2}).set_requires_grad(true);
  backward({sum(tanh(v.to(sim0)) * 3.0).to(Device::cpu())}, {}, engine);
  BOOST_TEST(v.grad().defined());

  const auto hits = mapped({"libcudart", "libcublas", "libactorgrad_cuda"});
  for (const auto& line : hits)
    BOOST_ERROR("a CUDA library is mapped after a CPU and sim run: " << line);
}
