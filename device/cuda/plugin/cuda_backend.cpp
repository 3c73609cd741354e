#include "actorgrad/device/cuda/plugin/cuda_backend.h"

#include <array>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "actorgrad/device/cuda/plugin/cuda_error.h"
#include "actorgrad/device/cuda/plugin/device_scope.h"
#include "actorgrad/device/cuda/plugin/device_work_timer.h"

namespace actorgrad::cuda::plugin {

namespace {

constexpr std::uint32_t pool = 4;

struct CudaEvent final : EventState {
  cudaEvent_t event = nullptr;
  Device device;
  /// Where it was recorded, and its point there among the observed items
  /// (Note [Device work timing on CUDA]; 0 when recorded unobserved).
  Stream stream;
  std::uint64_t point = 0;

  ~CudaEvent() override {
    if (event != nullptr)
      (void)cudaEventDestroy(event); // fails only once the runtime is unloading
  }
};

/// The pool streams of one device, created together on first use.
struct StreamPool {
  std::once_flag created;
  std::array<cudaStream_t, pool> streams{};
};

class CudaBackend final : public StreamBackend {
public:
  CudaBackend() {
    for (int i = 0; i < device_count(); ++i)
      pools_.push_back(std::make_unique<StreamPool>());
  }

  std::uint32_t pool_size() const override { return pool; }

  void set_device(Device d) override { check(cudaSetDevice(d.index), "cudaSetDevice", d); }

  void synchronize(Stream s) override {
    const auto native = native_of(s);
    DeviceScope scope(s.device);
    check(cudaStreamSynchronize(native), "cudaStreamSynchronize", s.device);
  }

  bool query(Stream s) override {
    const auto native = native_of(s);
    DeviceScope scope(s.device);
    return ready(cudaStreamQuery(native), "cudaStreamQuery", s.device);
  }

  std::shared_ptr<const EventState> record(Stream s) override {
    const auto native = native_of(s);
    DeviceScope scope(s.device);
    auto e = std::make_shared<CudaEvent>();
    e->device = s.device;
    check(cudaEventCreateWithFlags(&e->event, cudaEventDisableTiming), "cudaEventCreateWithFlags",
          s.device);
    check(cudaEventRecord(e->event, native), "cudaEventRecord", s.device);
    e->stream = s;
    if (LaunchObserver* o = current_launch_observer()) {
      e->point = observed_items(s);
      o->launched({DeviceWork::record, "record", s, s, e->point});
    }
    return e;
  }

  void block(Stream s, const EventState& state) override {
    const auto& e = static_cast<const CudaEvent&>(state);
    const auto native = native_of(s);
    DeviceScope scope(s.device);
    observed({DeviceWork::wait, "wait", s, e.stream, e.point}, native, [&] {
      check(cudaStreamWaitEvent(native, e.event, 0), "cudaStreamWaitEvent", s.device);
    });
  }

  bool query(const EventState& state) override {
    const auto& e = static_cast<const CudaEvent&>(state);
    return ready(cudaEventQuery(e.event), "cudaEventQuery", e.device);
  }

  void synchronize(const EventState& state) override {
    const auto& e = static_cast<const CudaEvent&>(state);
    check(cudaEventSynchronize(e.event), "cudaEventSynchronize", e.device);
  }

  cudaStream_t native_of(Stream s) {
    if (s.device.type != DeviceType::cuda || s.device.index < 0 ||
        s.device.index >= static_cast<int>(pools_.size()))
      throw std::invalid_argument("no such CUDA stream: " + s.str() + " (" +
                                  std::to_string(pools_.size()) + " CUDA devices)");
    if (s.id > pool)
      throw std::invalid_argument("no such CUDA stream: " + s.str() + " (pool of " +
                                  std::to_string(pool) + ")");
    if (s.id == 0)
      return nullptr;
    StreamPool& p = *pools_[s.device.index];
    std::call_once(p.created, [&] {
      DeviceScope scope(s.device);
      for (auto& native : p.streams)
        check(cudaStreamCreateWithFlags(&native, cudaStreamNonBlocking),
              "cudaStreamCreateWithFlags", s.device);
    });
    return p.streams[s.id - 1];
  }

private:
  /// cudaSuccess: true; cudaErrorNotReady: false; anything else throws.
  static bool ready(cudaError_t err, const char* call, Device d) {
    if (err == cudaErrorNotReady) {
      (void)cudaGetLastError();
      return false;
    }
    check(err, call, d);
    return true;
  }

  std::vector<std::unique_ptr<StreamPool>> pools_;
};

CudaBackend& cuda_backend() {
  // Leaked on purpose: tensors freed during static destruction still record
  // events through it (see caching_allocator.cpp).
  static auto* b = new CudaBackend;
  return *b;
}

/// What cudaGetDeviceCount said, asked once.
struct DeviceCount {
  int n = 0;
  std::string why_none; ///< the runtime's error when it found none
};

const DeviceCount& counted() {
  static const DeviceCount count = [] {
    DeviceCount c;
    if (const cudaError_t err = cudaGetDeviceCount(&c.n); err != cudaSuccess) {
      c.n = 0;
      c.why_none = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(err);
      (void)cudaGetLastError();
    }
    return c;
  }();
  return count;
}

} // namespace

int device_count() { return counted().n; }

const char* no_device_reason() { return counted().why_none.c_str(); }

StreamBackend& backend() { return cuda_backend(); }

cudaStream_t native_stream(Stream s) { return cuda_backend().native_of(s); }

} // namespace actorgrad::cuda::plugin
