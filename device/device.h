#pragma once
/// @file device.h
/// Where a tensor lives and where a node runs.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace actorgrad {

/// The kinds of device the engine knows.
enum class DeviceType : std::uint8_t {
  cpu,  ///< host memory, run by the calling thread
  sim,  ///< simulated accelerator: host memory, its own worker actor
  cuda, ///< an NVIDIA GPU (built when the CUDA toolkit is found)
};

/// A device: a type and an index (`cpu`, `sim:1`, `cuda:0`).
struct Device {
  DeviceType type = DeviceType::cpu;
  /// Index among devices of `type`; always 0 for the CPU.
  std::int16_t index = 0;

  constexpr Device() = default;
  constexpr Device(DeviceType t, std::int16_t i) : type(t), index(i) {}

  /// The host.
  static constexpr Device cpu() { return {}; }
  /// Simulated accelerator number `i`.
  static constexpr Device sim(int i) { return {DeviceType::sim, static_cast<std::int16_t>(i)}; }
  /// CUDA device number `i`.
  static constexpr Device cuda(int i) { return {DeviceType::cuda, static_cast<std::int16_t>(i)}; }

  /// Parses `cpu`, `sim:N` or `cuda:N`; throws std::invalid_argument naming the text.
  static Device parse(std::string_view text);

  constexpr bool is_cpu() const { return type == DeviceType::cpu; }

  /// `cpu`, `sim:N` or `cuda:N`.
  std::string str() const;

  friend constexpr bool operator==(Device a, Device b) {
    return a.type == b.type && a.index == b.index;
  }
  friend constexpr bool operator!=(Device a, Device b) { return !(a == b); }
  friend constexpr bool operator<(Device a, Device b) {
    return a.type != b.type ? a.type < b.type : a.index < b.index;
  }
};

} // namespace actorgrad

template <>
struct std::hash<actorgrad::Device> {
  std::size_t operator()(actorgrad::Device d) const noexcept {
    return (static_cast<std::size_t>(d.type) << 16) ^ static_cast<std::uint16_t>(d.index);
  }
};
