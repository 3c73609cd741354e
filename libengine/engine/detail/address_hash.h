#pragma once
/// @file address_hash.h
/// Fibonacci hashing of an address, for the tables the engine keys by node.
/// Internal (libengine/engine/detail/, not installed).

#include <cstdint>

namespace actorgrad::detail {

/// The top `64 - shift` bits of `key`'s address times 2^64 / phi: a slot
/// of a table of 2^(64 - shift) (0 < shift < 64). An address's low bits,
/// alignment zeros, spoil no slot: the product's top bits mix all of them.
inline std::uint64_t address_hash(const void* key, int shift) {
  return (reinterpret_cast<std::uintptr_t>(key) * 0x9E3779B97F4A7C15ull) >> shift;
}

} // namespace actorgrad::detail
