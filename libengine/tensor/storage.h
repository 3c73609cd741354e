#pragma once
/// @file storage.h
/// A block of element memory on one device.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "actorgrad/device/device.h"
#include "actorgrad/device/sim/race_detector.h"
#include "actorgrad/libengine/tensor/pending_reads.h"

namespace actorgrad {

/// Raw memory of one or more tensors (views share it).
struct Storage {
  std::shared_ptr<void> data;
  std::size_t nbytes = 0;
  Device device;
  /// What the race detector knows of this buffer (sim devices only).
  sim::BufferState sim_state;
  /// Reads enqueued on streams, for in-place writes to follow (Note [Pending reads]).
  PendingReads reads;

  /// Allocates `nbytes` on `device` (host memory for cpu and sim).
  static std::shared_ptr<Storage> allocate(std::size_t nbytes, Device device);
};

/// Counts in-place modifications; shared by a tensor, its views and its
/// detached aliases so SavedVariable can tell it was modified after saving.
struct VersionCounter {
  std::atomic<std::uint32_t> version{0};
};

} // namespace actorgrad
