#pragma once
/// @file local_dispatch.h
/// The dispatch of a one-thread executor.

#include <memory>

#include "actorgrad/libengine/engine/detail/dispatch.h"
#include "actorgrad/libengine/engine/detail/ready_heap.h"
#include "actorgrad/libengine/engine/errors.h"

namespace actorgrad::detail {

/// Owns every node, so a gradient never leaves the thread: a node whose
/// inputs are complete goes onto `heap`. Final, so that
/// BasicGraphTask::run_all_here calls it without a virtual call.
class LocalDispatch final : public Dispatch {
public:
  explicit LocalDispatch(ReadyHeap& heap) : heap_(heap) { owns_all_ = true; }
  /// Forced inline into BasicGraphTask::route, which GCC stopped inlining
  /// it into once route could also call route_spread (callgrind,
  /// bench/RESULTS.md: the 1-worker path).
  [[gnu::always_inline]] void ready(ReadyTask&& t) override { heap_.push(std::move(t)); }
  void send(const std::shared_ptr<GraphTaskBase>&, SentGrad&&) override {
    throw EngineError("internal: a one-thread executor owns every node, nothing is sent");
  }

private:
  ReadyHeap& heap_;
};

} // namespace actorgrad::detail
