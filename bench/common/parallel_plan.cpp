#include "bench/common/parallel_plan.h"

#include <map>
#include <stdexcept>
#include <string>

#include "actorgrad/libengine/autograd/grad_mode.h"

namespace actorgrad::bench {

namespace {

Device device_of(const Node& fn) { return fn.stream() ? fn.stream()->device : Device::cpu(); }

} // namespace

ParallelPlan::ParallelPlan(const Graph& g)
  : order_(plan_ready_order(g.roots.at(0).function.get())), graph_(&g) {
  const std::size_t n = order_.size();
  buffers_.resize(n);
  in_degree_.assign(n, 0);
  pending_ = std::make_unique<std::atomic<int>[]>(n);
  std::map<Device, std::size_t> lane_of{{Device::cpu(), 0}};
  lanes_.emplace_back();
  std::vector<std::size_t> step_lane(n);
  for (std::size_t i = 0; i < n; ++i) {
    auto [it, fresh] = lane_of.try_emplace(device_of(*order_[i].fn), lanes_.size());
    if (fresh)
      lanes_.emplace_back();
    step_lane[i] = it->second;
    lanes_[it->second].push_back(static_cast<std::int32_t>(i));
  }
  // (step, input) -> the lane that feeds it; two lanes would race in add().
  std::map<std::pair<std::int32_t, std::uint32_t>, std::size_t> feeder;
  for (std::size_t i = 0; i < n; ++i)
    for (auto [step, input] : order_[i].targets) {
      if (step < 0)
        continue;
      ++in_degree_[step];
      auto [it, fresh] = feeder.try_emplace({step, input}, step_lane[i]);
      if (!fresh && it->second != step_lane[i])
        throw std::invalid_argument("ParallelPlan: input " + std::to_string(input) + " of " +
                                    order_[step].fn->name() + " is fed from two devices");
    }
  for (std::size_t lane = 1; lane < lanes_.size(); ++lane)
    threads_.emplace_back([this, lane] { lane_thread(lane); });
}

ParallelPlan::~ParallelPlan() {
  generation_.store(-1, std::memory_order_release);
  generation_.notify_all();
  for (auto& t : threads_)
    t.join();
}

void ParallelPlan::run() {
  start_pass(order_, buffers_, *graph_);
  for (std::size_t i = 0; i < order_.size(); ++i)
    pending_[i].store(in_degree_[i], std::memory_order_relaxed);
  done_.store(0, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release); // publishes the resets above
  generation_.notify_all();
  run_lane(lanes_[0]);
  const int devices = static_cast<int>(threads_.size());
  for (int d = done_.load(std::memory_order_acquire); d != devices;
       d = done_.load(std::memory_order_acquire))
    done_.wait(d, std::memory_order_acquire);
}

void ParallelPlan::lane_thread(std::size_t lane) {
  std::int64_t seen = 0;
  for (;;) {
    generation_.wait(seen, std::memory_order_acquire);
    seen = generation_.load(std::memory_order_acquire);
    if (seen < 0)
      return;
    run_lane(lanes_[lane]);
    done_.fetch_add(1, std::memory_order_acq_rel);
    done_.notify_one();
  }
}

void ParallelPlan::run_lane(const std::vector<std::int32_t>& lane) {
  NoGradGuard no_grad;
  for (std::int32_t i : lane) {
    for (int p = pending_[i].load(std::memory_order_acquire); p != 0;
         p = pending_[i].load(std::memory_order_acquire))
      pending_[i].wait(p, std::memory_order_acquire);
    run_step(order_, buffers_, static_cast<std::size_t>(i), [this](std::int32_t step) {
      if (pending_[step].fetch_sub(1, std::memory_order_acq_rel) == 1)
        pending_[step].notify_one();
    });
  }
}

} // namespace actorgrad::bench
