/// @file test_cuda_unavailable.cpp
/// Asking for a CUDA device that cannot be served (no CUDA plugin, a plugin
/// that fails to load, or no such GPU) gives an error naming the device and
/// why, never a crash, and the engine goes on working on the CPU and sim
/// devices. ctest runs it twice: as built (cuda_test_cuda_unavailable), and
/// with ACTORGRAD_CUDA_PLUGIN naming a file that does not exist, whose
/// path and loader error the messages must carry.

#define BOOST_TEST_MODULE cuda_unavailable
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "actorgrad/actors/engine.h"
#include "actorgrad/device/availability.h"
#include "actorgrad/device/cuda/cuda_backend.h"
#include "actorgrad/device/cuda/plugin_loader.h"
#include "actorgrad/device/stream.h"
#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/ops.h"

using namespace actorgrad;

namespace {

/// The plugin file forced through ACTORGRAD_CUDA_PLUGIN, or empty.
std::string forced_plugin() {
  const char* p = std::getenv("ACTORGRAD_CUDA_PLUGIN");
  return p != nullptr ? p : "";
}

/// One past the last CUDA device: cuda:0 without a plugin or a GPU.
Device missing_gpu() { return Device::cuda(static_cast<std::int16_t>(cuda::device_count())); }

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// When the plugin could not be loaded, `what` says which file and why.
void check_plugin_reason(const std::string& what) {
  if (!forced_plugin().empty()) {
    BOOST_TEST(contains(what, forced_plugin()), what);
    BOOST_TEST(contains(what, "failed to load"), what);
    BOOST_TEST(contains(what, "No such file"), what); // dlerror()
  } else if (cuda::find_plugin() == nullptr) {
    BOOST_TEST(contains(what, "libactorgrad_cuda.so"), what);
  }
}

/// Names `d`, and the plugin when it could not be loaded.
void check_reason(const std::string& what, Device d) {
  BOOST_TEST(contains(what, d.str()), what);
  check_plugin_reason(what);
}

} // namespace

BOOST_AUTO_TEST_CASE(queries_answer_without_throwing) {
  const Device d = missing_gpu();
  if (!forced_plugin().empty()) {
    BOOST_TEST(cuda::find_plugin() == nullptr);
    BOOST_TEST(cuda::device_count() == 0);
  }
  BOOST_TEST(cuda::available() == (cuda::device_count() > 0));
  if (cuda::find_plugin() == nullptr) {
    BOOST_TEST(!has_streams(d));
    check_plugin_reason(cuda::plugin_error());
  }
  const std::string why = device_unavailable(d);
  BOOST_TEST(!why.empty());
  check_reason(d.str() + ": " + why, d);
  // A loaded plugin that sees no GPU says why, in the runtime's words
  // (without a driver: "CUDA driver version is insufficient ...").
  if (cuda::find_plugin() != nullptr && cuda::device_count() == 0)
    BOOST_TEST(contains(why, "usable CUDA devices (cudaGetDeviceCount: "), why);
}

BOOST_AUTO_TEST_CASE(a_tensor_on_a_missing_gpu_is_refused) {
  const Device d = missing_gpu();
  Tensor x = Tensor::ones({3});
  for (int attempt = 0; attempt < 2; ++attempt) { // the second finds the same state
    try {
      x.to(d);
      BOOST_ERROR("moving a tensor to " << d.str() << " succeeded");
    } catch (const std::exception& e) { // runtime_error or invalid_argument
      check_reason(e.what(), d);
    }
  }
  BOOST_CHECK_THROW(Tensor::zeros({2}, DType::f32, d), std::exception);
}

BOOST_AUTO_TEST_CASE(an_engine_on_a_missing_gpu_is_refused_then_cpu_and_sim_work) {
  const Device d = missing_gpu();
  try {
    Engine engine(EngineConfig{{d}});
    BOOST_ERROR("an engine on " << d.str() << " was created");
  } catch (const std::invalid_argument& e) {
    check_reason(e.what(), d);
    BOOST_TEST(contains(e.what(), "cannot be served"), e.what());
  }
  Tensor w = Tensor::ones({2}).set_requires_grad(true);
  sum(w * w).backward();
  BOOST_TEST(w.grad().to_vector() == (std::vector<double>{2.0, 2.0}));

  Engine engine(EngineConfig{{Device::sim(0)}});
  Tensor v = Tensor::ones({2}).set_requires_grad(true);
  backward({sum(v.to(Device::sim(0))).to(Device::cpu())}, {}, engine);
  BOOST_TEST(v.grad().to_vector() == (std::vector<double>{1.0, 1.0}));
}
