#include "tools/cli/spirals.h"

#include <cmath>
#include <numbers>
#include <random>

namespace actorgrad::cli {

SpiralData make_spirals(std::int64_t points_per_class, double noise, std::uint64_t seed) {
  SpiralData d;
  d.x.reserve(static_cast<std::size_t>(4 * points_per_class));
  d.y.reserve(static_cast<std::size_t>(2 * points_per_class));
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> jitter(0.0, noise);
  // Outer radius 4: on the unit scale the first tanh layer starts nearly
  // linear and training depends much more on the initial weights.
  constexpr double kRadius = 4.0;
  constexpr double kStart = 0.25;
  constexpr double kTurns = 1.75 * 2.0 * std::numbers::pi;
  const double denom = points_per_class > 1 ? double(points_per_class - 1) : 1.0;
  for (int cls = 0; cls < 2; ++cls) {
    const double sign = cls == 0 ? 1.0 : -1.0;
    for (std::int64_t i = 0; i < points_per_class; ++i) {
      const double t = kStart + kTurns * double(i) / denom;
      const double r = t / (kStart + kTurns);
      d.x.push_back(kRadius * (sign * r * std::cos(t) + jitter(rng)));
      d.x.push_back(kRadius * (sign * r * std::sin(t) + jitter(rng)));
      d.y.push_back(cls);
    }
  }
  return d;
}

} // namespace actorgrad::cli
