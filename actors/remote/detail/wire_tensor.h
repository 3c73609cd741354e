#pragma once
/// @file wire_tensor.h
/// A tensor as it crosses processes: dtype, shape and device, then the
/// elements as one contiguous block of raw bytes.
/// Internal (actors/remote/detail/, not installed).

#include <cstdint>
#include <string>
#include <type_traits>

#include <caf/deserializer.hpp>
#include <caf/error.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/serializer.hpp>

#include "actorgrad/libengine/tensor/tensor.h"

namespace actorgrad::remote::detail {

/// A tensor carried by a remote message. An undefined tensor travels as a
/// flag only.
///
/// Note [Tensors on the wire]
/// The serializer writes a small header (defined flag, dtype, device type
/// and index, rank, sizes) and then the elements with one
/// `begin_sequence(n) / apply_raw(n, data)`: a single memcpy of the
/// contiguous host buffer into CAF's output buffer, as CAF 0.17 does for
/// `std::vector<char>` (data_processor.hpp, "optimized saving for
/// contiguous byte sequences"). The deserializer allocates the tensor first
/// and reads the bytes straight into its storage: one copy on each side,
/// no per-element work. A tensor that is not on the CPU is copied to the
/// host before it is written (the sender waits for its stream); the
/// receiver rebuilds it on the CPU and then moves it to the recorded
/// device when that is not the CPU. Both ends are assumed to have the same
/// byte order (little endian: x86-64 and aarch64).
struct WireTensor {
  /// The tensor (a receiver gets a fresh tensor with no autograd history).
  Tensor tensor;

  WireTensor() = default;
  /// Wraps `t` (not copied: the bytes are read when the message is written).
  explicit WireTensor(Tensor t) : tensor(std::move(t)) {}
};

/// Writes `x` (see Note [Tensors on the wire]).
caf::error save_wire_tensor(caf::serializer& sink, const WireTensor& x);
/// Reads `x` (see Note [Tensors on the wire]); a malformed header is an
/// error naming what is wrong, never a crash.
caf::error load_wire_tensor(caf::deserializer& source, WireTensor& x);
/// `float64[2, 3] on cpu` (for CAF's to_string of a message).
std::string describe(const WireTensor& x);

/// CAF serialization: raw bytes (Note [Tensors on the wire]).
inline caf::error inspect(caf::serializer& f, WireTensor& x) { return save_wire_tensor(f, x); }
/// CAF deserialization: raw bytes (Note [Tensors on the wire]).
inline caf::error inspect(caf::deserializer& f, WireTensor& x) { return load_wire_tensor(f, x); }
/// Any other inspector (to_string): the tensor's description.
template <class Inspector>
std::enable_if_t<!std::is_base_of_v<caf::serializer, Inspector> &&
                   !std::is_base_of_v<caf::deserializer, Inspector>,
                 typename Inspector::result_type>
inspect(Inspector& f, WireTensor& x) {
  std::string text = describe(x);
  return f(caf::meta::type_name("tensor"), text);
}

} // namespace actorgrad::remote::detail
