#pragma once
/// @file ready_queue.h
/// The ready queue of one engine actor, as a value that can move between actors. Internal.

#include "actorgrad/device/device.h"
#include "actorgrad/libengine/engine/detail/dispatch.h"
#include "actorgrad/libengine/engine/detail/ready_heap.h"

namespace actorgrad::detail {

/// The tasks one actor runs next, and which nodes are its to run: a
/// DeviceWorker's queue holds `device`'s nodes of every GraphTask; a
/// coordinator's queue (device cpu) holds the CPU nodes of the GraphTasks
/// whose `cpu_queue` is `id`.
struct ReadyQueue {
  ReadyHeap heap;
  QueueId id = new_queue_id();
  Device device;
};

} // namespace actorgrad::detail
