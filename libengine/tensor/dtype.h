#pragma once
/// @file dtype.h
/// Element types of a tensor.

#include <cstddef>
#include <cstdint>
#include <string>

namespace actorgrad {

/// Element type. Kernels exist for both; autograd checks keep them apart.
enum class DType : std::uint8_t { f32, f64 };

/// Bytes per element.
constexpr std::size_t element_size(DType t) { return t == DType::f32 ? 4 : 8; }

/// `float32` or `float64`.
inline std::string dtype_name(DType t) { return t == DType::f32 ? "float32" : "float64"; }

/// Calls `f(T{})` with T the C++ type of `t` (float or double).
template <class F>
decltype(auto) dispatch_dtype(DType t, F&& f) {
  if (t == DType::f32)
    return f(float{});
  return f(double{});
}

} // namespace actorgrad
