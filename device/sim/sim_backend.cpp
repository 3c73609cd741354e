#include "actorgrad/device/sim/sim_backend.h"

#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "actorgrad/device/sim/race_detector_state.h"
#include "actorgrad/device/sim/sim_stream.h"

namespace actorgrad::sim {

namespace {

using detail::race_detector;
using detail::RaceDetectorState;
using detail::SimStream;

struct SimEvent final : EventState {
  SimStream* stream = nullptr; ///< null: complete (recorded while synchronous)
  std::uint64_t point = 0;
  RaceDetectorState::Clock clock;
};

/// `body`, reporting its run to `done` when there is one (Note [Stream tracks]).
std::function<void()> reporting(SimStream& st, DeviceRun done, std::function<void()> body) {
  if (!done)
    return body;
  return [&st, done = std::move(done), body = std::move(body)] {
    // Items complete in order and only this thread completes them.
    const std::uint64_t point = st.completed() + 1;
    const auto start = std::chrono::steady_clock::now();
    try {
      body();
    } catch (...) { // reported to whoever synchronizes; the run happened all the same
      done(point, start, std::chrono::steady_clock::now());
      throw;
    }
    done(point, start, std::chrono::steady_clock::now());
  };
}

bool default_async() {
  const char* v = std::getenv("ACTORGRAD_SIM_ASYNC");
  return v == nullptr || std::string(v) != "0";
}

class SimBackend final : public StreamBackend {
public:
  static constexpr std::uint32_t pool = 4;

  std::atomic<bool> async{default_async()};
  std::atomic<bool> detect{false};

  std::uint32_t pool_size() const override { return pool; }
  void set_device(Device) override {}

  SimStream& stream(Stream s) {
    std::lock_guard lock(streams_mutex_);
    auto& slot = streams_[s];
    if (!slot) {
      int timeline;
      {
        auto& d = race_detector();
        std::lock_guard detector_lock(d.mutex());
        timeline = d.add_timeline(s.str());
      }
      slot = std::make_unique<SimStream>(s, timeline);
      slot->reseed(config_.seed, config_.max_delay_us);
    }
    return *slot;
  }

  void synchronize(Stream s) override {
    if (!async)
      return;
    SimStream& st = stream(s);
    if (!detect) {
      st.synchronize();
      return;
    }
    auto& d = race_detector();
    RaceDetectorState::Clock clock;
    std::uint64_t point;
    {
      std::lock_guard lock(d.mutex());
      clock = d.clock_of(st.slot);
      point = st.enqueued();
    }
    st.wait_for(point);
    {
      std::lock_guard lock(d.mutex());
      d.join(0, clock);
    }
    st.synchronize(); // rethrows a kernel's error
  }

  bool query(Stream s) override {
    if (!async)
      return true;
    SimStream& st = stream(s);
    return st.completed() >= st.enqueued();
  }

  std::shared_ptr<const EventState> record(Stream s) override {
    auto e = std::make_shared<SimEvent>();
    if (!async)
      return e;
    e->stream = &stream(s);
    if (!detect) {
      e->point = e->stream->enqueued();
    } else {
      auto& d = race_detector();
      std::lock_guard lock(d.mutex());
      e->point = e->stream->enqueued();
      e->clock = d.clock_of(e->stream->slot);
    }
    if (LaunchObserver* o = launch_observer()) [[unlikely]]
      o->launched({DeviceWork::record, "record", s, s, e->point});
    return e;
  }

