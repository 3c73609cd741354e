#pragma once
/// @file race_detector.h
/// Finds accesses to sim memory that no event or synchronize orders after the last write.

#include <cstdint>
#include <string>
#include <vector>

namespace actorgrad::sim {

/// What the detector remembers of one buffer (one per sim Storage): the
/// stream that last wrote it and how far that stream had got. Guarded by
/// the detector's lock.
struct BufferState {
  int writer = -1; ///< timeline slot of the last writer (0: the host); -1: never written
  std::uint64_t point = 0;
  std::string op;
};

/// One buffer a kernel or the host touches, as the detector sees it.
struct Access {
  BufferState* buffer;
  bool write;
  /// The tensor, for the report (`input 1 of matmul: float32[4, 8] on sim:0`).
  std::string what;
};

/// Reports found since the last clear_race_reports(), oldest first. Each
/// names the tensor, the two streams and the two ops.
std::vector<std::string> race_reports();
void clear_race_reports();

} // namespace actorgrad::sim
