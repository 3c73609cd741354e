#include "actorgrad/device/stream.h"

#include <array>
#include <atomic>
#include <stdexcept>

#include "actorgrad/device/cuda/plugin_loader.h"
#include "actorgrad/device/event.h"
#include "actorgrad/device/guards.h"
#include "actorgrad/device/sim/sim_backend.h"
#include "actorgrad/device/stream_backend.h"

namespace actorgrad {

namespace {

StreamBackend& backend_of(Device d, const char* what) {
  StreamBackend* b = stream_backend(d.type);
  if (b == nullptr)
    throw std::invalid_argument(std::string(what) + ": " + d.str() + " has no streams");
  return *b;
}

// This thread's current stream per device: few devices, so a flat list.
// Constant-initialized and trivially destructible, so an access is a plain
// thread-local load, with no init check (a std::vector had one).
struct CurrentStreams {
  static constexpr std::size_t capacity = 64;
  std::array<Stream, capacity> streams{};
  std::size_t size = 0;
};
constinit thread_local CurrentStreams current_streams;

std::array<std::atomic<std::uint32_t>, 64> pool_cursor{};

} // namespace

StreamBackend* stream_backend(DeviceType t) {
  switch (t) {
  case DeviceType::sim: return &sim::backend();
  case DeviceType::cuda: { // loads the plugin (Note [CUDA only when used])
    const cuda::Plugin* p = cuda::find_plugin();
    return p != nullptr ? p->backend() : nullptr;
  }
  case DeviceType::cpu: return nullptr;
  }
  return nullptr;
}

bool has_streams(Device d) { return stream_backend(d.type) != nullptr; }

Stream stream_from_pool(Device d) {
  const auto n = backend_of(d, "stream_from_pool").pool_size();
  auto& cursor = pool_cursor[std::hash<Device>{}(d) % pool_cursor.size()];
  return {d, 1 + cursor.fetch_add(1, std::memory_order_relaxed) % n};
}

Stream current_stream(Device d) {
  for (std::size_t i = 0; i < current_streams.size; ++i)
    if (current_streams.streams[i].device == d)
      return current_streams.streams[i];
  return default_stream(d);
}

std::vector<Stream> thread_current_streams() {
  std::vector<Stream> set;
  for (std::size_t i = 0; i < current_streams.size; ++i)
    if (!current_streams.streams[i].is_default())
      set.push_back(current_streams.streams[i]);
  return set;
}

void set_current_stream(Stream s) {
  auto& c = current_streams;
  for (std::size_t i = 0; i < c.size; ++i)
    if (c.streams[i].device == s.device) {
      c.streams[i] = s;
      return;
    }
  if (c.size == CurrentStreams::capacity)
    throw std::length_error("set_current_stream(" + s.str() + "): a thread can have current " +
                            "streams on at most " + std::to_string(CurrentStreams::capacity) +
                            " devices");
  c.streams[c.size++] = s;
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

bool Event::query() const { return !state_ || stream_backend(stream_.device.type)->query(*state_); }

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

constinit thread_local std::array<Device, 3> detail::current_devices{Device::cpu(), Device::sim(0),
                                                                     Device::cuda(0)};

void DeviceGuard::set(Device d) {
  if (StreamBackend* b = stream_backend(d.type))
    b->set_device(d);
  detail::current_devices[static_cast<std::size_t>(d.type)] = d;
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
