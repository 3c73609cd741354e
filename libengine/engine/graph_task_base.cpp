#include "actorgrad/libengine/engine/graph_task_base.h"

#include <algorithm>

#include "actorgrad/libengine/autograd/grad_mode.h"
#include "actorgrad/libengine/engine/detail/current_graph_task.h"
#include "actorgrad/libengine/engine/detail/dispatch.h"
#include "actorgrad/libengine/engine/detail/final_callback.h"
#include "actorgrad/libengine/engine/errors.h"
#include "actorgrad/libengine/engine/queue_callback.h"

namespace actorgrad {

namespace {
std::atomic<std::uint64_t> next_graph_task_id{1};
std::atomic<QueueId> next_queue_id{1};
} // namespace

QueueId detail::new_queue_id() { return next_queue_id.fetch_add(1, std::memory_order_relaxed); }

GraphTaskBase::GraphTaskBase(ExecuteOptions opts, int depth)
  : id(next_graph_task_id.fetch_add(1, std::memory_order_relaxed)), options(opts),
    reentrant_depth(depth), anomaly(AnomalyMode::is_enabled()) {}

GraphTaskBase::~GraphTaskBase() {
  for (auto* cb = callbacks_.load(); cb != nullptr;) {
    auto* next = cb->next;
    delete cb;
    cb = next;
  }
}

bool GraphTaskBase::set_error(std::exception_ptr e) {
  bool expected = false;
  if (!first_error_claimed_.compare_exchange_strong(expected, true, std::memory_order_acq_rel))
    return false;
  error_ = std::move(e);
  has_error_.store(true, std::memory_order_release);
  return true;
}

void GraphTaskBase::queue_callback(std::function<void()> fn) {
  auto* cb = new detail::FinalCallback{std::move(fn), callbacks_.load(std::memory_order_relaxed)};
  while (!callbacks_.compare_exchange_weak(cb->next, cb, std::memory_order_release,
                                           std::memory_order_relaxed)) {
  }
}

void GraphTaskBase::run_final_callbacks() {
  detail::CurrentGraphTaskGuard guard(this);
  // Callbacks may queue more callbacks: take the list until it stays empty.
  while (detail::FinalCallback* head = callbacks_.exchange(nullptr, std::memory_order_acquire)) {
    std::vector<std::unique_ptr<detail::FinalCallback>> in_order;
    for (; head != nullptr; head = head->next)
      in_order.emplace_back(head);
    std::reverse(in_order.begin(), in_order.end());
    for (auto& cb : in_order)
      cb->fn();
  }
}

void queue_callback(std::function<void()> fn) {
  GraphTaskBase* task = detail::current_graph_task();
  if (!task)
    throw EngineError("queue_callback: no backward pass is running a node on this thread");
  task->queue_callback(std::move(fn));
}

} // namespace actorgrad
