#include "actorgrad/device/cuda/plugin/caching_allocator.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "actorgrad/device/cuda/plugin/cuda_backend.h"
#include "actorgrad/device/cuda/plugin/cuda_error.h"
#include "actorgrad/device/cuda/plugin/device_scope.h"

namespace actorgrad::cuda::plugin {

namespace {

constexpr std::size_t small_limit = std::size_t{1} << 20;
constexpr std::size_t small_round = 512;
constexpr std::size_t large_round = std::size_t{2} << 20;

std::size_t round_size(std::size_t n) {
  const std::size_t unit = n < small_limit ? small_round : large_round;
  return n == 0 ? small_round : (n + unit - 1) / unit * unit;
}

struct Block {
  void* ptr = nullptr;
  std::size_t size = 0;
  Stream stream;                       ///< allocated for work on it
  std::vector<Stream> uses;            ///< other streams, from record_stream
  cudaEvent_t freed = nullptr;         ///< recorded on `stream` when freed
  std::vector<cudaEvent_t> use_events; ///< recorded on `uses` when freed
};

/// The cache of one device. Every member is guarded by `mutex`.
class DeviceCache {
public:
  explicit DeviceCache(Device d) : device_(d) {}

  void* allocate(std::size_t nbytes, Stream stream) {
    const std::size_t size = round_size(nbytes);
    std::lock_guard lock(mutex_);
    DeviceScope scope(device_);
    Block b;
    if (take_cached(size, stream, b)) {
      ++stats_.reuses;
    } else {
      b.ptr = device_malloc(size);
      b.size = size;
      b.stream = stream;
    }
    stats_.bytes_in_use += b.size;
    void* p = b.ptr;
    live_.emplace(p, std::move(b));
    return p;
  }

  void free(void* p) noexcept {
    std::lock_guard lock(mutex_);
    auto it = live_.find(p);
    if (it == live_.end())
      return; // not ours: cannot happen through allocate()'s deleter
    Block b = std::move(it->second);
    live_.erase(it);
    stats_.bytes_in_use -= b.size;
    try {
      DeviceScope scope(device_);
      b.freed = record_on(b.stream);
      for (Stream u : b.uses)
        b.use_events.push_back(record_on(u));
      b.uses.clear();
      const std::size_t size = b.size;
      free_.emplace(size, std::move(b));
      stats_.bytes_cached += size;
    } catch (...) {
      (void)cudaFree(b.ptr); // synchronizes the device, so no pending work uses it
      (void)cudaGetLastError();
    }
  }

  void record_stream(void* p, Stream s) {
    if (s.device != device_)
      throw std::invalid_argument("record_stream: stream " + s.str() + " is not of " +
                                  device_.str());
    std::lock_guard lock(mutex_);
    auto it = live_.find(p);
    if (it == live_.end())
      throw std::invalid_argument("record_stream: memory not allocated on " + device_.str());
    Block& b = it->second;
    if (s != b.stream && std::find(b.uses.begin(), b.uses.end(), s) == b.uses.end())
      b.uses.push_back(s);
  }

  void empty() {
    std::lock_guard lock(mutex_);
    DeviceScope scope(device_);
    release_cached();
  }

  AllocatorStats stats() {
    std::lock_guard lock(mutex_);
    return stats_;
  }

private:
  /// Moves the best cached block for `size` bytes on `stream` into `out`.
  bool take_cached(std::size_t size, Stream stream, Block& out) {
    for (auto it = free_.lower_bound(size); it != free_.end() && it->first <= 2 * size; ++it) {
      Block& b = it->second;
      if (!completed(b.use_events))
        continue;
      if (b.stream != stream && cudaEventQuery(b.freed) != cudaSuccess) {
        (void)cudaGetLastError(); // not ready (or an error the next launch check reports)
        continue;
      }
      recycle(b.freed);
      b.freed = nullptr;
      b.stream = stream;
      stats_.bytes_cached -= b.size;
      out = std::move(b);
      free_.erase(it);
      return true;
    }
    return false;
  }