  void block(Stream s, const EventState& state) override {
    const auto& e = static_cast<const SimEvent&>(state);
    if (!async || e.stream == nullptr || e.stream->id == s)
      return;
    SimStream& st = stream(s);
    // An event whose work has run orders nothing more: no wait item (whose
    // wake-up of the stream's thread would cost every cross-device
    // gradient a context switch), as a GPU skips a wait on a completed event.
    const bool done = e.stream->completed() >= e.point;
    auto enqueue_wait = [&] {
      if (done)
        return;
      std::function<void()> wait = [src = e.stream, point = e.point] { src->wait_for(point); };
      if (LaunchObserver* o = launch_observer()) [[unlikely]]
        wait = reporting(st, o->launched({DeviceWork::wait, "wait", s, e.stream->id, e.point}),
                         std::move(wait));
      st.enqueue(std::move(wait));
    };
    if (!detect) {
      enqueue_wait();
      return;
    }
    auto& d = race_detector();
    std::lock_guard lock(d.mutex());
    d.join(st.slot, e.clock);
    enqueue_wait();
  }

  bool query(const EventState& state) override {
    const auto& e = static_cast<const SimEvent&>(state);
    return e.stream == nullptr || e.stream->completed() >= e.point;
  }

  void synchronize(const EventState& state) override {
    const auto& e = static_cast<const SimEvent&>(state);
    if (e.stream == nullptr)
      return;
    e.stream->wait_for(e.point);
    if (detect) {
      auto& d = race_detector();
      std::lock_guard lock(d.mutex());
      d.join(0, e.clock);
    }
  }

  void launch(Stream s, const char* op, DeviceWork kind, const std::vector<Access>& accesses,
              std::function<void()> kernel) {
    if (!async) {
      kernel();
      return;
    }
    SimStream& st = stream(s);
    if (LaunchObserver* o = launch_observer()) [[unlikely]]
      kernel = reporting(st, o->launched({kind, op, s, s, 0}), std::move(kernel));
    if (!detect) {
      st.enqueue(std::move(kernel));
      return;
    }
    auto& d = race_detector();
    std::lock_guard lock(d.mutex());
    d.on_launch(st.slot, op, accesses);
    st.enqueue(std::move(kernel));
  }

  void configure(const SimConfig& c) {
    std::lock_guard lock(streams_mutex_);
    for (auto& [id, st] : streams_) {
      try {
        st->synchronize();
      } catch (...) { // reported to whoever synchronizes; a new setting starts clean
      }
    }
    config_ = c;
    async = c.async;
    detect = c.async && c.detect_races;
    auto& d = race_detector();
    std::lock_guard detector_lock(d.mutex());
    for (auto& [id, st] : streams_) {
      st->reseed(c.seed, c.max_delay_us);
      d.join(0, d.clock_of(st->slot)); // everything ran: the host knows it
    }
  }

  SimConfig config() {
    std::lock_guard lock(streams_mutex_);
    SimConfig c = config_;
    c.async = async;
    return c;
  }

private:
  std::mutex streams_mutex_;
  std::unordered_map<Stream, std::unique_ptr<SimStream>> streams_;
  SimConfig config_{};
};

SimBackend& sim_backend() {
  // Leaked on purpose: its stream threads must outlive static destruction,
  // where a leaked default engine's workers may still enqueue.
  static auto* b = new SimBackend;
  return *b;
}

} // namespace

StreamBackend& backend() { return sim_backend(); }

bool is_async() { return sim_backend().async.load(std::memory_order_relaxed); }

bool detecting_races() { return sim_backend().detect.load(std::memory_order_relaxed); }

void launch(Stream s, const char* op, DeviceWork kind, const std::vector<Access>& accesses,
            std::function<void()> kernel) {
  sim_backend().launch(s, op, kind, accesses, std::move(kernel));
}

void host_access(Device d, const Access& access, const char* op) {
  if (!is_async() || on_stream_thread())
    return;
  sim_backend().synchronize(current_stream(d));
  if (detecting_races()) {
    auto& det = race_detector();
    std::lock_guard lock(det.mutex());
    det.on_host_access(access, op);
  }
}

bool on_stream_thread() { return detail::on_stream_thread(); }

void configure(const SimConfig& config) { sim_backend().configure(config); }

SimConfig config() { return sim_backend().config(); }

} // namespace actorgrad::sim
