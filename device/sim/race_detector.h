#pragma once
/// @file race_detector.h
/// Finds accesses to sim memory that no event or synchronize orders after the accesses they
/// conflict with.

#include <cstdint>
#include <string>
#include <vector>

namespace actorgrad::sim {

/// One access the detector remembers: which timeline (0: the host), how
/// far that timeline had got with it, and the op.
struct AccessPoint {
  int slot = -1;
  std::uint64_t point = 0;
  std::string op;
};

/// What the detector remembers of one buffer (one per sim Storage): the
/// last write, and the last read of each timeline since that write (a
/// write must be ordered after those too). Guarded by the detector's lock.
struct BufferState {
  AccessPoint write; ///< slot -1: never written
  std::vector<AccessPoint> reads;
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
