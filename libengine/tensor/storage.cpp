#include "actorgrad/libengine/tensor/storage.h"

#include <cstdlib>
#include <new>

#include "actorgrad/device/cuda/caching_allocator.h"

namespace actorgrad {

namespace {
constexpr std::size_t alignment = 64;
} // namespace

std::shared_ptr<Storage> Storage::allocate(std::size_t nbytes, Device device) {
  if (device.type == DeviceType::cuda) { // loads the CUDA plugin, or throws naming `device`
    auto storage = std::make_shared<Storage>();
    storage->data = cuda::allocate(nbytes, device);
    storage->nbytes = nbytes;
    storage->device = device;
    return storage;
  }
  // aligned_alloc wants a size that is a multiple of the alignment (and non-zero).
  const auto padded = (nbytes + alignment - 1) / alignment * alignment;
  void* p = std::aligned_alloc(alignment, padded == 0 ? alignment : padded);
  if (p == nullptr)
    throw std::bad_alloc();
  auto storage = std::make_shared<Storage>();
  storage->data = std::shared_ptr<void>(p, std::free);
  storage->nbytes = nbytes;
  storage->device = device;
  return storage;
}

} // namespace actorgrad
