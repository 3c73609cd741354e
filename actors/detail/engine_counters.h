#pragma once
/// @file engine_counters.h
/// The counters behind Engine::stats. Internal.

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "actorgrad/actors/engine_stats.h"

namespace actorgrad::detail {

/// What the actors of one engine count as they run. Relaxed atomics:
/// counters only, nothing is ordered by them; each says who writes it, and
/// Engine::stats (any thread) reads them all.
struct EngineCounters {
  /// Most reentrant frames seen nested on one stack (any Runner,
  /// note_reentrant_frames).
  std::atomic<int> max_reentrant_frames{0};
  /// Reentrant calls run on a fresh stack (any Runner).
  std::atomic<std::int64_t> fresh_stacks{0};
  /// Async coordinators alive now, and the most alive at once (written by
  /// the pool).
  std::atomic<std::size_t> async_coordinators{0};
  std::atomic<std::size_t> peak_async_coordinators{0};
  /// Async calls that waited in the pool for a coordinator (written by the pool).
  std::atomic<std::int64_t> async_calls_waited{0};
  /// Async calls made inside a node that ran on the calling thread (Note
  /// [Async calls made inside a node] in async_call.h; written by any caller).
  std::atomic<std::int64_t> async_calls_run_inline{0};
  /// Ready CPU tasks one lane handed to another (share_ready_work; any lane).
  std::atomic<std::int64_t> cpu_tasks_shared{0};
  /// Nodes that ran on another lane than last time (Runner::run; any lane).
  std::atomic<std::int64_t> cpu_nodes_moved{0};

  /// Raises max_reentrant_frames to `frames`.
  void note_reentrant_frames(int frames) {
    int seen = max_reentrant_frames.load(std::memory_order_relaxed);
    while (frames > seen &&
           !max_reentrant_frames.compare_exchange_weak(seen, frames, std::memory_order_relaxed)) {
    }
  }

  /// Every counter, read now (not as one snapshot: each on its own).
  EngineStats read() const {
    return {max_reentrant_frames.load(std::memory_order_relaxed),
            fresh_stacks.load(std::memory_order_relaxed),
            async_coordinators.load(std::memory_order_relaxed),
            peak_async_coordinators.load(std::memory_order_relaxed),
            async_calls_waited.load(std::memory_order_relaxed),
            async_calls_run_inline.load(std::memory_order_relaxed),
            cpu_tasks_shared.load(std::memory_order_relaxed),
            cpu_nodes_moved.load(std::memory_order_relaxed)};
  }
};

} // namespace actorgrad::detail
