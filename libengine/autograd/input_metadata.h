#pragma once
/// @file input_metadata.h
/// What a node expects of the gradient arriving on one of its inputs.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include <boost/container/small_vector.hpp>

#include "actorgrad/device/stream.h"
#include "actorgrad/libengine/tensor/dtype.h"
#include "actorgrad/libengine/tensor/shape.h"

namespace actorgrad {

class Tensor;

/// Shape, dtype and device of the forward output whose gradient a node input
/// receives, recorded at forward time and checked by validate_outputs.
struct InputMetadata {
  /// The shape, inside the metadata up to 5 dimensions (as PyTorch's
  /// SymDimVector): validate_outputs reads it for every gradient, and in a
  /// block of its own it was a cache miss a node on graphs that outgrow the
  /// cache (Note [Edges inside the node] in node.h).
  boost::container::small_vector<std::int64_t, 5> shape;
  DType dtype = DType::f64;
  Device device;
  /// The current stream of `device` when the forward op ran (devices with
  /// streams only): the node's backward runs there.
  std::optional<Stream> stream;
  /// False for an input whose forward output was undefined.
  bool defined = false;

  InputMetadata() = default;
  explicit InputMetadata(const Tensor& t);
  /// Whether `s` is this shape.
  bool has_shape(std::span<const std::int64_t> s) const {
    return std::equal(shape.begin(), shape.end(), s.begin(), s.end());
  }
  /// The shape as a tensor shape.
  Shape sizes() const { return {shape.begin(), shape.end()}; }
  /// `float64[2, 3] on sim:0`.
  std::string describe() const;
};

} // namespace actorgrad
