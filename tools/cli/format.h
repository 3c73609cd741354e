#pragma once
/// @file format.h
/// printf-style formatting into a std::string.

#include <string>

namespace actorgrad::cli {

/// printf into a std::string.
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

} // namespace actorgrad::cli
