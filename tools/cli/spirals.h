#pragma once
/// @file spirals.h
/// The two-spirals classification data set, generated deterministically.

#include <cstdint>
#include <vector>

namespace actorgrad::cli {

/// `2 * points_per_class` points in the plane, two interleaved spirals.
struct SpiralData {
  /// Row-major [n, 2] coordinates, roughly within [-4, 4].
  std::vector<double> x;
  /// Class (0 or 1) of each point.
  std::vector<std::int64_t> y;
  std::int64_t size() const { return static_cast<std::int64_t>(y.size()); }
};

/// Generates the spirals: class 0 winds out from the centre for 1.75 turns,
/// class 1 is its point reflection, out to radius 4; Gaussian noise of std
/// `noise` (relative to that radius) is added to every coordinate. The same
/// `seed` always gives the same points.
SpiralData make_spirals(std::int64_t points_per_class, double noise, std::uint64_t seed);

} // namespace actorgrad::cli
