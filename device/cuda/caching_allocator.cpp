#include "actorgrad/device/cuda/caching_allocator.h"

#include "actorgrad/device/cuda/plugin_loader.h"

namespace actorgrad::cuda {

std::shared_ptr<void> allocate(std::size_t nbytes, Device d) {
  return plugin_for(d).allocate(nbytes, current_stream(d));
}

void record_stream(const std::shared_ptr<void>& data, Stream s) {
  plugin_for(s.device).record_stream(data, s);
}

void empty_cache() {
  if (const Plugin* p = find_plugin())
    p->empty_cache();
}

AllocatorStats allocator_stats(Device d) { return plugin_for(d).allocator_stats(d); }

} // namespace actorgrad::cuda
