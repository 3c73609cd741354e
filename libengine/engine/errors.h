#pragma once
/// @file errors.h
/// The exception type the engine reports with.

#include <stdexcept>
#include <string>

namespace actorgrad {

/// An error raised by the autograd engine or a node it ran. The message
/// names what went wrong (node, input, shape, device).
class EngineError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

} // namespace actorgrad
