#include "actorgrad/device/sim/sim_stream.h"

namespace actorgrad::sim::detail {

namespace {
thread_local bool stream_thread = false;
} // namespace

bool on_stream_thread() { return stream_thread; }

SimStream::SimStream(Stream id, int slot) : id(id), slot(slot), thread_([this] { run(); }) {}

SimStream::~SimStream() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

std::uint64_t SimStream::enqueue(std::function<void()> work) {
  std::uint64_t point;
  {
    std::lock_guard lock(mutex_);
    const auto delay = max_delay_us_ == 0 ? 0 : rng_() % (max_delay_us_ + 1ULL);
    queue_.push_back({std::move(work), std::chrono::microseconds(delay)});
    point = ++enqueued_;
  }
  wake_.notify_one();
  return point;
}

std::uint64_t SimStream::enqueued() const {
  std::lock_guard lock(mutex_);
  return enqueued_;
}

void SimStream::wait_for(std::uint64_t point) const {
  for (auto done = completed(); done < point; done = completed())
    completed_.wait(done, std::memory_order_acquire);
}

void SimStream::synchronize() {
  wait_for(enqueued());
  std::exception_ptr e;
  {
    std::lock_guard lock(mutex_);
    std::swap(e, error_);
  }
  if (e)
    std::rethrow_exception(e);
}

void SimStream::reseed(std::uint64_t seed, std::uint32_t max_delay_us) {
  std::lock_guard lock(mutex_);
  rng_.seed(seed ^ (std::hash<Stream>{}(id)*0x9E3779B97F4A7C15ULL));
  max_delay_us_ = max_delay_us;
}

void SimStream::run() {
  stream_thread = true;
  for (;;) {
    Item item;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty())
        return;
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    if (item.delay.count() > 0)
      std::this_thread::sleep_for(item.delay);
    try {
      item.work();
    } catch (...) {
      std::lock_guard lock(mutex_);
      if (!error_)
        error_ = std::current_exception();
    }
    item.work = nullptr; // release captured tensors before the point completes
    completed_.fetch_add(1, std::memory_order_acq_rel);
    completed_.notify_all();
  }
}

} // namespace actorgrad::sim::detail
