#include "actorgrad/libengine/engine/detail/stream_sync.h"

#include <atomic>

namespace actorgrad::detail {

namespace {
std::atomic<bool> sync_enabled{true};
} // namespace

bool stream_sync_enabled() { return sync_enabled.load(std::memory_order_relaxed); }

void set_stream_sync_for_testing(bool enabled) {
  sync_enabled.store(enabled, std::memory_order_relaxed);
}

void wait_for_stream(Stream waiter, Stream producer, const Event* ready) {
  if (waiter == producer || !stream_sync_enabled())
    return;
  if (ready != nullptr && ready->stream() == producer)
    ready->block(waiter);
  else
    Event::recorded_on(producer).block(waiter);
}

} // namespace actorgrad::detail