  /// Drops the completed events of `events`; true when none is left.
  bool completed(std::vector<cudaEvent_t>& events) {
    std::erase_if(events, [&](cudaEvent_t e) {
      if (cudaEventQuery(e) != cudaSuccess) {
        (void)cudaGetLastError();
        return false;
      }
      recycle(e);
      return true;
    });
    return events.empty();
  }

  void* device_malloc(std::size_t size) {
    void* p = nullptr;
    cudaError_t err = cudaMalloc(&p, size);
    if (err == cudaErrorMemoryAllocation && !free_.empty()) {
      (void)cudaGetLastError();
      release_cached();
      err = cudaMalloc(&p, size);
    }
    if (err == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      throw std::runtime_error("CUDA out of memory on " + device_.str() + ": allocating " +
                               std::to_string(size) + " bytes with " +
                               std::to_string(stats_.bytes_in_use) + " in use and " +
                               std::to_string(stats_.bytes_cached) + " cached");
    }
    check(err, "cudaMalloc", device_);
    ++stats_.device_allocations;
    return p;
  }

  /// Waits for the events of every free block and cudaFrees it.
  void release_cached() {
    for (auto& [size, b] : free_) {
      for (cudaEvent_t e : b.use_events)
        check(cudaEventSynchronize(e), "cudaEventSynchronize", device_);
      check(cudaEventSynchronize(b.freed), "cudaEventSynchronize", device_);
      for (cudaEvent_t e : b.use_events)
        recycle(e);
      recycle(b.freed);
      check(cudaFree(b.ptr), "cudaFree", device_);
      stats_.bytes_cached -= size;
    }
    free_.clear();
  }

  /// An event recorded now on `s` (from the spare ones when there are).
  cudaEvent_t record_on(Stream s) {
    cudaEvent_t e = nullptr;
    if (spare_events_.empty()) {
      check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags",
            device_);
    } else {
      e = spare_events_.back();
      spare_events_.pop_back();
    }
    const cudaError_t err = cudaEventRecord(e, native_stream(s));
    if (err != cudaSuccess)
      recycle(e);
    check(err, "cudaEventRecord", device_);
    return e;
  }

  void recycle(cudaEvent_t e) { spare_events_.push_back(e); }

  Device device_;
  std::mutex mutex_;
  std::multimap<std::size_t, Block> free_; ///< by size
  std::unordered_map<void*, Block> live_;  ///< handed out, by address
  std::vector<cudaEvent_t> spare_events_;
  AllocatorStats stats_;
};

class CachingAllocator {
public:
  CachingAllocator() {
    for (int i = 0; i < device_count(); ++i)
      caches_.push_back(std::make_unique<DeviceCache>(Device::cuda(i)));
  }

  /// The cache of `d`; throws std::invalid_argument naming `what` and `d`
  /// when `d` is not a visible CUDA device.
  DeviceCache& of(Device d, const char* what) {
    if (d.type != DeviceType::cuda || d.index < 0 || d.index >= static_cast<int>(caches_.size()))
      throw std::invalid_argument(std::string(what) + ": " + d.str() +
                                  " is not a visible CUDA device (" +
                                  std::to_string(caches_.size()) + " found)");
    return *caches_[d.index];
  }

  std::vector<std::unique_ptr<DeviceCache>>& caches() { return caches_; }

private:
  std::vector<std::unique_ptr<DeviceCache>> caches_;
};

CachingAllocator& allocator() {
  // Leaked on purpose: tensors held by statics are freed during static
  // destruction and must still find their cache.
  static auto* a = new CachingAllocator;
  return *a;
}

} // namespace

std::shared_ptr<void> allocate(std::size_t nbytes, Stream s) {
  DeviceCache& cache = allocator().of(s.device, "cuda::allocate");
  void* p = cache.allocate(nbytes, s);
  return {p, [&cache](void* q) { cache.free(q); }};
}

void record_stream(const std::shared_ptr<void>& data, Stream s) {
  allocator().of(s.device, "cuda::record_stream").record_stream(data.get(), s);
}

void empty_cache() {
  for (auto& cache : allocator().caches())
    cache->empty();
}

AllocatorStats allocator_stats(Device d) {
  return allocator().of(d, "cuda::allocator_stats").stats();
}

} // namespace actorgrad::cuda::plugin
