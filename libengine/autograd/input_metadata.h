#pragma once
/// @file input_metadata.h
/// What a node expects of the gradient arriving on one of its inputs.

#include <optional>
#include <string>

#include "actorgrad/device/stream.h"
#include "actorgrad/libengine/tensor/dtype.h"
#include "actorgrad/libengine/tensor/shape.h"

namespace actorgrad {

class Tensor;

/// Shape, dtype and device of the forward output whose gradient a node input
/// receives, recorded at forward time and checked by validate_outputs.
struct InputMetadata {
  Shape shape;
  DType dtype = DType::f64;
  Device device;
  /// The current stream of `device` when the forward op ran (devices with
  /// streams only): the node's backward runs there.
  std::optional<Stream> stream;
  /// False for an input whose forward output was undefined.
  bool defined = false;

  InputMetadata() = default;
  explicit InputMetadata(const Tensor& t);
  /// `float64[2, 3] on sim:0`.
  std::string describe() const;
};

} // namespace actorgrad
