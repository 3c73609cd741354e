#include "device/stream.h"

#include <array>
#include <atomic>
#include <ostream>
#include <stdexcept>
#include <vector>

#include "device/event.h"
#include "device/guards.h"
#include "device/sim/sim_backend.h"
#include "device/stream_backend.h"
#ifdef ACTORGRAD_WITH_CUDA
#include "device/cuda/cuda_backend.h"
#endif

namespace actorgrad {

namespace {

StreamBackend& backend_of(Device d, const char* what) {
  StreamBackend* b = stream_backend(d.type);
  if (b == nullptr)
    throw std::invalid_argument(std::string(what) + ": " + d.str() + " has no streams");
  return *b;
}

// This thread's current stream per device; few devices, so a flat list.
thread_local std::vector<Stream> current_streams;

std::array<std::atomic<std::uint32_t>, 64> pool_cursor{};

} // namespace

StreamBackend* stream_backend(DeviceType t) {
  switch (t) {
    case DeviceType::sim:
      return &sim::backend();
    case DeviceType::cuda:
#ifdef ACTORGRAD_WITH_CUDA
      return &cuda::backend();
#else
      return nullptr;
#endif
    case DeviceType::cpu:
      return nullptr;
  }
  return nullptr;
}

std::string Stream::str() const {
  return device.str() + (is_default() ? "/default" : "/stream " + std::to_string(id));
}

std::ostream& operator<<(std::ostream& os, Stream s) { return os << s.str(); }

bool has_streams(Device d) { return stream_backend(d.type) != nullptr; }

Stream default_stream(Device d) { return {d, 0}; }

Stream stream_from_pool(Device d) {
  const auto n = backend_of(d, "stream_from_pool").pool_size();
  auto& cursor = pool_cursor[std::hash<Device>{}(d) % pool_cursor.size()];
  return {d, 1 + cursor.fetch_add(1, std::memory_order_relaxed) % n};
}

Stream current_stream(Device d) {
  for (const Stream& s : current_streams)
    if (s.device == d)
      return s;
  return default_stream(d);
}

void set_current_stream(Stream s) {
  for (Stream& c : current_streams)
    if (c.device == s.device) {
      c = s;
      return;
    }
  current_streams.push_back(s);
}

void synchronize(Stream s) {
  if (StreamBackend* b = stream_backend(s.device.type))
    b->synchronize(s);
}

bool query(Stream s) {
  StreamBackend* b = stream_backend(s.device.type);
  return b == nullptr || b->query(s);
}

// -- events -------------------------------------------------------------------

void Event::record(Stream s) {
  StreamBackend* b = stream_backend(s.device.type);
  state_ = b ? b->record(s) : nullptr;
  stream_ = s;
}

Event Event::recorded_on(Stream s) {
  Event e;
  e.record(s);
  return e;
}

void Event::block(Stream s) const {
  if (state_)
    backend_of(s.device, "Event::block").block(s, *state_);
}

bool Event::query() const {
  return !state_ || stream_backend(stream_.device.type)->query(*state_);
}

void Event::synchronize() const {
  if (state_)
    stream_backend(stream_.device.type)->synchronize(*state_);
}

std::optional<Stream> Event::stream() const {
  if (!state_)
    return std::nullopt;
  return stream_;
}

// -- guards -------------------------------------------------------------------

namespace {
thread_local std::array<Device, 3> current_devices{
  Device::cpu(), Device{DeviceType::sim, 0}, Device{DeviceType::cuda, 0}};
} // namespace

Device current_device(DeviceType t) { return current_devices[static_cast<std::size_t>(t)]; }

DeviceGuard::DeviceGuard(Device d) : previous_(current_device(d.type)) {
  if (d == previous_)
    return;
  if (StreamBackend* b = stream_backend(d.type))
    b->set_device(d);
  current_devices[static_cast<std::size_t>(d.type)] = d;
}

DeviceGuard::~DeviceGuard() {
  Device& current = current_devices[static_cast<std::size_t>(previous_.type)];
  if (current == previous_)
    return;
  if (StreamBackend* b = stream_backend(previous_.type))
    b->set_device(previous_);
  current = previous_;
}

StreamGuard::StreamGuard(Stream s) : device_(s.device), previous_(current_stream(s.device)) {
  if (s != previous_)
    set_current_stream(s);
}

StreamGuard::~StreamGuard() {
  // Restores also what code inside the scope set without a guard.
  if (current_stream(previous_.device) != previous_)
    set_current_stream(previous_);
}

} // namespace actorgrad
