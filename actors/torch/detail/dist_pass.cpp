#include "actorgrad/actors/torch/detail/dist_pass.h"

// NOT-SCHEDULING-PATH: the one mutex here guards the table of the passes
// listed, by context, at the RPC boundary (Note [Distributed autograd on
// actors] in dist_engine.cpp): it is held for a table update or look-up by
// caller and RPC agent threads, never by an actor of the engine, nor while
// one waits or dispatches. What a pass's coordinator shares with arriving
// gradients is atomic (Pass).

#include <c10/util/Exception.h>

#include <mutex>
#include <unordered_map>
#include <utility>

#include "actorgrad/actors/engine.h"
#include "actorgrad/actors/torch/detail/bridge_engine.h"

namespace actorgrad::torch::detail {

namespace {

std::mutex passes_mutex;
std::unordered_map<std::int64_t, std::shared_ptr<Pass>> passes;

} // namespace

Pass::~Pass() {
  for (Arrival* a = arrivals_.exchange(nullptr); a != nullptr;)
    delete std::exchange(a, a->next);
}

void Pass::set_task(std::shared_ptr<TorchGraphTask> task) {
  task_ = std::move(task);
  task_->on_coordinated = [this] {
    coordinated_.store(true);
    try {
      hand_over();
    } catch (...) {
      task_->set_error(std::current_exception());
    }
  };
}

void Pass::hand_over() {
  for (Arrival* a = arrivals_.exchange(nullptr); a != nullptr;) {
    std::unique_ptr<Arrival> taken(std::exchange(a, a->next));
    bridge_.engine().add_root(*task_, task_->later_root(std::move(taken->send)));
  }
}

bool Pass::arrive(std::shared_ptr<::torch::autograd::Node> send) {
  auto a = std::make_unique<Arrival>(Arrival{std::move(send), nullptr});
  {
    // A gradient that read "not on stock" and queued itself after
    // hand_to_stock took the queue would wait for a task that never runs.
    std::lock_guard<std::mutex> lock(passes_mutex);
    if (on_stock_)
      return false;
    a->next = arrivals_.load();
    while (!arrivals_.compare_exchange_weak(a->next, a.get())) {
    }
    a.release(); // the stack owns it
  }
  if (coordinated_.load())
    hand_over();
  return true;
}

void Pass::set_on_stock() {
  std::lock_guard<std::mutex> lock(passes_mutex);
  on_stock_ = true;
}

std::vector<std::shared_ptr<::torch::autograd::Node>> Pass::take_arrivals() {
  std::vector<std::shared_ptr<::torch::autograd::Node>> taken;
  for (Arrival* a = arrivals_.exchange(nullptr); a != nullptr;) {
    std::unique_ptr<Arrival> one(std::exchange(a, a->next));
    taken.push_back(std::move(one->send));
  }
  return taken;
}

void Pass::fail(std::exception_ptr error) {
  if (ended_.load())
    return;
  if (coordinated_.load())
    bridge_.engine().fail(*task_, std::move(error));
  else
    task_->set_error(std::move(error));
}

std::shared_ptr<Pass> list_pass(std::int64_t context_id, std::shared_ptr<Pass>& running) {
  std::lock_guard<std::mutex> lock(passes_mutex);
  auto& slot = passes[context_id];
  if (slot) {
    running = slot;
    return nullptr;
  }
  BridgeEngine* bridge = installed_bridge_engine();
  if (!bridge) {
    passes.erase(context_id);
    TORCH_CHECK(false, "actorgrad was uninstalled while a distributed backward pass started");
  }
  slot = std::make_shared<Pass>(*bridge);
  counters().distributed_running.fetch_add(1, std::memory_order_relaxed);
  return slot;
}

void end_pass(std::int64_t context_id, const std::shared_ptr<Pass>& pass) {
  pass->mark_ended();
  std::lock_guard<std::mutex> lock(passes_mutex);
  if (auto it = passes.find(context_id); it != passes.end() && it->second == pass) {
    passes.erase(it);
    counters().distributed_running.fetch_sub(1, std::memory_order_relaxed);
  }
}

} // namespace actorgrad::torch::detail
